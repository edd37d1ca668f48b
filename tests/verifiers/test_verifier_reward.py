"""End-to-end reward tests: real tasks on disk graded by `score()` with real pytest runs.

Run as root, the test runs drop to uid 65534 (see task_kit.build_portable_python).
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import threading

import pytest

from repo2rlenv.verifiers.config_model import RewardDetails

pytestmark = pytest.mark.slow

HUNDRED = "from shopcalc.pricing import apply_discount\n\n\ndef test_hundred():\n    assert apply_discount(10, 100) == 5\n"
CAP_ONLY = "from shopcalc.pricing import apply_discount\n\n\ndef test_cap():\n    assert apply_discount(10, 80) == 5\n"
HUNDRED_ID = "tests/test_r2e_0badc0de.py::test_hundred"


def reward_on_disk(task) -> float:
    text = task.reward_text()
    assert re.fullmatch(r"[01](\.\d+)?\n", text), repr(text)  # exactly one float
    return float(text)


RUNS = ["A", "A′1", "A′2", "A′3", "A′4", "B′1", "B′2", "B′3", "B′4"]


def outcomes(**by_side: str) -> dict[str, str]:
    """{run: outcome} with `A=` for A and its rewrites, `B=` for B's rewrites, `S1=` … for siblings'."""
    out = {name: by_side["A"] for name in RUNS[:5]}
    out.update({name: by_side["B"] for name in RUNS[5:]})
    out.update({f"{k}′1": v for k, v in by_side.items() if k.startswith("S")})
    return out


def test_good_discriminating_test_earns_full_reward(make_task, kit):
    task = make_task(kit.GOOD_TEST)
    details = task.score()
    assert (details["reward"], details["reason"]) == (1.0, None)
    assert (details["b_pass"], details["b_fail"], details["cov"]) == (1.0, 1.0, 1.0)
    assert [c["outcomes"] for c in details["cases"]] == [outcomes(A="passed", B="failed")]
    assert details["coverage"]["covered_targets"] == [kit.RAISE_LINE, kit.CAP_LINE]
    assert details["kills"] == {"B": ["tests/test_r2e_0badc0de.py::test_edges"]}
    assert reward_on_disk(task) == 1.0
    on_disk = json.loads((task.logs_dir / "reward-details.json").read_text())
    assert on_disk == details
    RewardDetails.model_validate(on_disk)
    assert sorted(os.listdir(task.logs_dir)) == ["reward-details.json", "reward.txt"]
    assert {v["name"]: (v["variant"], v["status"]) for v in details["variants"]} == {
        name: (name[0], "ok") for name in RUNS}
    assert set(details["timings"]) == {"lint", "prepare", "copies", "runs", "run_cpu", "total"}
    assert set(details["timings"]["run_cpu"]) == set(RUNS) and all(c > 0 for c in details["timings"]["run_cpu"].values())
    assert details["twins"] == {"files": [kit.TARGET], "kinds": sorted(set(details["twins"]["kinds"])),
                                "runs_per_side": 4}
    for run in details["variants"]:  # every run applied the kernel barrier, sealed the target, ran in the zygote
        assert run["guard"]["seccomp"] is True and run["guard"]["landlock"] >= 1, run
        assert run["guard"]["sealed"] == ["shopcalc.pricing"] and run["guard"]["seal_failed"] == {}, run
        assert run["via"] == "zygote"
    if os.geteuid() == 0:
        assert details["isolation"]["dropped_privileges"] is True
        assert 40000 <= details["isolation"]["uid"] < 60000


def test_a_host_with_other_threads_builds_the_copies_in_place(make_task, kit):
    # Forking a process that runs other threads is unsafe: the copies are then built without a builder.
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        details = make_task(kit.GOOD_TEST).score()
    finally:
        stop.set()
    assert (details["reward"], details["reason"]) == (1.0, None)


def test_flat_layout_with_the_repo_root_as_import_root(make_task, kit):
    details = make_task(kit.GOOD_TEST, flat=True).score()
    assert (details["reward"], details["target"]) == (1.0, "shopcalc/pricing.py::apply_discount")


@pytest.mark.parametrize("config_file, text", [
    ("pytest.ini", "[pytest]\nfilterwarnings =\n    error\n"),
    ("pyproject.toml", "[tool.pytest.ini_options]\nfilterwarnings = ['error']\naddopts = '-W error'\n"),
])
def test_a_repo_that_turns_warnings_into_errors_still_grades(make_task, kit, config_file, text):
    # The zygote imports the verifier's plugin before pytest starts; pytest must not warn that it cannot
    # rewrite it, or a repo's `filterwarnings = error` crashes every run (python-slugify did).
    details = make_task(kit.GOOD_TEST, extra_files={config_file: text}).score()
    assert details["reward"] == 1.0, details["reason"]


def test_runs_happen_as_unprivileged_uids_of_their_own(make_task):
    # Every run as a uid of its own (none root, none shared, none an account's), with no groups.
    task = make_task("import os\n\n\ndef test_uid():\n    assert os.getuid() == os.getgid() != 0\n"
                     "    assert os.getgroups() in ([], [os.getgid()])\n    assert 40000 <= os.getuid() < 60000\n"
                     "\n\n"
                     "def test_hundred():\n    from shopcalc.pricing import apply_discount\n"
                     "    assert apply_discount(10, 100) == 5\n")
    details = task.score(run_lint=False)
    if os.geteuid() != 0:
        assert [c["outcomes"]["A"] for c in details["cases"]] == ["failed", "passed"]
        return
    assert set(details["cases"][0]["outcomes"].values()) == {"passed"}  # on every run
    assert details["reward"] == pytest.approx(0.75)  # B killed (by test_hundred), half the targets covered


def test_test_that_passes_on_b_earns_nothing_gated_but_coverage_in_rfc(make_task):
    gated = make_task(CAP_ONLY).score()
    assert gated["reward"] == 0.0
    assert gated["reason"] == "no case that passes on A and its rewrites fails on B"
    rfc = make_task(CAP_ONLY, reward_mode="rfc").score()
    assert rfc["reward"] == pytest.approx(0.5 * 0.5)  # w·cov: the cap line of the two targets
    assert rfc["reason"] is None


def test_only_a_records_coverage_and_only_when_there_are_targets(make_task):
    # Lint off: the submission looks for the recorder (3.11: the C recorder's wrapper of threading's
    # bootstrap, or the Python fallback's trace function; 3.12+: a sys.monitoring tool), which a real
    # submission may not. A alone records (its record is the one that counts); the twelve runs after it do
    # not pay for one. A case that passes only where there is no recorder passes everywhere without targets,
    # and fails on A (grading stops there) with them.
    sub = ("import sys\nimport threading\n\nfrom shopcalc.pricing import apply_discount\n\n\n"
           "def recorded():\n    mon = getattr(sys, 'monitoring', None)\n"
           "    if mon is not None:\n        return any(mon.get_tool(t) for t in range(6))\n"
           "    return sys.gettrace() is not None or threading.Thread._bootstrap_inner.__module__ != 'threading'\n\n\n"
           "def test_unrecorded():\n    assert not recorded()\n    assert apply_discount(10, 100) == 5\n")
    plain = make_task(sub, coverage_targets=[]).score(run_lint=False)
    assert plain["coverage"]["measured"] is False and plain["reward"] > 0
    assert {name: outcome for c in plain["cases"] for name, outcome in c["outcomes"].items()} == {
        name: "failed" if name.startswith("B") else "passed" for name in RUNS}
    measured = make_task(sub).score(run_lint=False)
    assert measured["reward"] == 0.0
    assert measured["cases"][0]["outcomes"]["A"] == "failed"
    # The converse: a case that passes only under the recorder passes on A and fails on every A′.
    seen = make_task(sub.replace("assert not recorded()", "assert recorded()")).score(run_lint=False)
    assert seen["coverage"]["measured"] is True and seen["reward"] == 0.0
    assert {n: o for n, o in seen["cases"][0]["outcomes"].items() if n[0] == "A"} == {
        name: "passed" if name == "A" else "failed" for name in RUNS if name[0] == "A"}


def test_every_run_has_the_same_files_with_the_package_precompiled(make_task):
    # Lint off: the submission lists its copy. It passes only where the copy holds exactly these files,
    # the shopcalc package's pycs included (checked-hash ones); the changed module, sealed at the session's
    # start, is an empty file without bytecode.
    sub = ("import os\nimport sys\n\n\ndef test_listing():\n    tag = sys.implementation.cache_tag\n"
           "    found = sorted(os.path.relpath(os.path.join(d, f)) for d, _, fs in os.walk('.') for f in fs)\n"
           "    assert found == sorted(['pyproject.toml', 'src/shopcalc/__init__.py', 'src/shopcalc/pricing.py',\n"
           "                            f'src/shopcalc/__pycache__/__init__.{tag}.pyc',\n"
           "                            'tests/test_pricing.py', 'tests/test_r2e_0badc0de.py'])\n"
           "    assert os.path.getsize('src/shopcalc/pricing.py') == 0\n")
    details = make_task(sub + "\n\n" + HUNDRED).score(run_lint=False)  # HUNDRED: so that every variant runs
    assert details["precompiled_modules"] == 1  # __init__; pricing.py, which the variants change, per copy
    assert [c["outcomes"] for c in details["cases"]] == [outcomes(A="passed", B="passed"),
                                                         outcomes(A="passed", B="failed")]


def test_coverage_counts_lines_run_when_the_test_module_is_imported(make_task, kit):
    # Tracing starts at the target's import, so the raise line, run only while pytest imports the file,
    # is measured; the test function itself reaches only the cap line.
    sub = ("from shopcalc.pricing import apply_discount\n\ntry:\n    apply_discount(10, 101)\n"
           "    RAISED = False\nexcept ValueError:\n    RAISED = True\n\n\n"
           "def test_hundred():\n    assert RAISED\n    assert apply_discount(10, 100) == 5\n")
    details = make_task(sub).score()
    assert details["coverage"]["covered_targets"] == [kit.RAISE_LINE, kit.CAP_LINE]
    assert (details["cov"], details["reward"]) == (1.0, 1.0)


def test_partial_coverage_scales_the_reward(make_task):
    details = make_task(HUNDRED).score()
    assert (details["b_pass"], details["b_fail"], details["cov"]) == (1.0, 1.0, 0.5)
    assert details["reward"] == pytest.approx(0.5 + 0.5 * 0.5)


def test_parametrized_cases_count_one_by_one(make_task):
    sub = ("import pytest\n\nfrom shopcalc.pricing import apply_discount\n\n\n"
           "@pytest.mark.parametrize('pct, expected', [(100, 5), (80, 5), (0, 10)])\n"
           "def test_cases(pct, expected):\n    assert apply_discount(10, pct) == expected\n")
    details = make_task(sub).score()
    assert details["n_cases"] == 3
    assert [c["id"] for c in details["cases"]] == [
        "tests/test_r2e_0badc0de.py::test_cases[100-5]", "tests/test_r2e_0badc0de.py::test_cases[80-5]",
        "tests/test_r2e_0badc0de.py::test_cases[0-10]"]
    assert details["n_tests"] == 1
    assert details["b_fail"] == pytest.approx(1 / 3)  # reported; gated pays B killed, not this fraction
    assert details["reward"] == pytest.approx(0.75)
    assert make_task(sub, reward_mode="rfc").score()["reward"] == pytest.approx(0.5 / 3 + 0.5 * 0.5)


def test_siblings_grade_the_discrimination_term(make_task):
    # B (100% raises) and sibling 2 (cap at a third) fail the test; sibling 1 (0% raises) does not.
    details = make_task(HUNDRED, siblings=2).score()
    assert {c["id"]: c["outcomes"] for c in details["cases"]} == {"tests/test_r2e_0badc0de.py::test_hundred": outcomes(
        A="passed", B="failed", S1="passed", S2="failed")}
    assert (details["b_fail"], details["mutation_score"], details["mutation_weight"]) == (1.0, 0.5, 0.5)
    assert details["reward"] == pytest.approx((0.5 + 0.5 * 0.5) * 0.75)
    assert details["kills"] == {"B": [HUNDRED_ID], "sibling_1": [], "sibling_2": [HUNDRED_ID]}
    assert [v["variant"] for v in details["variants"]] == ["A"] * 5 + ["B"] * 4 + ["S1", "S2"]
    # Catching sibling 1 too (0% off is allowed) fills the term.
    thorough = make_task(HUNDRED + "\n\ndef test_zero():\n    assert apply_discount(10, 0) == 10\n", siblings=2).score()
    assert (thorough["mutation_score"], thorough["reward"]) == (1.0, 0.75)


def test_gated_coverage_is_the_submissions_share_of_the_oracles_lines(make_task, kit):
    # The suite covers every line (no targets): cov is what the submission runs of what the oracle runs.
    every = kit.function_lines(kit.PRICING, "apply_discount")
    details = make_task(HUNDRED, coverage_targets=[], baseline_full_coverage=True, oracle_lines=every).score()
    assert details["coverage"]["kind"] == "oracle" and details["coverage"]["measured"] is True
    assert details["coverage"]["covered_oracle_lines"] == sorted(set(every) - {kit.RAISE_LINE})
    assert details["cov"] == pytest.approx(round(6 / 7, 6))
    assert details["reward"] == pytest.approx(0.5 + 0.5 * round(6 / 7, 6))
    good = make_task(kit.GOOD_TEST, coverage_targets=[], baseline_full_coverage=True, oracle_lines=every).score()
    assert (good["cov"], good["reward"]) == (1.0, 1.0)


def test_timeout_on_b_counts_as_failure_on_b(make_task):
    sub = ("from shopcalc.pricing import apply_discount\n\n\ndef test_hundred():\n    while True:\n"
           "        try:\n            result = apply_discount(10, 100)\n            break\n"
           "        except ValueError:\n            pass\n    assert result == 5\n")
    details = make_task(sub, run_timeout_sec=6, case_timeout_sec=60).score()
    statuses = {v["name"]: v["status"] for v in details["variants"]}
    assert statuses == {name: "ok" if name.startswith("A") else "timeout" for name in RUNS}
    assert details["cases"][0]["outcomes"]["B′1"] == "missing"
    assert details["reward"] == pytest.approx(0.75)  # a broken B is one killed case: here the only one


def test_a_hanging_case_fails_alone_at_its_own_wall_clock(make_task):
    sub = ("from shopcalc.pricing import apply_discount\n\n\ndef test_hundred():\n    while True:\n"
           "        try:\n            result = apply_discount(10, 100)\n            break\n"
           "        except ValueError:\n            pass\n    assert result == 5\n\n\n"
           "def test_tax():\n    from shopcalc.pricing import with_tax\n    assert with_tax(10) == 12\n")
    details = make_task(sub, case_timeout_sec=2).score()
    assert {v["status"] for v in details["variants"]} == {"ok"}
    assert details["cases"][0]["outcomes"] == outcomes(A="passed", B="failed")
    assert details["reward"] == pytest.approx(0.75)


@pytest.mark.parametrize(("config", "reason"), [
    ({"min_new_tests": 3}, "1 test function(s), fewer than min_new_tests=3"),
    ({"max_test_loc": 5}, "submission has 7 non-blank lines, more than max_test_loc=5"),
])
def test_size_gates_zero_the_reward(make_task, kit, config, reason):
    details = make_task(kit.GOOD_TEST, **config).score()
    assert (details["reward"], details["reason"]) == (0.0, reason)
    RewardDetails.model_validate(details)


def test_missing_or_odd_submission_earns_zero(make_task, kit):
    missing = make_task(None)
    assert missing.score()["reason"] == "missing submission: tests/test_r2e_0badc0de.py"
    assert reward_on_disk(missing) == 0.0
    linked = make_task(None)
    (linked.workspace / kit.SUBMISSION).symlink_to(linked.workspace / "tests" / "test_pricing.py")
    assert linked.score()["reason"] == "submission tests/test_r2e_0badc0de.py is not a regular file"


def test_a_changed_a_is_graded_from_the_pristine_archive(make_task, kit):
    # Shared-mode grading (the agent's own container): whatever the agent did to A's files, the runs are
    # built from the copy in tests/, so the reward is the clean grading's; what it changed is reported.
    clean = make_task(kit.GOOD_TEST).score()
    task = make_task(kit.GOOD_TEST)
    (task.workspace / kit.TARGET).write_text(kit.PRICING.replace("percent > 50", "percent > 60"))
    (task.workspace / "src" / "shopcalc" / "__init__.py").unlink()
    details = task.score()
    assert details["reward"] == clean["reward"] == 1.0 and details["reason"] is None
    assert details["restored_workspace_files"] == ["src/shopcalc/__init__.py", kit.TARGET]
    assert clean["restored_workspace_files"] == []
    RewardDetails.model_validate(details)
    # The archive is the task's own: one that does not match the manifest is an internal error, never graded.
    bad = make_task(kit.GOOD_TEST)
    manifest = json.loads((bad.tests_dir / "workspace_manifest.json").read_text())
    manifest["files"][kit.TARGET] = "0" * 64
    (bad.tests_dir / "workspace_manifest.json").write_text(json.dumps(manifest))
    assert bad.score()["reason"] == f"internal error: ValueError: pristine archive: {kit.TARGET} differs from the manifest"


def test_tampered_workspace_earns_zero(make_task, kit):
    # Without a pristine archive (tasks of config schema < 5, or too large to ship one), A is staged from
    # the workspace and checked against the manifest.
    make_task = functools.partial(make_task, pristine_archive=None)
    edited = make_task(kit.GOOD_TEST)
    (edited.workspace / kit.TARGET).write_text(kit.PRICING.replace("percent > 50", "percent > 60"))
    details = edited.score()
    assert (details["reward"], details["reason"]) == (0.0, f"workspace tampered: {kit.TARGET} differs from the manifest")
    assert details["variants"] == []
    removed = make_task(kit.GOOD_TEST)
    (removed.workspace / "src" / "shopcalc" / "__init__.py").unlink()
    assert removed.score()["reason"] == "workspace tampered: src/shopcalc/__init__.py is missing"


def test_files_the_agent_added_never_reach_a_run(make_task, kit):
    task = make_task(kit.GOOD_TEST)
    # If any of these were copied, every case would fail (conftest) or every run crash (sitecustomize).
    (task.workspace / "tests" / "conftest.py").write_text(
        "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n    outcome.get_result().outcome = 'failed'\n")
    (task.workspace / "src" / "sitecustomize.py").write_text("raise SystemExit(3)\n")
    (task.workspace / "pytest.ini").write_text("[pytest]\naddopts = -p no:python\n")
    details = task.score()
    assert details["reward"] == 1.0
    assert details["ignored_workspace_files"] == ["pytest.ini", "src/sitecustomize.py", "tests/conftest.py"]
    assert details["ignored_workspace_file_count"] == 3


def test_stale_and_planted_reward_files_are_replaced(make_task):
    task = make_task("def test_nothing():\n    pass\n")
    task.logs_dir.mkdir()
    (task.logs_dir / "reward.txt").write_text("1.0\n")
    (task.logs_dir / "reward.json").write_text('{"reward": 1.0}\n')
    (task.logs_dir / "reward-details.json").mkdir()
    details = task.score()
    assert details["reward"] == 0.0
    assert reward_on_disk(task) == 0.0
    assert sorted(os.listdir(task.logs_dir)) == ["reward-details.json", "reward.txt"]


def test_internal_errors_write_zero_with_the_reason(make_task, kit):
    bad_config = make_task(kit.GOOD_TEST)
    raw = json.loads((bad_config.tests_dir / "verifier_config.json").read_text())
    (bad_config.tests_dir / "verifier_config.json").write_text(json.dumps({**raw, "surprise": 1}))
    details = bad_config.score()
    assert details["reward"] == 0.0
    assert details["reason"] == "internal error: ValueError: config keys differ from the schema: ['surprise']"
    bad_diff = make_task(kit.GOOD_TEST)
    diff = (bad_diff.tests_dir / "broken_patch.diff").read_text()
    (bad_diff.tests_dir / "broken_patch.diff").write_text(diff.replace(" def apply_discount", " def apply_rebate"))
    details = bad_diff.score()
    assert details["reason"].startswith("internal error: PatchError: src/shopcalc/pricing.py: hunk #1 does not apply")
    assert reward_on_disk(bad_diff) == 0.0
    RewardDetails.model_validate(details)


def test_runs_stop_once_the_reward_is_decided(make_task):
    details = make_task("def test_broken():\n    assert False\n").score()
    statuses = {v["name"]: v["status"] for v in details["variants"]}
    assert statuses == {name: "ok" if name == "A" else "not_run" for name in RUNS}
    assert details["reason"] == "no case passes on A"
    assert details["reward"] == 0.0


def test_falls_back_to_own_uid_when_the_run_uid_cannot_use_the_interpreter(make_task, kit):
    details = make_task(kit.GOOD_TEST).score(python=sys.executable)
    assert details["reward"] == 1.0
    dropped = os.geteuid() == 0 and kit._usable_by_nobody(sys.executable)
    assert details["isolation"]["dropped_privileges"] is dropped
    if os.geteuid() == 0 and not dropped:
        assert details["isolation"]["note"].startswith(f"uid 65534 cannot run {sys.executable}")
