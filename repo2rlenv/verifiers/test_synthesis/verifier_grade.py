"""Grading: the config, the variant runs, the reward arithmetic and its publication.

`verifier.py` (the entry point) starts the runs' zygote first and then hands over to `grade()` here;
the reward is always written (`reward.txt`, one float, and `reward-details.json`, the breakdown), last
and atomically; any failure is a reward of 0 and a reason.

Reward. Cases are the submission's pytest node ids (parametrized cases one by one, from JUnit XML).
- b_pass = fraction of cases passing on A and on A′ (a behaviour-preserving rewrite of A);
- b_fail = of those passing cases, the fraction failing on B — averaged over B and each sibling mutant.
  (Counting only cases that pass on A means a failing-everywhere case cannot buy b_fail: with the
  unconditional fraction, one `pass` test plus one `assert False` test would earn 0.25.)
- cov = |lines covered on A ∩ coverage_targets| / |coverage_targets| (1 when there are no targets, and
  then A runs untraced: `coverage.measured` is false);
- gated: b_pass·b_fail·((1−w) + w·cov);   rfc: (1−w)·b_pass·b_fail + w·cov.
Fewer than `min_new_tests` cases, more than `max_test_loc` non-blank lines, any lint finding, a missing
submission or a tampered workspace: reward 0, with the reason in the details.

Layout: this file orchestrates; `verifier_lint` (static checks), `verifier_workspace` (manifest and
copies), `verifier_bytecode` (the copies' pycs), `verifier_run` (isolated pytest runs), `verifier_layout`
(the scratch tree, started first), `verifier_launch` (the run processes: a warm zygote or fresh
subprocesses), `verifier_zygote` (what runs inside them), `verifier_results` (JUnit XML) and
`verifier_patch` (diffs) are its siblings. Stdlib + pytest + coverage only; copied verbatim into every
task.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable

try:
    from . import verifier_bytecode as vbytecode
    from . import verifier_launch as vlaunch
    from . import verifier_layout as vlayout
    from . import verifier_lint as vlint
    from . import verifier_results as vres
    from . import verifier_run as vrun
    from . import verifier_workspace as vws
except ImportError:  # run as a script from /tests: the modules are plain siblings
    import verifier_bytecode as vbytecode  # type: ignore[no-redef]
    import verifier_launch as vlaunch  # type: ignore[no-redef]
    import verifier_layout as vlayout  # type: ignore[no-redef]
    import verifier_lint as vlint  # type: ignore[no-redef]
    import verifier_results as vres  # type: ignore[no-redef]
    import verifier_run as vrun  # type: ignore[no-redef]
    import verifier_workspace as vws  # type: ignore[no-redef]

CONFIG_SCHEMA_VERSION = 1
# reward-details.json format. 1: first version. 2: `runner` (zygote or subprocess) and each variant's `via`.
DETAILS_SCHEMA_VERSION = 2
REWARD_FILE = "reward.txt"
DETAILS_FILE = "reward-details.json"
# Harbor prefers reward.json when present: we never write it and delete any a test may have planted.
FOREIGN_REWARD_FILES = ("reward.json",)
A, A_PRIME, B = "A", "A_prime", "B"
REWARD_MODES = ("gated", "rfc")


# =========================================================================== config

@dataclass(frozen=True, slots=True)
class Variants:
    """Diff files (relative to the tests dir) that turn A into B, A′ and the sibling mutants."""

    broken: str
    aprime: str
    siblings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Config:
    """verifier_config.json (mirrored by the pydantic `VerifierConfig` on the host)."""

    schema_version: int
    submission: str
    target_file: str
    target_qualname: str
    function_lines: tuple[int, ...]
    coverage_targets: tuple[int, ...]
    baseline_full_coverage: bool
    import_roots: tuple[str, ...]
    reward_mode: str
    coverage_weight: float
    min_new_tests: int
    max_test_loc: int
    run_timeout_sec: float
    memory_mb: int
    variants: Variants
    manifest: str


def _check(name: str, value: Any, kind: type | tuple[type, ...]) -> Any:
    if isinstance(value, bool) and kind in (int, float, (int, float)):
        raise ValueError(f"config {name}: expected a number, got a bool")
    if not isinstance(value, kind):
        raise ValueError(f"config {name}: expected {kind}, got {type(value).__name__}")
    return value


def _relpath(name: str, value: Any) -> str:
    vws.safe_join(Path("."), _check(name, value, str))  # raises for absolute paths and '..'
    return value


def read_config(path: Path) -> Config:
    """Strictly parse verifier_config.json: unknown or missing keys and wrong types are errors."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    expected = {f.name for f in fields(Config)}
    if not isinstance(raw, dict) or set(raw) != expected:
        raise ValueError(f"config keys differ from the schema: {sorted(set(raw) ^ expected)}")
    if raw["schema_version"] != CONFIG_SCHEMA_VERSION:
        raise ValueError(f"config schema_version {raw['schema_version']} is not {CONFIG_SCHEMA_VERSION}")
    var = _check("variants", raw["variants"], dict)
    if not {"broken", "aprime"} <= set(var) <= {"broken", "aprime", "siblings"}:
        raise ValueError("config variants: expected broken, aprime and optional siblings")
    ints = lambda key: tuple(_check(key, v, int) for v in _check(key, raw[key], list))  # noqa: E731
    cfg = Config(
        schema_version=raw["schema_version"],
        submission=_relpath("submission", raw["submission"]),
        target_file=_relpath("target_file", raw["target_file"]),
        target_qualname=_check("target_qualname", raw["target_qualname"], str),
        function_lines=ints("function_lines"),
        coverage_targets=ints("coverage_targets"),
        baseline_full_coverage=_check("baseline_full_coverage", raw["baseline_full_coverage"], bool),
        import_roots=tuple(_check("import_roots", r, str) for r in _check("import_roots", raw["import_roots"], list)),
        reward_mode=_check("reward_mode", raw["reward_mode"], str),
        coverage_weight=float(_check("coverage_weight", raw["coverage_weight"], (int, float))),
        min_new_tests=_check("min_new_tests", raw["min_new_tests"], int),
        max_test_loc=_check("max_test_loc", raw["max_test_loc"], int),
        run_timeout_sec=float(_check("run_timeout_sec", raw["run_timeout_sec"], (int, float))),
        memory_mb=_check("memory_mb", raw["memory_mb"], int),
        variants=Variants(_check("broken", var["broken"], str), _check("aprime", var["aprime"], str),
                          tuple(_check("siblings", s, str) for s in _check("siblings", var.get("siblings", []), list))),
        manifest=_check("manifest", raw["manifest"], str),
    )
    if cfg.reward_mode not in REWARD_MODES:
        raise ValueError(f"config reward_mode {cfg.reward_mode!r} is not one of {REWARD_MODES}")
    if not 0.0 <= cfg.coverage_weight <= 1.0:
        raise ValueError("config coverage_weight must be within [0, 1]")
    for root in cfg.import_roots:
        if root:
            _relpath("import_roots", root)
    return cfg


# =========================================================================== reward arithmetic

class ZeroReward(Exception):
    """Grading stops with reward 0; the message is the reason recorded in the details."""


def outcome(result: vres.RunResult, case: str) -> vres.Outcome:
    """A case's outcome in a run; a case a broken run never reported counts as an error there."""
    if result.status == vres.Status.not_run:
        return vres.Outcome.not_run
    if case in result.cases:
        return result.cases[case]
    return vres.Outcome.missing if result.status == vres.Status.ok else vres.Outcome.error


def passed_on(result: vres.RunResult | None) -> set[str]:
    if result is None or result.status == vres.Status.not_run:
        return set()
    return {c for c, o in result.cases.items() if o == vres.Outcome.passed}


def product_is_zero(results: dict[str, vres.RunResult], b_names: list[str]) -> bool:
    """Whether b_pass·b_fail is already known to be 0 from the runs done so far."""
    done = {n for n, r in results.items() if r.status != vres.Status.not_run}
    if A in done and not passed_on(results[A]):
        return True
    if A_PRIME in done and not passed_on(results[A_PRIME]):
        return True
    if {A, A_PRIME} <= done and not passed_on(results[A]) & passed_on(results[A_PRIME]):
        return True
    if A in done and set(b_names) <= done:  # good cases ⊆ cases passing on A
        return not any(outcome(results[b], c) in vres.FAILING for b in b_names for c in passed_on(results[A]))
    return False


def _ran(result: vres.RunResult) -> bool:
    return result.status != vres.Status.not_run


def _zero_reason(cfg: Config, results: dict[str, vres.RunResult], cases: list[str], good: list[str],
                 b_fail: float | None) -> str:
    statuses = ", ".join(f"{n}: {r.status.value}" for n, r in results.items() if _ran(r))
    if not cases:
        return f"no test cases collected (runs: {statuses})"
    if len(cases) < cfg.min_new_tests:
        return f"{len(cases)} test case(s), fewer than min_new_tests={cfg.min_new_tests}"
    a_side = [n for n in (A, A_PRIME) if _ran(results[n])]
    if not a_side or not set.intersection(*(passed_on(results[n]) for n in a_side)):
        return f"no case passes on both A and A′ (runs: {statuses})"
    if not b_fail:
        return "no case that passes on A and A′ fails on B"
    return "none of the coverage targets is covered"


def compute_reward(cfg: Config, results: dict[str, vres.RunResult], b_names: list[str]) -> dict[str, Any]:
    """b_pass, b_fail, cov, the reward and, when it is 0, the reason.

    Variants that were not run (the product b_pass·b_fail was already known to be 0) leave the terms
    they would have decided as None.
    """
    order = [A, A_PRIME, *b_names]
    cases: list[str] = []
    for name in order:
        cases += [c for c in results[name].cases if c not in cases]
    targets = set(cfg.coverage_targets)
    covered = set(results[A].covered or [])
    cov = 1.0 if not targets else len(covered & targets) / len(targets)
    good = [c for c in cases if outcome(results[A], c) == outcome(results[A_PRIME], c) == vres.Outcome.passed]
    b_pass = len(good) / len(cases) if cases and _ran(results[A]) and _ran(results[A_PRIME]) else None
    ran_b = [b for b in b_names if _ran(results[b])]
    b_fail = None
    if good and ran_b:
        b_fail = sum(sum(outcome(results[b], c) in vres.FAILING for c in good) / len(good) for b in ran_b) / len(ran_b)
    product = (b_pass or 0.0) * (b_fail or 0.0)
    w = cfg.coverage_weight
    reward = product * ((1 - w) + w * cov) if cfg.reward_mode == "gated" else (1 - w) * product + w * cov
    if len(cases) < max(1, cfg.min_new_tests):
        reward = 0.0
    reward = round(max(0.0, min(1.0, reward)), 6)
    return {
        "reward": reward, "reason": None if reward > 0 else _zero_reason(cfg, results, cases, good, b_fail),
        "b_pass": None if b_pass is None else round(b_pass, 6),
        "b_fail": None if b_fail is None else round(b_fail, 6), "cov": round(cov, 6) if _ran(results[A]) else None,
        "n_cases": len(cases),
        "cases": [{"id": c, "outcomes": {n: outcome(results[n], c).value for n in order}} for c in cases],
        "coverage": {"targets": sorted(targets), "covered_targets": sorted(covered & targets),
                     "covered_function_lines": sorted(covered & set(cfg.function_lines)),
                     "measured": results[A].covered is not None},
    }


# =========================================================================== output

def _atomic_write(path: Path, text: str) -> None:
    # repo2rlenv.atomic.write_text's twin: the verifier runs inside tasks and may not import the package.
    # mkstemp: O_EXCL with a random name, so nothing planted in the logs dir can redirect the write.
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _remove_reward_files(logs_dir: Path) -> None:
    for name in (REWARD_FILE, DETAILS_FILE, *FOREIGN_REWARD_FILES):
        path = logs_dir / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def publish(logs_dir: Path, details: dict[str, Any]) -> None:
    """Write the details, then the reward: last, atomically, after any file a test may have planted is gone."""
    _remove_reward_files(logs_dir)
    _atomic_write(logs_dir / DETAILS_FILE, json.dumps(details, indent=2, sort_keys=False) + "\n")
    _atomic_write(logs_dir / REWARD_FILE, f"{details['reward']}\n")


# =========================================================================== grading

def _hide(paths: list[Path], details: dict[str, Any]) -> dict[Path, int]:
    """chmod 0700 the workspace and the tests dir so the run uid can read neither A's other copy nor B."""
    modes = {}
    for path in paths:
        try:
            mode = os.stat(path).st_mode & 0o7777
            os.chmod(path, 0o700)
            modes[path] = mode
        except OSError as exc:  # e.g. a read-only mount: grade anyway, and say so
            details["isolation"]["note"] += f"; could not hide {path}: {exc.strerror}"
    return modes


def _checked_submission(details: dict[str, Any], cfg: Config, workspace: Path, run_lint: bool) -> bytes:
    """The submission's bytes, once it exists, is UTF-8, short enough and lint-clean (else ZeroReward)."""
    raw = vws.read_submission(workspace, cfg.submission)
    if raw is None:
        raise ZeroReward(f"missing submission: {cfg.submission}")
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ZeroReward("submission is not UTF-8 text") from None
    details["submission_loc"] = loc = sum(1 for line in source.splitlines() if line.strip())
    if loc > cfg.max_test_loc:
        raise ZeroReward(f"submission has {loc} non-blank lines, more than max_test_loc={cfg.max_test_loc}")
    if run_lint:
        findings = vlint.lint_source(source, cfg.submission)
        details["lint"] = [f.to_dict() for f in findings]
        if findings:
            first = findings[0]
            raise ZeroReward(f"lint: {len(findings)} finding(s); first at line {first.line}: {first.message}")
    return raw


def _isolation(details: dict[str, Any], launcher: vlaunch.Launcher, layout: vrun.Layout) -> tuple[int, int] | None:
    """The uid/gid the runs drop to: 65534 when we are root and that uid can use the interpreter."""
    details["isolation"] = {"uid": os.getuid(), "dropped_privileges": False, "note": "verifier is not root"}
    owner = vlayout.run_owner()
    if owner is None:
        return None
    problem = vrun.probe(launcher, layout, owner)
    if problem is None:
        details["isolation"] = {"uid": vrun.NOBODY, "dropped_privileges": True, "note": ""}
        return owner
    details["isolation"]["note"] = f"uid {vrun.NOBODY} cannot run {launcher.python}: {problem}"
    return None


def _grade(details: dict[str, Any], scratch: vlayout.Scratch, config_path: Path, run_lint: bool,
           rng: random.Random, clock: float) -> None:
    try:
        _grade_with(details, scratch, config_path, run_lint, rng, clock)
    finally:
        details["runner"] = {"via": scratch.launcher.via.value, "note": scratch.launcher.note}


def _grade_with(details: dict[str, Any], scratch: vlayout.Scratch, config_path: Path, run_lint: bool,
                rng: random.Random, clock: float) -> None:
    workspace, tests_dir, layout, launcher = scratch.workspace, scratch.tests_dir, scratch.layout, scratch.launcher
    cfg = read_config(config_path)
    details.update(reward_mode=cfg.reward_mode, coverage_weight=cfg.coverage_weight, submission=cfg.submission,
                   target=f"{cfg.target_file}::{cfg.target_qualname}")
    raw = _checked_submission(details, cfg, workspace, run_lint)
    details["timings"]["lint"] = round(time.monotonic() - clock, 3)
    manifest = vws.read_manifest(tests_dir / cfg.manifest)
    if cfg.target_file not in manifest:
        raise ValueError(f"target_file {cfg.target_file} is not in the manifest")
    details["ignored_workspace_files"], details["ignored_workspace_file_count"] = vws.ignored_files(
        workspace, manifest, cfg.submission)
    vws.stage_workspace(workspace, manifest, layout.stage, exempt=cfg.submission)
    diffs = {A: None, A_PRIME: cfg.variants.aprime, B: cfg.variants.broken}
    diffs.update({f"sibling_{i}": s for i, s in enumerate(cfg.variants.siblings, 1)})
    overrides = {name: ({} if d is None else vws.variant_files(
        layout.stage, vws.safe_join(tests_dir, d).read_text(encoding="utf-8"))) for name, d in diffs.items()}
    changed = sorted({p for o in overrides.values() for p in o})
    compiled = vbytecode.compile_stage(layout.stage, layout.ws, vbytecode.modules_to_compile(
        layout.stage, cfg.target_file, changed, list(cfg.import_roots)))
    details["precompiled_modules"] = len(compiled)
    copies = vws.CopyQueue(layout.stage, layout.ws, layout.spare, submission=(cfg.submission, raw),
                           rewrite=sorted({*changed, *vbytecode.pyc_paths(changed, compiled)}))

    def variant(name: str) -> Callable[[], dict[str, bytes | None]]:
        """What the copy builder writes for `name`: its changed files and their bytecode."""
        return lambda: vbytecode.with_bytecode(overrides[name], compiled, layout.ws)

    order = list(diffs)
    rng.shuffle(order)
    try:
        # The first copy is built while the probe below waits for the zygote, for the uid the runs will
        # most likely have (it is built again in the rare case they do not).
        copies.prepare(order[0], variant(order[0]), vlayout.run_owner())
        owner = _isolation(details, launcher, layout)
        runner = vrun.Runner(layout, launcher, vrun.Limits(cfg.run_timeout_sec, cfg.memory_mb),
                             list(cfg.import_roots), cfg.submission, cfg.target_file, owner=owner)
        details["timings"]["prepare"] = round(time.monotonic() - clock, 3)
        results = _run_variants(details, cfg, runner, copies, variant, order, scratch.hidden)
    finally:
        copies.close()
    b_names = [n for n in diffs if n not in (A, A_PRIME)]
    details["variants"] = [{"name": n, "diff": diffs[n], "order": order.index(n), "status": results[n].status.value,
                            "seconds": results[n].seconds, "returncode": results[n].returncode,
                            "n_cases": len(results[n].cases), "leftover_processes": results[n].leftover_processes,
                            "via": results[n].via, "output_tail": results[n].output_tail} for n in diffs]
    details["timings"]["runs"] = {n: results[n].seconds for n in order}
    details.update(compute_reward(cfg, results, b_names))


def _run_variants(details: dict[str, Any], cfg: Config, runner: vrun.Runner, copies: vws.CopyQueue,
                  variant: Callable[[str], Callable[[], dict[str, bytes | None]]], order: list[str],
                  hidden: list[Path]) -> dict[str, vres.RunResult]:
    """Put each variant's copy at the one shared path and run the submission on it, in `order`, skipping
    runs once b_pass·b_fail is known to be 0 (in rfc mode A still runs: it measures coverage). The copy
    for the next variant in the order is built while a run goes on."""
    b_names = [n for n in order if n not in (A, A_PRIME)]
    results = {n: vres.RunResult(n, vres.Status.not_run) for n in order}
    modes: dict[Path, int] = {}
    try:
        if runner.owner is not None:
            runner.tmp_snapshot = vrun.shared_tmp_snapshot(runner.owner[0])
            modes = _hide(hidden, details)
        for i, name in enumerate(order):
            if product_is_zero(results, b_names) and (cfg.reward_mode == "gated" or name != A):
                continue
            copies.install(name, variant(name), runner.owner)
            if i + 1 < len(order):  # built whether or not this run's outcome will make it needed
                copies.prepare(order[i + 1], variant(order[i + 1]), runner.owner)
            # With no targets cov is 1 whatever runs, so A is not traced (tracing doubles a short run).
            results[name] = runner.run(name, coverage=(name == A and bool(cfg.coverage_targets)))
    finally:
        for path, mode in modes.items():
            os.chmod(path, mode)
    return results


def grade(scratch: vlayout.Scratch | None, failure: BaseException | None, tests_dir: Path, logs_dir: Path, *,
          config: Path | None = None, run_lint: bool = True, rng: random.Random | None = None,
          start: float | None = None) -> dict[str, Any]:
    """Grade with the runs' processes in `scratch` (None when it could not be set up: `failure` says why);
    writes reward.txt + reward-details.json into `logs_dir` and returns the details."""
    start = time.monotonic() if start is None else start
    tests_dir, logs_dir = Path(tests_dir), Path(logs_dir)
    logs_dir.mkdir(parents=True, exist_ok=True)
    _remove_reward_files(logs_dir)
    details: dict[str, Any] = {
        "schema_version": DETAILS_SCHEMA_VERSION, "reward": 0.0, "reason": None, "reward_mode": None,
        "coverage_weight": None, "b_pass": None, "b_fail": None, "cov": None, "n_cases": 0, "cases": [],
        "lint": [], "variants": [], "timings": {},
    }
    try:
        if scratch is None:
            raise failure or RuntimeError("no scratch dir")
        _grade(details, scratch, Path(config or tests_dir / "verifier_config.json"), run_lint,
               rng or random.SystemRandom(), start)
    except ZeroReward as zero:
        details.update(reward=0.0, reason=str(zero))
    except vws.WorkspaceError as exc:
        details.update(reward=0.0, reason=str(exc))
    except Exception as exc:  # the verifier must always write a reward: 0 with the reason
        details.update(reward=0.0, reason=f"internal error: {type(exc).__name__}: {exc}")
    details["timings"]["total"] = round(time.monotonic() - start, 3)
    publish(logs_dir, details)
    return details
