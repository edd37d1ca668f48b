"""Baselines kept on disk: a second run on the same inputs reuses the first's, any changed input is a miss,
and an unreadable entry means the suite runs again."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from repo2rlenv.baseline import cache
from repo2rlenv.baseline.runner import SuiteRunner
from repo2rlenv.digest import tree_digest
from repo2rlenv.pipelines.test_synthesis import ref_setup
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.progress import Reporter
from repo2rlenv.sandbox.base import Limits

TESTS = "from tinypkg.core import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"


class _Recorder(Reporter):
    def __init__(self):
        super().__init__(quiet=True)
        self.lines: list[str] = []

    def info(self, message: str) -> None:
        self.lines.append(message)


@pytest.fixture
def ref(make_repo, tiny_package, make_sandbox, r2e_cache):
    root = make_repo(tiny_package(TESTS), commit=False)
    sandbox = make_sandbox("local", Limits(timeout_sec=120), "cache-test", r2e_cache)
    sandbox.prepare(root)
    session = sandbox.open()
    runner = SuiteRunner(session, sandbox.plan.import_roots)
    yield SimpleNamespace(sandbox=sandbox, setup=ref_setup.RefSetup(
        a_dir=root, a_digest=tree_digest(root), plan=sandbox.plan, session=session, runner=runner))
    session.close()


def _ctx(ref, cache_dir: Path) -> SimpleNamespace:
    return SimpleNamespace(config=SimpleNamespace(cache_dir=cache_dir), sandbox=ref.sandbox, reporter=_Recorder())


def test_second_baseline_on_the_same_inputs_is_reused(ref, tmp_path, monkeypatch):
    options = TestSynthesisOptions()
    first = ref_setup.ref_baseline(_ctx(ref, tmp_path), options, ref.setup)
    assert first.stable_passing == ["tests/test_core.py::test_add"]
    assert len(list((tmp_path / "baselines").glob("*.json"))) == 1

    def must_not_run(*_a, **_k):
        raise AssertionError("the suite ran although its baseline was kept")

    monkeypatch.setattr(ref_setup, "run_baseline", must_not_run)
    ctx = _ctx(ref, tmp_path)
    again = ref_setup.ref_baseline(ctx, options, ref.setup)
    assert again == first
    assert any("reusing the baseline" in line for line in ctx.reporter.lines)
    # Switched off, the cache is neither read nor trusted: the suite runs (here: the guard fires).
    with pytest.raises(AssertionError, match="the suite ran"):
        ref_setup.ref_baseline(_ctx(ref, tmp_path), TestSynthesisOptions(baseline_cache=False), ref.setup)


def test_every_input_of_the_baseline_is_in_its_key(ref):
    runner = ref.setup.runner
    base = dict(tree_digest="t1", sandbox_id="local|None", runner=runner, reruns=1, timeout=900.0)
    key = cache.baseline_key(**base)
    assert cache.baseline_key(**base) == key  # stable
    for change in ({"tree_digest": "t2"}, {"sandbox_id": "docker|img:2"}, {"reruns": 2}, {"timeout": 60.0}):
        assert cache.baseline_key(**{**base, **change}) != key, change
    runner.import_roots = ["src"]
    assert cache.baseline_key(**base) != key  # import roots
    runner.import_roots = ref.setup.runner.import_roots = ref.setup.plan.import_roots or [""]
    assert cache.baseline_key(**base) == key
    runner.pytest_setup = runner.pytest_setup.model_copy(update={"ini_overrides": {"xfail_strict": "true"}})
    assert cache.baseline_key(**base) != key  # pytest arguments


def test_an_unreadable_entry_is_a_miss(ref, tmp_path):
    report = ref_setup.ref_baseline(_ctx(ref, tmp_path), TestSynthesisOptions(), ref.setup)
    (entry,) = (tmp_path / "baselines").glob("*.json")
    assert cache.load_baseline(tmp_path, entry.stem) == report
    entry.write_text(entry.read_text()[: len(entry.read_text()) // 2])  # a truncated file
    assert cache.load_baseline(tmp_path, entry.stem) is None
    entry.write_text('{"schema_version": 1}')  # an older, incomplete schema
    assert cache.load_baseline(tmp_path, entry.stem) is None
    assert cache.load_baseline(tmp_path, "no-such-key") is None
    # The miss is repaired by the next run.
    again = ref_setup.ref_baseline(_ctx(ref, tmp_path), TestSynthesisOptions(), ref.setup)
    assert again.stable_passing == report.stable_passing
    assert cache.load_baseline(tmp_path, entry.stem) == again
