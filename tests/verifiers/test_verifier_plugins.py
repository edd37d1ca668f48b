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
