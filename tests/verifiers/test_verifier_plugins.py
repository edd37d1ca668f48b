"""Graded runs turn plugin autoloading off, so the pytest plugins a task's suite needs are named in its
config (`pytest_plugins`, the task image's plugins) and loaded with -p: a submission using a plugin's
fixture earns its reward with the plugin listed, and nothing without it. Real tasks, real pytest."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

# A plugin module of A's tree (in the manifest), standing for an installed plugin such as pytest-mock.
PLUGIN_REL = "src/shopcalc_fixtures.py"
PLUGIN = "import pytest\n\n\n@pytest.fixture\ndef full_price():\n    return 10\n"
USES_FIXTURE = '''import pytest

from shopcalc.pricing import apply_discount


def test_edges(full_price):
    with pytest.raises(ValueError):
        apply_discount(full_price, 101)
    assert apply_discount(full_price, 80) == 5
    assert apply_discount(full_price, 100) == 5
'''


def _task(make_task, kit, **config):
    return make_task(USES_FIXTURE, extra_files={PLUGIN_REL: PLUGIN}, **config)


def test_a_listed_plugin_is_loaded_in_every_graded_run(make_task, kit):
    task = _task(make_task, kit, pytest_plugins=["shopcalc_fixtures"])
    details = task.score()
    assert details["reward"] == 1.0, details.get("reason")


def test_without_it_the_fixture_is_missing_and_nothing_is_earned(make_task, kit):
    task = _task(make_task, kit)
    details = task.score()
    assert details["reward"] == 0.0
    assert "full_price" in " ".join(v["output_tail"] for v in details["variants"])


def test_a_plugin_named_like_a_module_already_imported_does_not_crash_a_strict_suite(make_task, kit):
    # urllib3: pytest-socket loads as `-p socket`, a module imported long before; pytest warns that it cannot
    # rewrite it, and the repo's `filterwarnings = error` made that warning a crash of every graded run.
    strict = '[tool.pytest.ini_options]\nfilterwarnings = ["error"]\n'
    task = make_task(USES_FIXTURE, extra_files={PLUGIN_REL: PLUGIN, "pyproject.toml": strict},
                     pytest_plugins=["json", "shopcalc_fixtures"])
    details = task.score()
    assert details["reward"] == 1.0, [v["output_tail"][-300:] for v in details["variants"]]


def test_a_listed_plugin_whose_import_loads_ctypes_crashes_every_run_on_a_and_validation_says_why(make_task, kit):
    # Issue 34 (jsonpickle): the image's jaraco.vcs.fixtures plugin imports ctypes. `_ctypes` is refused in graded
    # runs (a memory primitive), so `-p` aborts pytest's start: the run on A "crashed" for every task of the repo.
    # Generation now leaves such a plugin out (discovery/native_needs.session_plugin_refusals); validation names it.
    from repo2rlenv.validate import crash_line

    ctypes_plugin = "import ctypes  # jaraco.path does this at import\n\n" + PLUGIN
    task = make_task(USES_FIXTURE, extra_files={PLUGIN_REL: ctypes_plugin}, pytest_plugins=["shopcalc_fixtures"])
    details = task.score()
    assert details["reward"] == 0.0
    assert details["reason"] == "the run on A did not finish (crashed)"
    run_a = next(v for v in details["variants"] if v["name"] == "A")
    line = crash_line(run_a["output_tail"])
    # An entry point's failure reads 'Error while loading plugin "NAME"', a module's 'Error importing plugin "NAME"'.
    assert 'plugin "shopcalc_fixtures"' in line, run_a["output_tail"]
    assert "_ctypes" in line and "allowlist refuses" in line
