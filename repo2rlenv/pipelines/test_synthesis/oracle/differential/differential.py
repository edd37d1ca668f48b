"""The LLM-free oracle: find inputs on which the two versions of a function behave differently, and write them as tests.

Steps, each running ``probe.py`` through the injected `Runner` (which owns the sandbox):
1. harvest the target's real calls from its covering tests, on version A (for a private target, the calls of
   the public functions and methods that reach it: a test keeps to the public API);
2. replay them on A twice and on B once (each call from the same seed of `random`); a call whose stable A
   outcome differs from B's distinguishes, once more runs of A confirm it (`judging`);
3. if none does, replay perturbed (or, with nothing recorded, annotation-generated) inputs the same way;
4. pick a few distinguishing calls (real ones first, then small inputs, varied outcomes), write a pytest
   file asserting A's outcomes, and run it on both versions: only tests that pass on A and fail on B stay.
Parts of an outcome that differ between A's runs (time, addresses, unseeded randomness) are never asserted.
When nothing is found, the `Diagnosis` of the search says why (``oracle.misses`` classifies it).
"""

from __future__ import annotations

import json
import time
from enum import StrEnum
from typing import Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from repo2rlenv.payload import payload_dir, payload_files
from repo2rlenv.pipelines.test_synthesis.oracle.differential.grids import Literals, source_literals
from repo2rlenv.pipelines.test_synthesis.oracle.differential.infer import inferred_types
from repo2rlenv.pipelines.test_synthesis.oracle.differential.judging import confirmed, judge, make_case, run_specific
from repo2rlenv.pipelines.test_synthesis.oracle.differential.perturb import candidate_calls
from repo2rlenv.pipelines.test_synthesis.oracle.differential.records import (
    CallSpec,
    CheckReport,
    EntryReport,
    HarvestReport,
    Outcome,
    OutcomeKind,
    ParamKind,
    ReplayReport,
    read_report,
)
from repo2rlenv.pipelines.test_synthesis.oracle.differential.values import is_concrete, size
from repo2rlenv.pipelines.test_synthesis.oracle.differential.writer import TargetRef, TestCase, write_test_file

# The probe's folder, shipped whole into the sandbox's scratch dir (probe.py imports its siblings).
PROBE_PACKAGE = "repo2rlenv.pipelines.test_synthesis.oracle.differential.probe"
PROBE_PATH = payload_dir(PROBE_PACKAGE) / "probe.py"
CHECK_ROUNDS = 3
CONFIRM_RUNS = 1  # extra runs of A for the calls that distinguish
CONFIRM_RUNS_RANDOM = 3  # ... when other calls of the batch gave different results on each run of A
# A replay given less than this of a search's time left would skip nearly every call it was handed.
MIN_REPLAY_SEC = 2.0
# The part of the search's share its harvest may run tests for (the replays and the written test's check
# get the rest).
HARVEST_PART = 0.5

Variant = Literal["A", "B"]
R = TypeVar("R", bound=BaseModel)


class Runner(Protocol):
    """Runs ``python <argv...>`` in a fresh copy of one version of the repo and returns ``{scratch}/out.json``.

    The working directory is the repo root and its import root is on PYTHONPATH; ``files`` (name ->
    text) are written into a scratch directory whose path replaces ``{scratch}`` in ``argv``. Raises
    TimeoutError when the command ran out of time (the oracle then gives up on this candidate only).
    """

    def __call__(self, variant: Variant, argv: list[str], files: dict[str, str]) -> str: ...


class NoOracle(StrEnum):
    """Why no differential oracle was produced."""

    NO_DISTINGUISHING_INPUT = "no distinguishing input found"
    PROBE_FAILED = "probe failed"
    NOT_SEPARATED = "generated tests did not separate the versions"
    TOO_LONG = "oracle exceeds the line budget"
    WRONG_TYPE_ONLY = "only wrong-type errors of made-up inputs tell the versions apart"


class Origin(StrEnum):
    """Where a call came from."""

    RECORDED = "recorded"  # seen while the existing tests ran
    PERTURBED = "perturbed"  # a recorded call with one value changed
    GENERATED = "generated"  # built from the parameters' annotations


_ORIGIN_RANK = {Origin.RECORDED: 0, Origin.PERTURBED: 1, Origin.GENERATED: 2}


def probe_sources() -> dict[str, str]:
    """File name -> text of every probe file."""
    return payload_files(PROBE_PACKAGE)


class InputSource(StrEnum):
    """Where an oracle's inputs came from, strongest first; all but `guessed` keep the parameters' types."""

    RECORDED = "recorded"  # calls the existing tests make
    PERTURBED = "perturbed"  # those with one value changed within its type
    GENERATED = "generated"  # grids of each parameter's annotation, default or inferred type
    GUESSED = "guessed"  # some parameter had no known type: ints, None and "" were tried in it


TYPE_CONSISTENT = frozenset({InputSource.RECORDED, InputSource.PERTURBED, InputSource.GENERATED})


class Distinguishing(BaseModel):
    """A call on which the versions differ, with both outcomes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    call: CallSpec
    origin: Origin
    outcome_a: Outcome
    outcome_b: Outcome
    facets: list[str] = Field(description="Parts of A's outcome that are stable and differ on B.")


DIAGNOSIS_PREFIX = "diagnosis: "
# The kind of `Diagnosis.opaque_differences` whose values name the run (an object's id, a temporary path).
RUN_SPECIFIC = "text naming the run"
DETAIL_LIMIT = 500  # what a candidate keeps of a skip detail (candidates.Candidate.drop)
SKIP_KEY_LIMIT = 60  # what a tight diagnosis keeps of each reason a call was skipped


class Diagnosis(BaseModel):
    """What the search saw, to tell why it found nothing (or what it found) without rerunning it.

    A candidate dropped for "no distinguishing input found" carries it as its skip detail
    (`as_detail`; ``oracle.misses`` reads it back).
    """

    model_config = ConfigDict(extra="forbid")

    harvested: int = Field(0, description="Distinct calls recorded from the covering tests.")
    tried: int = Field(0, description="Calls replayed (recorded + perturbed/generated).")
    entries: list[str] = Field(default_factory=list, description="`module:qualname` of the functions called.")
    skipped: dict[str, int] = Field(default_factory=dict, description="Calls seen but not recorded, by why.")
    outcomes: dict[str, int] = Field(default_factory=dict, description="Kinds of A's outcomes over every replayed call.")
    errors: list[str] = Field(default_factory=list, description="A few reasons why inputs could not be re-created.")
    opaque_differences: dict[str, int] = Field(
        default_factory=dict, description="Calls where A and B differ only in values a test cannot write, by type."
    )
    b_not_returning: int = Field(0, description="Calls that return or raise on A but time out or break on B.")
    unstable: int = Field(0, description="Calls whose two runs on A differ in every facet that B changes.")
    cut: bool = Field(False, description="The search stopped at its time share (`Limits.search_sec`) before "
                                         "replaying every call it had.")

    def as_detail(self, limit: int = DETAIL_LIMIT) -> str:
        """The skip detail carrying this diagnosis, at most ``limit`` characters (the longest lists cut first)."""
        compact = self.model_copy(update={
            "skipped": _top(self.skipped, 4), "opaque_differences": _top(self.opaque_differences, 3),
            "errors": [e[:80] for e in self.errors[:1]], "entries": self.entries[:3],
        })
        # Shorter and shorter until it fits, so that it stays JSON that `misses` can read back (a cut one is lost:
        # transitions' skip reasons name long classes, and cutting them off took the counts after them too).
        tighter = [
            {"errors": [], "entries": self.entries[:1]},
            {"skipped": {k[:SKIP_KEY_LIMIT]: v for k, v in _top(self.skipped, 2).items()}, "entries": []},
            {"skipped": {}, "opaque_differences": _top(self.opaque_differences, 1)},
        ]
        text = DIAGNOSIS_PREFIX + compact.model_dump_json()
        for update in tighter:
            if len(text) <= limit:
                break
            compact = compact.model_copy(update=update)
            text = DIAGNOSIS_PREFIX + compact.model_dump_json()
        return text[:limit]


def _top(counts: dict[str, int], n: int) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n])


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
    diagnosis: Diagnosis = Field(default_factory=Diagnosis)
    inputs: InputSource | None = Field(None, description="Where the weakest of the tests' inputs came from.")
    behaviours: int = Field(0, description="Distinct behaviours the tests assert (differing facets' values on A and B).")


class Limits(BaseModel):
    """Time limits of replays (the runner's own wall clock is the outer bound)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    call_timeout: float = Field(2.0, gt=0, description="Seconds one replayed call may run.")
    # Past this, the remaining calls of one replay are skipped rather than run.
    replay_timeout: float = Field(120.0, gt=0, description="Seconds one replay of many calls may run.")
    # Issue 34, item 1: on a library whose calls or tests are slow (a parser building grammars) one search took
    # minutes and mostly found nothing. Its harvest may run tests for HARVEST_PART of this, and its replays
    # share what is left, each an equal part; the calls past it are skipped.
    search_sec: float = Field(0.0, ge=0, description="Seconds the search (harvest and replays) may take, "
                                                     "counted from its start (0: no limit).")


class ProbeFailed(Exception):
    """The probe could not do its job (import error of the target, unreadable output)."""


class _Probe:
    """Runs probe modes through the runner and reads their reports."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.sources = probe_sources()

    def _run(self, variant: Variant, mode: str, spec: dict, model: type[R]) -> R:
        argv = ["{scratch}/probe.py", mode, "--spec", "{scratch}/spec.json", "--out", "{scratch}/out.json"]
        try:
            text = self.runner(variant, argv, {**self.sources, "spec.json": json.dumps(spec, sort_keys=True)})
        except TimeoutError as exc:  # this candidate's tests or calls are too slow: its problem, not the run's
            raise ProbeFailed(f"{mode} on {variant}: {exc}") from exc
        try:
            report = read_report(model, text)
        except ValidationError as exc:
            raise ProbeFailed(f"{mode} on {variant}: unreadable report: {exc.errors()[:1]}") from exc
        error = getattr(report, "error", None)
        if error:
            raise ProbeFailed(f"{mode} on {variant}: {error}")
        return report

    def harvest(self, target_file: str, module: str, qualname: str, tests: list[str],
                time_limit: float = 0.0) -> HarvestReport:
        spec = {"target_file": target_file, "module": module, "qualname": qualname, "tests": tests,
                "time_limit": time_limit}
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


# A test that needs a tolerance tighter than pytest.approx's default is fragile: choose it last.
FINE_TOLERANCE_COST = 20


def _cost(call: CallSpec, case: TestCase) -> int:
    parts = [*call.args, *call.kwargs.values()] + ([call.receiver] if call.receiver else [])
    parts += [v for step in call.steps for v in (*step.args, *step.kwargs.values())]
    cost = sum(size(p) for p in parts) + len(call.steps) + (size(case.expected.value) if case.expected.value else 0)
    return cost + (FINE_TOLERANCE_COST if case.approx_rel is not None else 0)


# Exceptions that usually mean the call was wrong, not that the function documents it (an int where a
# string belongs raises AttributeError): an oracle asserts them only when nothing else tells B apart, and
# only for calls the suite itself made (issue 34: `LazyObject(0).__setattr__(0, 0)` raising "'int' object
# is not callable" tested no job of the function; a made-up input of the wrong type is no behaviour).
INCIDENTAL_EXCEPTIONS = frozenset({"builtins.AttributeError", "builtins.TypeError"})


def incidental(c: _Candidate) -> bool:
    a = c.found.outcome_a
    return a.kind is OutcomeKind.RAISE and f"{a.exc_module}.{a.exc_qualname}" in INCIDENTAL_EXCEPTIONS


def usable(c: _Candidate) -> bool:
    """Whether a case may be asserted at all: not a wrong-type error of an input the search made up."""
    return not incidental(c) or c.found.origin is Origin.RECORDED


def behaviour(c: _Candidate) -> tuple:
    """What a case asserts: the differing facets' values on A and on B. Two cases with the same behaviour
    are near-duplicates (`order_total([], …) == 0.0` three times over) whatever their inputs."""
    a, b = c.found.outcome_a.facets(), c.found.outcome_b.facets()
    # repr of the dumped value, not its JSON: a lone surrogate in a string is a value JSON cannot hold.
    return tuple((f, repr(a[f].model_dump()) if f in a else None, repr(b[f].model_dump()) if f in b else None)
                 for f in sorted(c.found.facets))


def select(candidates: list[_Candidate], max_tests: int) -> list[_Candidate]:
    """Real calls first, then cheap ones; one per kind of outcome difference before any second of a kind,
    never two of the same behaviour; calls whose outcome on A is an incidental exception only when no other
    call distinguishes, and only when the suite made them."""
    candidates = [c for c in candidates if usable(c)]
    documented = [c for c in candidates if not incidental(c)]
    candidates = documented or candidates
    ordered = sorted(candidates, key=lambda c: (_ORIGIN_RANK[c.found.origin], c.cost, c.index))
    picked: list[_Candidate] = []
    seen: set[tuple] = set()
    behaviours: set[tuple] = set()
    for c in ordered:
        kind = (c.found.outcome_a.kind, c.found.outcome_b.kind, tuple(f.split(":")[0] for f in c.found.facets))
        if kind not in seen and len(picked) < max_tests:
            seen.add(kind)
            behaviours.add(behaviour(c))
            picked.append(c)
    taken = {c.index for c in picked}
    for c in ordered:
        if len(picked) >= max_tests:
            break
        if c.index not in taken and behaviour(c) not in behaviours:
            behaviours.add(behaviour(c))
            picked.append(c)
    return sorted(picked, key=lambda c: (_ORIGIN_RANK[c.found.origin], c.index))


class _Search:
    """Replays batches of calls on A (twice, then again for the hits) and on B; keeps the distinguishing ones
    and notes in a `Diagnosis` what the others showed."""

    def __init__(self, probe: _Probe, module: str, qualname: str, entries: dict[str, TargetRef], limits: Limits,
                 deadline: float | None = None) -> None:
        self.probe = probe
        self.module = module
        self.qualname = qualname
        self.entries = entries
        self.limits = limits
        self.deadline = deadline
        self.tried = 0
        self.diagnosis = Diagnosis(entries=sorted(entries))

    def _share(self, replays: int, *, past_deadline: bool) -> Limits | None:
        """The limits of the next `replays` replays: each an equal part of the search's time left (never more
        than `replay_timeout`, nor less than MIN_REPLAY_SEC); None, and the diagnosis marked cut, when none is
        left, unless the batch runs `past_deadline`."""
        if self.deadline is None:
            return self.limits
        left = self.deadline - time.monotonic()
        if left <= 0 and not past_deadline:
            self.diagnosis.cut = True
            return None
        part = min(self.limits.replay_timeout, max(MIN_REPLAY_SEC, left / replays))
        return self.limits.model_copy(update={"replay_timeout": part})

    def _entry(self, call: CallSpec) -> TargetRef | None:
        return self.entries.get(call.entry) if call.entry else None

    def run(self, calls: list[CallSpec], origin: Origin, *, past_deadline: bool = False) -> list[_Candidate]:
        if not calls:
            return []
        # One share for the three replays, so each reaches about as far in the calls as the others.
        limits = self._share(3, past_deadline=past_deadline)
        if limits is None:
            return []
        a1 = self.probe.replay("A", self.module, self.qualname, calls, limits)
        if any(o.kind is OutcomeKind.SKIPPED for o in a1):
            self.diagnosis.cut = True
        a2 = self.probe.replay("A", self.module, self.qualname, calls, limits)
        b = self.probe.replay("B", self.module, self.qualname, calls, limits)
        hits = []
        unstable = self.diagnosis.unstable
        for i, (call, x, y, z) in enumerate(zip(calls, a1, a2, b)):
            self._note(x, y, z)
            if judge(x, y, z).differing:
                hits.append(i)
        # Two equal runs of A can be chance (a random pick among few options): more runs of the hits confirm
        # them, more of them when this batch showed randomness elsewhere.
        rounds = CONFIRM_RUNS if self.diagnosis.unstable == unstable else CONFIRM_RUNS_RANDOM
        again = [self.probe.replay("A", self.module, self.qualname, [calls[i] for i in hits], self.limits)
                 for _ in range(rounds if hits else 0)]
        out = []
        for j, i in enumerate(hits):
            call, x, z = calls[i], a1[i], b[i]
            verdict = judge(x, a2[i], z)
            for run in again:
                verdict = confirmed(verdict, x, run[j])
            if verdict.differing:
                case = make_case(call, x, z, verdict, self._entry(call))
                found = Distinguishing(call=call, origin=origin, outcome_a=x, outcome_b=z, facets=verdict.differing)
                out.append(_Candidate(index=self.tried + i, found=found, case=case, cost=_cost(call, case)))
            else:
                self.diagnosis.unstable += 1
        self.tried += len(calls)
        return out

    def _note(self, a1: Outcome, a2: Outcome, b: Outcome) -> None:
        diag = self.diagnosis
        diag.outcomes[a1.kind.value] = diag.outcomes.get(a1.kind.value, 0) + 1
        if a1.kind is OutcomeKind.ERROR and len(diag.errors) < 3 and a1.message not in diag.errors:
            diag.errors.append(a1.message or "")
        if a1.kind in (OutcomeKind.RETURN, OutcomeKind.RAISE) and b.kind in (OutcomeKind.TIMEOUT, OutcomeKind.ERROR):
            diag.b_not_returning += 1
        if judge(a1, a2, b).differing:
            return
        raw = judge(a1, a2, b, concrete=False)
        if raw.differing:
            facets = a1.facets(concrete=False)
            for kind in sorted({str(facets[k].type or k) for k in raw.differing if not is_concrete(facets[k])}):
                diag.opaque_differences[kind] = diag.opaque_differences.get(kind, 0) + 1
        elif run_specific(a1, a2, b):  # stable once object identities are numbered, but only as the probe wrote it
            diag.opaque_differences[RUN_SPECIFIC] = diag.opaque_differences.get(RUN_SPECIFIC, 0) + 1
        elif a1.kind is a2.kind and judge(a1, a1, b, concrete=False).differing:
            diag.unstable += 1  # B differs from A only where A's own two runs disagree


def _recorded(harvest: HarvestReport, target_key: str) -> list[CallSpec]:
    calls = []
    for entry in harvest.entries:
        for record in entry.calls:
            calls.append(record.call if entry.key == target_key else record.call.model_copy(update={"entry": entry.key}))
    return calls


def _extra_calls(
    harvest: HarvestReport, recorded: list[CallSpec], target_key: str, lits: Literals, budget: int, seed: int
) -> list[CallSpec]:
    """Perturbed (or generated) calls of each entry, the budget shared between the entries."""
    entries: list[EntryReport] = list(harvest.entries)
    if not entries:
        return []
    share = max(1, budget // len(entries))
    out: list[CallSpec] = []
    for entry in entries:
        own = [c for c in recorded if (c.entry or target_key) == entry.key]
        extra = candidate_calls(own, entry.target, entry.module, lits, budget=share, seed=seed)
        tag = None if entry.key == target_key else entry.key
        out += [c.model_copy(update={"entry": tag}) for c in extra]
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
    (tests are checked there). Exceptions raised by ``runner`` itself propagate, except TimeoutError (a probe
    failure of this candidate).
    """
    probe = _Probe(runner)
    limits = limits or Limits()
    deadline = time.monotonic() + limits.search_sec if limits.search_sec else None
    target_key = f"{module}:{qualname}"
    search: _Search | None = None
    recorded: list[CallSpec] = []
    try:
        harvest = probe.harvest(target_file, module, qualname, covering_tests,
                                limits.search_sec * HARVEST_PART)
        if harvest.target is None:
            raise ProbeFailed("harvest: the target was not described")
        entries = {e.key: TargetRef(module=e.module, qualname=e.qualname, info=e.target) for e in harvest.entries}
        search = _Search(probe, module, qualname, entries, limits, deadline)
        search.diagnosis.skipped = dict(harvest.skipped)
        search.diagnosis.cut = harvest.cut
        recorded = _recorded(harvest, target_key)
        # The recorded calls are what the harvest paid for, and few: they are replayed even when the harvest
        # used the whole share.
        found = search.run(recorded, Origin.RECORDED, past_deadline=True)
        untyped: list[str] = []
        if not found:
            name = qualname.rsplit(".", 1)[-1]
            lits = source_literals(function_source_a, name, harvest.target.constants)
            harvest, untyped = _with_inferred_types(harvest, target_key, function_source_a, name)
            extra = _extra_calls(harvest, recorded, target_key, lits, budget, seed)
            found = search.run(extra, Origin.PERTURBED if recorded else Origin.GENERATED)
    except ProbeFailed as exc:
        diagnosis = search.diagnosis if search is not None else Diagnosis()
        return DifferentialResult(found=False, reason=NoOracle.PROBE_FAILED, detail=str(exc), diagnosis=diagnosis)
    search.diagnosis.harvested, search.diagnosis.tried = len(recorded), search.tried
    counts = {"harvested": len(recorded), "tried": search.tried, "n_distinguishing": len(found), "diagnosis": search.diagnosis}
    if not found:
        detail = search.diagnosis.as_detail()
        return DifferentialResult(found=False, reason=NoOracle.NO_DISTINGUISHING_INPUT, detail=detail, **counts)
    if not any(usable(c) for c in found):
        return DifferentialResult(found=False, reason=NoOracle.WRONG_TYPE_ONLY, detail=(
            f"{len(found)} distinguishing call(s), each raising {', '.join(sorted(INCIDENTAL_EXCEPTIONS))} on A "
            "for an input the search made up"), **counts)
    target = TargetRef(module=module, qualname=qualname, info=harvest.target)
    result = _write_checked(probe, target, found, max_tests, max_loc, test_path, counts)
    if result.found:
        result.inputs = _input_source([d.origin for d in result.distinguishing], guessed=bool(untyped))
    return result


def _input_source(origins: list[Origin], *, guessed: bool) -> InputSource:
    """The weakest source among the chosen calls' origins."""
    if Origin.GENERATED in origins:
        return InputSource.GUESSED if guessed else InputSource.GENERATED
    return InputSource.PERTURBED if Origin.PERTURBED in origins else InputSource.RECORDED


def _with_inferred_types(harvest: HarvestReport, target_key: str, source: str, name: str) -> tuple[HarvestReport, list[str]]:
    """The harvest with the target's unannotated, undefaulted parameters annotated by how its body uses them
    (`infer`), and the names of those still without a type (generated calls then guess)."""
    entries = []
    untyped: list[str] = []
    for entry in harvest.entries:
        if entry.key != target_key:
            entries.append(entry)
            continue
        bare = [p.name for p in entry.target.params if p.annotation is None and not p.has_default
                and p.kind not in (ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD)]
        types = inferred_types(source, name, bare)
        untyped = [p for p in bare if p not in types]
        params = [p.model_copy(update={"annotation": types[p.name]}) if p.name in types else p for p in entry.target.params]
        entries.append(entry.model_copy(update={"target": entry.target.model_copy(update={"params": params})}))
    return harvest.model_copy(update={"entries": entries}), untyped


def _write_checked(
    probe: _Probe,
    target: TargetRef,
    found: list[_Candidate],
    max_tests: int,
    max_loc: int,
    test_path: str,
    counts: dict,
) -> DifferentialResult:
    """Write the chosen tests and keep only those that pass on A and fail on B, re-choosing a few times."""
    rejected: set[int] = set()
    detail = None
    for _ in range(CHECK_ROUNDS):
        chosen = select([c for c in found if c.index not in rejected], max_tests)
        if not chosen:
            break
        try:
            written = write_test_file(target, [c.case for c in chosen], max_loc=max_loc)
        except ValueError as exc:  # a value that cannot be written here (a lambda's name clashes)
            rejected.update(c.index for c in chosen[-1:])
            detail = str(exc)
            continue
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
                behaviours=len({behaviour(c) for c in chosen}),
                **counts,
            )
        rejected.update(c.index for c, _ in bad)
        detail = "; ".join(
            f"{name}: {on_a.results.get(name, 'missing')} on A, {on_b.results.get(name, 'missing')} on B" for _, name in bad
        )
        detail += "".join(f"; collection: {err[-300:]}" for err in on_a.collection_errors[:1])
    return DifferentialResult(found=False, reason=NoOracle.NOT_SEPARATED, detail=detail, **counts)
