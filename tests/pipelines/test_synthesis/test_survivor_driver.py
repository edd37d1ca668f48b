"""The survivor driver's memory of crashed graded runs (issue 34): a task whose oracle's run on A crashed in
validation is an environment-level failure that repeats, so the next candidates of its function (of its module,
when the crash came before any case ran: an import, a plugin) are skipped with a reason instead of being
synthesized again. (Real crashes and their one line: tests/test_validate.py, tests/verifiers/test_verifier_plugins.py.)"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from repo2rlenv.baseline.runner import BaselineReport
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate, SkipReason
from repo2rlenv.pipelines.test_synthesis.emit.assemble import CRASH_BEFORE_CASES
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.pipelines.test_synthesis.survivor_driver import CrashMemory, SynthesisContext, Synthesizer
from repo2rlenv.pysource.functions import FunctionRecord
from repo2rlenv.sandbox.install import InstallPlan


def _cand(module: str, qualname: str) -> Candidate:
    path = module.replace(".", "/") + ".py"
    func = FunctionRecord.model_construct(path=path, module=module, qualname=qualname, name=qualname)
    return Candidate.model_construct(candidate_id=f"{module}:{qualname}", function=func, gates=[], seconds={},
                                     status="kept", skip_reason=None, task_id=None)


def test_a_crash_before_any_case_skips_its_module_and_one_after_cases_its_function_only():
    memory = CrashMemory()
    memory.record(_cand("pkg.ext", "f"), f"{CRASH_BEFORE_CASES}: Error while loading plugin \"x\"")
    memory.record(_cand("pkg.core", "g"), "after cases ran: Fatal Python error: Segmentation fault")
    assert memory.skip(_cand("pkg.ext", "other")).reason == SkipReason.after_crash  # same module
    assert "Error while loading plugin" in memory.skip(_cand("pkg.ext", "f")).detail
    assert memory.skip(_cand("pkg.core", "g")).reason == SkipReason.after_crash  # same function
    assert memory.skip(_cand("pkg.core", "h")) is None  # the crash was g's own
    assert memory.skip(_cand("pkg.other", "f")) is None


def test_the_synthesizer_drops_a_candidate_after_its_function_crashed_without_running_anything(tmp_path: Path):
    # A suite whose session can do nothing: any stage run (a probe, an oracle search) would fail.
    ctx = SynthesisContext(suite=SimpleNamespace(session=object()), baseline=BaselineReport.model_construct(stable_passing=[], duration_sec=1.0),  # type: ignore[arg-type]
                           options=TestSynthesisOptions(), a_dir=tmp_path, tasks_root=tmp_path, repo="r", repo_slug="r",
                           ref=None, pipeline_version="0", base_image="img",
                           install=InstallPlan.model_construct(import_roots=[""]), validator=None)
    first = _cand("pkg.ext", "f")
    ctx.crashes.record(first, f"{CRASH_BEFORE_CASES}: Error while loading plugin \"x\"")
    again = _cand("pkg.ext", "f")
    assert Synthesizer(ctx).synthesize(again) is None
    assert again.status == "dropped" and again.skip_reason == SkipReason.after_crash.value
