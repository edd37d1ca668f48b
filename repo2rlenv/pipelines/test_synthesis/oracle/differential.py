"""The LLM-free oracle: find inputs on which the two versions of a function behave differently, and write them as tests.

Steps, each running ``probe.py`` through the injected `Runner` (which owns the sandbox):
1. harvest the target's real calls from its covering tests, on version A;
2. replay them on A twice and on B once; a call whose stable A outcome differs from B's distinguishes;
3. if none does, replay perturbed (or, with nothing recorded, annotation-generated) inputs the same way;
4. pick a few distinguishing calls (real ones first, then small inputs, varied outcomes), write a pytest
   file asserting A's outcomes, and run it on both versions: only tests that pass on A and fail on B stay.
Parts of an outcome that differ between A's two runs (time, randomness, addresses) are never asserted.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from repo2rlenv.pipelines.test_synthesis.oracle.grids import source_literals
from repo2rlenv.pipelines.test_synthesis.oracle.perturb import candidate_calls
from repo2rlenv.pipelines.test_synthesis.oracle.records import (
    CallSpec,
    CheckReport,
    HarvestReport,
    Outcome,
    OutcomeKind,
    ReplayReport,
)
from repo2rlenv.pipelines.test_synthesis.oracle.values import ValueKind, same, size
from repo2rlenv.pipelines.test_synthesis.oracle.writer import TargetRef, TestCase, write_test_file

PROBE_PATH = Path(__file__).with_name("probe.py")
# Floats that still differ at this tolerance are far enough apart for pytest.approx's default (1e-6).
COARSE_REL = 1e-5
COARSE_ABS = 1e-11
FINE_REL = 1e-12
CHECK_ROUNDS = 3

Variant = Literal["A", "B"]
R = TypeVar("R", bound=BaseModel)


class Runner(Protocol):
    """Runs ``python <argv...>`` in a fresh copy of one version of the repo and returns ``{scratch}/out.json``.

    The working directory is the repo root and its import root is on PYTHONPATH; ``files`` (name ->
    text) are written into a scratch directory whose path replaces ``{scratch}`` in ``argv``.
    """

    def __call__(self, variant: Variant, argv: list[str], files: dict[str, str]) -> str: ...


class NoOracle(StrEnum):
    """Why no differential oracle was produced."""

    NO_DISTINGUISHING_INPUT = "no distinguishing input found"
    PROBE_FAILED = "probe failed"
    NOT_SEPARATED = "generated tests did not separate the versions"
    TOO_LONG = "oracle exceeds the line budget"


class Origin(StrEnum):
    """Where a call came from."""

    RECORDED = "recorded"  # seen while the existing tests ran
    PERTURBED = "perturbed"  # a recorded call with one value changed
    GENERATED = "generated"  # built from the parameters' annotations


_ORIGIN_RANK = {Origin.RECORDED: 0, Origin.PERTURBED: 1, Origin.GENERATED: 2}


class Distinguishing(BaseModel):
    """A call on which the versions differ, with both outcomes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    call: CallSpec
    origin: Origin
    outcome_a: Outcome
    outcome_b: Outcome
    facets: list[str] = Field(description="Parts of A's outcome that are stable and differ on B.")


class DifferentialResult(BaseModel):
    """What `synthesize_differential` produced, or why it produced nothing."""

    model_config = ConfigDict(extra="forbid")

    found: bool
    reason: str | None = Field(None, description="A `NoOracle` value when nothing was found.")
    detail: str | None = Field(None, description="More about the reason (the probe's error, failing tests).")
    test_source: str | None = Field(None, description="The oracle test file.")
    distinguishing: list[Distinguishing] = Field(default_factory=list, description="The calls the tests make.")
    harvested: int = Field(0, description="Distinct calls recorded from the covering tests.")
    tried: int = Field(0, description="Calls replayed on both versions (recorded + perturbed/generated).")
    n_distinguishing: int = Field(0, description="Calls found to distinguish the versions before selection.")
    n_tests: int = Field(0, description="Test functions in `test_source`.")


class Limits(BaseModel):
    """Time limits of replays (the runner's own wall clock is the outer bound)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    call_timeout: float = Field(2.0, gt=0, description="Seconds one replayed call may run.")
    # Past this, the remaining calls of one replay are skipped rather than run.
    replay_timeout: float = Field(120.0, gt=0, description="Seconds one replay of many calls may run.")


class ProbeFailed(Exception):
    """The probe could not do its job (import error of the target, unreadable output)."""


class _Probe:
    """Runs probe modes through the runner and reads their reports."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.source = PROBE_PATH.read_text(encoding="utf-8")

    def _run(self, variant: Variant, mode: str, spec: dict, model: type[R]) -> R:
        argv = ["{scratch}/probe.py", mode, "--spec", "{scratch}/spec.json", "--out", "{scratch}/out.json"]
        text = self.runner(variant, argv, {"probe.py": self.source, "spec.json": json.dumps(spec, sort_keys=True)})
        try:
            report = model.model_validate_json(text)
        except ValidationError as exc:
            raise ProbeFailed(f"{mode} on {variant}: unreadable report: {exc.errors()[:1]}") from exc
        error = getattr(report, "error", None)
        if error:
            raise ProbeFailed(f"{mode} on {variant}: {error}")
        return report

    def harvest(self, target_file: str, module: str, qualname: str, tests: list[str]) -> HarvestReport:
        spec = {"target_file": target_file, "module": module, "qualname": qualname, "tests": tests}
        return self._run("A", "harvest", spec, HarvestReport)

    def replay(self, variant: Variant, module: str, qualname: str, calls: list[CallSpec], limits: Limits) -> list[Outcome]:
        spec = {
            "module": module,
            "qualname": qualname,
            "calls": [c.to_probe() for c in calls],
            "call_timeout": limits.call_timeout,
            "total_timeout": limits.replay_timeout,
        }
        outcomes = self._run(variant, "replay", spec, ReplayReport).outcomes
        if len(outcomes) != len(calls):
            raise ProbeFailed(f"replay on {variant}: {len(outcomes)} outcomes for {len(calls)} calls")
        return outcomes

    def check(self, variant: Variant, test_path: str, source: str) -> CheckReport:
        return self._run(variant, "check", {"test_path": test_path, "source": source}, CheckReport)


class _Candidate(BaseModel):
    """A distinguishing call and the test case it becomes."""

    model_config = ConfigDict(frozen=True)

    index: int
    found: Distinguishing
    case: TestCase
    cost: int


class Verdict(BaseModel):
    """Which parts of A's outcome a test may assert, and which of them tell B apart."""

    model_config = ConfigDict(frozen=True)

    stable: list[str] = Field(default_factory=list, description="Facets equal in both runs of A.")
    differing: list[str] = Field(default_factory=list, description="Stable facets that B does not share.")


def judge(a1: Outcome, a2: Outcome, b: Outcome) -> Verdict:
    """Compare two runs of A and one of B; an empty `differing` means the call does not distinguish."""
    if a1.kind not in (OutcomeKind.RETURN, OutcomeKind.RAISE) or a2.kind is not a1.kind:
        return Verdict()
    if b.kind not in (OutcomeKind.RETURN, OutcomeKind.RAISE):
        return Verdict()  # a hang or a broken setup on B is no behaviour a quick test can assert
    first, second, other = a1.facets(), a2.facets(), b.facets()
    stable = {k: v for k, v in first.items() if k in second and same(v, second[k])}
    if a1.kind is OutcomeKind.RAISE and "raise.type" not in stable:
        return Verdict()  # pytest.raises needs the exception class by name
    differing = [k for k, v in stable.items() if k not in other or not same(v, other[k])]
    return Verdict(stable=sorted(stable), differing=sorted(differing))


def make_case(call: CallSpec, a: Outcome, b: Outcome, verdict: Verdict) -> TestCase:
    """What to assert for one distinguishing call: A's stable return, and the attributes/arguments that differ."""
    facets = verdict.differing
    a_facets, b_facets = a.facets(), b.facets()
    coarse = all(k not in b_facets or not same(a_facets[k], b_facets[k], COARSE_REL, COARSE_ABS) for k in facets)
    if a.kind is OutcomeKind.RAISE:
        type_differs = "raise.type" in facets
        return TestCase(
            call=call,
            expected=a,
            assert_return=False,
            match_message="raise.message" in facets and not type_differs,
            exact_type=type_differs and b.kind is OutcomeKind.RAISE,
        )
    attrs = [k.split(":", 1)[1] for k in facets if k.startswith("attr:")]
    args = [k.split(":", 1)[1] for k in facets if k.startswith("arg:")]
    returned = a.value
    assert_return = returned is not None and "return" in verdict.stable and (
        "return" in facets or returned.t is not ValueKind.NONE or not (attrs or args)
    )
    return TestCase(
        call=call,
        expected=a,
        assert_return=assert_return,
        attrs=attrs,
        args=args,
        approx_rel=None if coarse else FINE_REL,
    )


# A test that needs a tolerance tighter than pytest.approx's default is fragile: choose it last.
FINE_TOLERANCE_COST = 20


def _cost(call: CallSpec, case: TestCase) -> int:
    parts = [*call.args, *call.kwargs.values()] + ([call.receiver] if call.receiver else [])
    cost = sum(size(p) for p in parts) + (size(case.expected.value) if case.expected.value else 0)
    return cost + (FINE_TOLERANCE_COST if case.approx_rel is not None else 0)


def select(candidates: list[_Candidate], max_tests: int) -> list[_Candidate]:
    """Real calls first, then cheap ones; one per kind of outcome difference before any second of a kind."""
    ordered = sorted(candidates, key=lambda c: (_ORIGIN_RANK[c.found.origin], c.cost, c.index))
    picked: list[_Candidate] = []
    seen: set[tuple] = set()
    for c in ordered:
        kind = (c.found.outcome_a.kind, c.found.outcome_b.kind, tuple(f.split(":")[0] for f in c.found.facets))
        if kind not in seen and len(picked) < max_tests:
            seen.add(kind)
            picked.append(c)
    taken = {c.index for c in picked}
    picked += [c for c in ordered if c.index not in taken][: max_tests - len(picked)]
    return sorted(picked, key=lambda c: (_ORIGIN_RANK[c.found.origin], c.index))


def _distinguish(
    probe: _Probe, module: str, qualname: str, calls: list[CallSpec], origin: Origin, start: int, limits: Limits
) -> list[_Candidate]:
    if not calls:
        return []
    a1 = probe.replay("A", module, qualname, calls, limits)
    a2 = probe.replay("A", module, qualname, calls, limits)
    b = probe.replay("B", module, qualname, calls, limits)
    out = []
    for i, (call, x, y, z) in enumerate(zip(calls, a1, a2, b)):
        verdict = judge(x, y, z)
        if verdict.differing:
            case = make_case(call, x, z, verdict)
            found = Distinguishing(call=call, origin=origin, outcome_a=x, outcome_b=z, facets=verdict.differing)
            out.append(_Candidate(index=start + i, found=found, case=case, cost=_cost(call, case)))
    return out


def synthesize_differential(
    *,
    runner: Runner,
    target_file: str,
    module: str,
    qualname: str,
    function_source_a: str,
    covering_tests: list[str],
    max_tests: int = 5,
    seed: int = 0,
    test_path: str,
    max_loc: int = 200,
    budget: int = 300,
    limits: Limits | None = None,
) -> DifferentialResult:
    """Search for inputs on which A and B differ and write them as a pytest file asserting A's behaviour.

    ``target_file`` is relative to the repo root, ``test_path`` is where the file will live in the repo
    (tests are checked there). Exceptions raised by ``runner`` itself propagate.
    """
    probe = _Probe(runner)
    limits = limits or Limits()
    try:
        harvest = probe.harvest(target_file, module, qualname, covering_tests)
        if harvest.target is None:
            raise ProbeFailed("harvest: the target was not described")
        recorded = [r.call for r in harvest.calls]
        found = _distinguish(probe, module, qualname, recorded, Origin.RECORDED, 0, limits)
        tried = len(recorded)
        if not found:
            name = qualname.rsplit(".", 1)[-1]
            lits = source_literals(function_source_a, name, harvest.target.constants)
            extra = candidate_calls(recorded, harvest.target, module, lits, budget=budget, seed=seed)
            origin = Origin.PERTURBED if recorded else Origin.GENERATED
            found = _distinguish(probe, module, qualname, extra, origin, tried, limits)
            tried += len(extra)
    except ProbeFailed as exc:
        return DifferentialResult(found=False, reason=NoOracle.PROBE_FAILED, detail=str(exc))
    counts = {"harvested": len(recorded), "tried": tried, "n_distinguishing": len(found)}
    if not found:
        return DifferentialResult(found=False, reason=NoOracle.NO_DISTINGUISHING_INPUT, **counts)
    target = TargetRef(module=module, qualname=qualname, info=harvest.target)
    return _write_checked(probe, target, found, max_tests, max_loc, test_path, counts)


def _write_checked(
    probe: _Probe,
    target: TargetRef,
    found: list[_Candidate],
    max_tests: int,
    max_loc: int,
    test_path: str,
    counts: dict[str, int],
) -> DifferentialResult:
    """Write the chosen tests and keep only those that pass on A and fail on B, re-choosing a few times."""
    rejected: set[int] = set()
    detail = None
    for _ in range(CHECK_ROUNDS):
        chosen = select([c for c in found if c.index not in rejected], max_tests)
        if not chosen:
            break
        written = write_test_file(target, [c.case for c in chosen], max_loc=max_loc)
        if not written.included:
            return DifferentialResult(found=False, reason=NoOracle.TOO_LONG, **counts)
        chosen = [chosen[i] for i in written.included]
        try:
            on_a = probe.check("A", test_path, written.source)
            on_b = probe.check("B", test_path, written.source)
        except ProbeFailed as exc:
            return DifferentialResult(found=False, reason=NoOracle.PROBE_FAILED, detail=str(exc), **counts)
        bad = [
            (c, name)
            for c, name in zip(chosen, written.test_names)
            if on_a.results.get(name) != "passed" or on_b.results.get(name) != "failed"
        ]
        if not bad:
            return DifferentialResult(
                found=True,
                test_source=written.source,
                distinguishing=[c.found for c in chosen],
                n_tests=len(chosen),
                **counts,
            )
        rejected.update(c.index for c, _ in bad)
        detail = "; ".join(
            f"{name}: {on_a.results.get(name, 'missing')} on A, {on_b.results.get(name, 'missing')} on B" for _, name in bad
        )
        detail += "".join(f"; collection: {err[-300:]}" for err in on_a.collection_errors[:1])
    return DifferentialResult(found=False, reason=NoOracle.NOT_SEPARATED, detail=detail, **counts)
