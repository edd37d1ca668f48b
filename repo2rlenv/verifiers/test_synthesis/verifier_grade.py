"""Grading: the submission's checks, the variants and their twins, the runs, the reward's publication.

`verifier.py` (the entry point) starts the runs' zygote first and then hands over to `grade()` here; the
reward is always written (`reward.txt`, one float, and `reward-details.json`, the breakdown), last and
atomically; any failure is a reward of 0 and a reason.

A grading:
1. the submission must exist, be UTF-8, at most `max_test_loc` non-blank lines and lint-clean;
2. A's files are checked against the manifest and staged; B and the siblings are A with their diffs;
3. the twins are planned (`verifier_twins`) and the copies built in the background, one per run: A,
   `twin_runs` rewrites of A (A′), as many of B (B′), one of each sibling, each from a fresh seed;
4. A runs first, alone (it alone records coverage, when the task has coverage targets). When no case
   of it can earn anything, grading stops there;
5. every other run starts at once, in a random order, each with its own uid, copy and dirs, released
   together. The runs that run together are as many A′ as B′: runs that compare their behaviour learn
   which half they are in, and only A's behaviour (what an honest test asserts) says which half is A;
6. the rules of `verifier_reward` turn the outcomes into the reward.

Layout: this file orchestrates; `verifier_config` (the config), `verifier_lint` (static checks),
`verifier_workspace` (manifest, stage, copies), `verifier_twins` (A′, B′), `verifier_bytecode` (pycs),
`verifier_run` (jobs and batches), `verifier_layout` (the scratch tree, started first),
`verifier_launch` (the zygote or subprocesses), `verifier_zygote` (inside a run), `verifier_guard` and
`verifier_kernel` (a run's barrier), `verifier_outcomes` (its pytest plugin), `verifier_results` (what
a run produced), `verifier_reward` (the rules) and `verifier_patch` (diffs). Stdlib + pytest
only; copied verbatim into every task.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

try:
    from . import verifier_bytecode as vbytecode
    from . import verifier_config as vconfig
    from . import verifier_launch as vlaunch
    from . import verifier_layout as vlayout
    from . import verifier_lint as vlint
    from . import verifier_native as vnative
    from . import verifier_results as vres
    from . import verifier_reward as vreward
    from . import verifier_run as vrun
    from . import verifier_twins as vtwins
    from . import verifier_workspace as vws
except ImportError:  # run as a script from /tests: the modules are plain siblings
    import verifier_bytecode as vbytecode  # type: ignore[no-redef]
    import verifier_config as vconfig  # type: ignore[no-redef]
    import verifier_launch as vlaunch  # type: ignore[no-redef]
    import verifier_layout as vlayout  # type: ignore[no-redef]
    import verifier_lint as vlint  # type: ignore[no-redef]
    import verifier_native as vnative  # type: ignore[no-redef]
    import verifier_results as vres  # type: ignore[no-redef]
    import verifier_reward as vreward  # type: ignore[no-redef]
    import verifier_run as vrun  # type: ignore[no-redef]
    import verifier_twins as vtwins  # type: ignore[no-redef]
    import verifier_workspace as vws  # type: ignore[no-redef]

Config = vconfig.Config
read_config = vconfig.read_config
CONFIG_SCHEMA_VERSION = vconfig.CONFIG_SCHEMA_VERSION
# reward-details.json format. 1: first version. 2: `runner` (zygote or subprocess) and each variant's `via`.
# 3: twins (variants are runs: A, A′k, B′k, Sj′1), guard state and refusals per run, n_tests, kills.
# 4: mutation_score; coverage.kind, oracle_lines, covered_oracle_lines (the graded reward).
# 5: restored_workspace_files (A graded from the pristine archive), strays_killed (processes stopped first).
DETAILS_SCHEMA_VERSION = 6
REWARD_FILE = "reward.txt"
DETAILS_FILE = "reward-details.json"
# Harbor prefers reward.json when present: we never write it and delete any a test may have planted.
FOREIGN_REWARD_FILES = ("reward.json",)


class ZeroReward(Exception):
    """Grading stops with reward 0; the message is the reason recorded in the details."""


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


# =========================================================================== the submission

def _checked_submission(details: dict[str, Any], cfg: Config, workspace: Path, run_lint: bool) -> bytes:
    """The submission's bytes, once it exists, is UTF-8 (as Python reads it too), short enough and
    lint-clean (else ZeroReward)."""
    raw = vws.read_submission(workspace, cfg.submission)
    if raw is None:
        raise ZeroReward(f"missing submission: {cfg.submission}")
    # Python decodes a file with the encoding its first lines declare (PEP 263): under any other than
    # UTF-8 the text Python runs is not the text the lint and the line count read, so none is accepted.
    encoding = vlint.declared_encoding(raw)
    if encoding not in ("utf-8", "utf-8-sig"):
        raise ZeroReward(f"submission declares the source encoding {encoding!r}: only UTF-8 is accepted")
    try:
        source = raw.decode(encoding)
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


# =========================================================================== the variants and their twins

class Variants:
    """A, B and the siblings as files over the stage, and the twins of each."""

    def __init__(self, cfg: Config, stage: Path, tests_dir: Path):
        diffs = {"B": cfg.variants.broken, **{f"S{i}": d for i, d in enumerate(cfg.variants.siblings, 1)}}
        self.changed = {name: vws.variant_files(stage, vws.safe_join(tests_dir, d).read_text(encoding="utf-8"))
                        for name, d in diffs.items()}
        self.protected = sorted({rel for files in self.changed.values() for rel in files})
        self.a = {rel: (stage / rel).read_bytes() if (stage / rel).is_file() else None for rel in self.protected}
        self.kinds = frozenset(cfg.twin_kinds)
        self.names = ["A", *diffs]
        self.plans: dict[str, vtwins.FilePlan] = {}
        for rel in self.protected:
            texts = [self.files(name).get(rel) for name in self.names]
            if not rel.endswith(".py") or any(t is None for t in texts):
                continue  # deleted or added by a variant, or not Python: used as it is
            try:
                self.plans[rel] = vtwins.plan_file(rel, [vws.decode(t) for t in texts])  # type: ignore[arg-type]
            except vtwins.TwinError:
                continue

    def files(self, name: str) -> dict[str, bytes | None]:
        """Every protected file as variant `name` has it."""
        return dict(self.a) if name == "A" else {**self.a, **self.changed[name]}

    def twin(self, name: str, seed: int | None, run_root: Path) -> dict[str, bytes | None]:
        """Variant `name`'s protected files, twinned from `seed` (None: the variant itself), with the
        checked-hash pyc of each Python one (the stage has none of the protected files'): one compile
        per file, which checks the twin and gives its bytecode."""
        files = self.files(name)
        codes: dict[str, Any] = {}
        if seed is not None:
            rng = random.Random(seed)
            index = self.names.index(name)
            for rel, plan in self.plans.items():
                text, codes[rel] = vtwins.twin_code(vws.decode(files[rel]), plan.units[index],  # type: ignore[arg-type]
                                                    plan.references[index], rng=rng, kinds=self.kinds,
                                                    filename=str(run_root / rel))
                files[rel] = vws.encode(text)
        out = dict(files)
        for rel, data in files.items():
            if rel.endswith(".py") and not vbytecode.pytest_rewrites(rel):
                out[vbytecode.pyc_relpath(rel)] = None if data is None else vbytecode.pyc_bytes(
                    data, run_root / rel, codes.get(rel))
        return out


# =========================================================================== grading

def _hide(paths: list[Path], details: dict[str, Any]) -> dict[Path, int]:
    """chmod 0700 the workspace and the tests dir, for kernels without Landlock (which hides them anyway)."""
    modes = {}
    for path in paths:
        try:
            mode = os.stat(path).st_mode & 0o7777
            os.chmod(path, 0o700)
            modes[path] = mode
        except OSError as exc:  # e.g. a read-only mount: grade anyway, and say so
            details["isolation"]["note"] += f"; could not hide {path}: {exc.strerror}"
    return modes


def _isolation(details: dict[str, Any], launcher: vlaunch.Launcher, layout: vrun.Layout,
               runs: list[vrun.Run]) -> tuple[int, int] | None:
    """Whether the runs can drop privileges: we are root and nobody (standing for their uids) can use the
    interpreter."""
    details["isolation"] = {"uid": os.getuid(), "dropped_privileges": False, "note": "verifier is not root"}
    owner = vlayout.run_owner()
    if owner is None:
        return None
    problem = vrun.probe(launcher, layout, owner)
    if problem is None:
        details["isolation"] = {"uid": runs[0].owner[0] if runs[0].owner else vlayout.NOBODY,
                                "dropped_privileges": True, "note": "a uid of its own for each run"}
        return owner
    details["isolation"]["note"] = f"uid {vlayout.NOBODY} cannot run {launcher.python}: {problem}"
    return None


def _measures_coverage(cfg: Config) -> bool:
    return bool(cfg.coverage_targets or cfg.oracle_lines)


def _plan_runs(cfg: Config, variants: Variants, layout: vrun.Layout, owner: tuple[int, int] | None,
               rng: random.Random) -> list[tuple[vrun.Run, str, int | None]]:
    """(run, variant, twin seed) for A, its twins, B's and one twin of each sibling: A first, the others in
    a random order. Their dirs are made, their copies built and their processes forked in that order, so
    nothing ordered (inode numbers, pids, file times) lines up with which variant a run has."""
    plan: list[tuple[str, str, int | None]] = [(f"A′{k}", "A", rng.getrandbits(64)) for k in range(1, cfg.twin_runs + 1)]
    plan += [(f"B′{k}", "B", rng.getrandbits(64)) for k in range(1, cfg.twin_runs + 1)]
    plan += [(f"S{i}′1", f"S{i}", rng.getrandbits(64)) for i in range(1, len(cfg.variants.siblings) + 1)]
    rng.shuffle(plan)
    plan.insert(0, ("A", "A", None))
    owners = vlayout.run_owners(len(plan), rng) if owner is not None else [None] * len(plan)
    return [(vrun.Run(label, layout.new_run(rng, who), who, traced=(label == "A" and _measures_coverage(cfg))),
             variant, seed) for (label, variant, seed), who in zip(plan, owners)]


def _grade(details: dict[str, Any], scratch: vlayout.Scratch, config_path: Path, run_lint: bool,
           rng: random.Random, clock: float) -> None:
    try:
        _grade_with(details, scratch, config_path, run_lint, rng, clock)
    finally:
        details["runner"] = {"via": scratch.launcher.via.value, "note": scratch.launcher.note}
        zygote = scratch.launcher.zygote
        if zygote is not None and zygote.native is not None:
            details.setdefault("native", {})["interpreter"] = zygote.native


def _grade_with(details: dict[str, Any], scratch: vlayout.Scratch, config_path: Path, run_lint: bool,
                rng: random.Random, clock: float) -> None:
    workspace, tests_dir, layout, launcher = scratch.workspace, scratch.tests_dir, scratch.layout, scratch.launcher
    cfg = read_config(config_path)
    details.update(reward_mode=cfg.reward_mode, coverage_weight=cfg.coverage_weight,
                   mutation_weight=cfg.mutation_weight, submission=cfg.submission,
                   target=f"{cfg.target_file}::{cfg.target_qualname}")
    raw = _checked_submission(details, cfg, workspace, run_lint)
    details["timings"]["lint"] = round(time.monotonic() - clock, 3)
    manifest = vws.read_manifest(tests_dir / cfg.manifest)
    if cfg.target_file not in manifest:
        raise ValueError(f"target_file {cfg.target_file} is not in the manifest")
    details["ignored_workspace_files"], details["ignored_workspace_file_count"] = vws.ignored_files(
        workspace, manifest, cfg.submission)
    if cfg.pristine_archive is not None:
        # A comes from tests/ (copied in after the agent finished), so grading in the agent's own container
        # does not depend on what the agent did to A's files; what it changed is reported, not graded.
        details["restored_workspace_files"] = vws.changed_files(workspace, manifest, exempt=cfg.submission)
        vws.stage_archive(tests_dir / cfg.pristine_archive, manifest, layout.stage, exempt=cfg.submission)
    else:
        vws.stage_workspace(workspace, manifest, layout.stage, exempt=cfg.submission)
    variants = Variants(cfg, layout.stage, tests_dir)
    modules = [m for m in vbytecode.modules_to_compile(layout.stage, cfg.target_file, [], list(cfg.import_roots))
               if m not in variants.protected]
    details["precompiled_modules"] = len(vbytecode.compile_stage(layout.stage, layout.stage, modules))
    vws.fix_stage_times(layout.stage)
    # The project's own extension modules: each run maps the allowed ones of its copy before its barrier.
    stage_real = os.path.realpath(layout.stage)
    in_copy = vnative.inventory([stage_real], expose=cfg.native_exposed)
    native = tuple(os.path.relpath(p, stage_real) for p in vnative.allowed_paths(in_copy))
    details.setdefault("native", {})["copy"] = {os.path.relpath(p, stage_real): why
                                                for p, (verdict, why) in in_copy.items() if verdict != "allowed"}
    # The target needs ctypes (or cffi) at import: the runs map it, and the submission can reach it too.
    details["native"]["exposed"] = sorted(set(cfg.native_exposed)
                                          & (set(vnative.MEMORY_PRIMITIVES) | set(vnative.RAW_ADDRESS_LIBRARIES)))
    owner = vlayout.run_owner()
    planned = _plan_runs(cfg, variants, layout, owner, rng)

    def start_builder(link: bool) -> vws.CopyBuilder:
        def overrides(variant: str, seed: int | None, root: Path) -> Callable[[], dict[str, bytes | None]]:
            return lambda: variants.twin(variant, seed, root)

        specs = [vws.CopySpec(run.dirs.ws, overrides(variant, seed, run.dirs.ws), run.owner)
                 for run, variant, seed in planned]
        made = vws.CopyBuilder(layout.stage, specs, submission=(cfg.submission, raw), link=link)
        made.start()
        return made

    # The copies are built while the probe waits for the zygote, and during A's run; hard links to the
    # stage only when the runs drop privileges (a root run could write through one into every copy).
    builder = start_builder(link=owner is not None)
    modes: dict[Path, int] = {}
    runner = None
    runs = [run for run, _, _ in planned]
    results: dict[str, vres.RunResult] = {}
    try:
        if _isolation(details, launcher, layout, runs) is None and owner is not None:
            builder.close()  # the run uids cannot use the interpreter: every run as ourselves, no links
            for run, _, _ in planned:
                run.owner = None
            builder = start_builder(link=False)
        runner = vrun.Runner(layout, launcher, vrun.Limits(cfg.run_timeout_sec, cfg.memory_mb,
                                                           case_timeout_sec=cfg.case_timeout_sec),
                             list(cfg.import_roots), cfg.submission, cfg.target_file, variants.protected,
                             vrun.readable_roots(layout, launcher.python, scratch.hidden),
                             plugins=tuple(cfg.pytest_plugins), native=native, expose=cfg.native_exposed)
        details["timings"]["prepare"] = round(time.monotonic() - clock, 3)
        if runs[0].owner is not None:
            modes = _hide(scratch.hidden, details)
        builder.wait(1)
        results.update({r.variant: r for r in runner.run_batch(runs[:1])})
        if _worth_going_on(results["A"], cfg):
            builder.wait(len(planned))
            details["timings"]["copies"] = round(time.monotonic() - clock, 3)
            results.update({r.variant: r for r in runner.run_batch(runs[1:])})
    finally:
        builder.close()
        if runner is not None:
            runner.end()
        for path, mode in modes.items():
            os.chmod(path, mode)
    terms = vreward.Terms(cfg.reward_mode, cfg.coverage_weight, cfg.min_new_tests, cfg.coverage_targets,
                          cfg.mutation_weight, cfg.oracle_lines)
    for run in runs:
        results.setdefault(run.name, vres.RunResult(run.name, vres.Status.not_run))
    in_order = sorted(planned, key=lambda p: p[0].name)  # A, A′…, B′…, S…′: the details read in that order
    named = [r.name for r, _, _ in in_order]
    grouped = vreward.Runs(results["A"], [results[n] for n in named if n.startswith("A′")],
                           [results[n] for n in named if n.startswith("B′")],
                           [[results[n] for n in named if n.startswith(f"S{i}′")]
                            for i in range(1, len(cfg.variants.siblings) + 1)])
    details["variants"] = [_run_details(results[r.name], variant) for r, variant, _ in in_order]
    details["timings"]["runs"] = {r.name: results[r.name].seconds for r, _, _ in in_order}
    details["timings"]["run_cpu"] = {r.name: results[r.name].cpu for r, _, _ in in_order if results[r.name].cpu is not None}
    details["twins"] = {"files": sorted(variants.plans), "kinds": sorted(variants.kinds),
                        "runs_per_side": cfg.twin_runs}
    details.update(vreward.compute(grouped, terms))
    a = results["A"]
    details["cases"] = [{"id": c, "outcomes": {r.name: results[r.name].outcome(c).value for r, _, _ in in_order}}
                        for c in (a.collected or [])]
    covered = set(a.covered or [])
    kind = "oracle" if cfg.reward_mode == "gated" and cfg.oracle_lines else "targets" if cfg.coverage_targets else "none"
    details["coverage"] = {"targets": sorted(cfg.coverage_targets),
                           "covered_targets": sorted(covered & set(cfg.coverage_targets)),
                           "covered_function_lines": sorted(covered & set(cfg.function_lines)),
                           "oracle_lines": sorted(cfg.oracle_lines),
                           "covered_oracle_lines": sorted(covered & set(cfg.oracle_lines)),
                           "kind": kind, "measured": a.covered is not None}


def _worth_going_on(a: vres.RunResult, cfg: Config) -> bool:
    """Whether the other runs can change the reward: some case of A passes and A's cases count."""
    try:
        cases = vreward.cases_of(a, cfg.min_new_tests)
    except vreward.Zero:
        return False
    return any(a.outcome(c) == vres.Outcome.passed for c in cases)


def _run_details(result: vres.RunResult, variant: str) -> dict[str, Any]:
    return {"name": result.variant, "variant": variant, "status": result.status.value, "seconds": result.seconds,
            "returncode": result.returncode, "n_cases": len(result.cases),
            "collect_errors": result.collect_errors[:5], "leftover_processes": result.leftover_processes,
            "via": result.via, "guard": result.guard, "refusals": result.refusals, "output_tail": result.output_tail}


def grade(scratch: vlayout.Scratch | None, failure: BaseException | None, tests_dir: Path, logs_dir: Path, *,
          config: Path | None = None, run_lint: bool = True, rng: random.Random | None = None,
          start: float | None = None, strays_killed: int | None = None) -> dict[str, Any]:
    """Grade with the runs' processes in `scratch` (None when it could not be set up: `failure` says why);
    writes reward.txt + reward-details.json into `logs_dir` and returns the details. `strays_killed`:
    processes the agent left behind that test.sh's verifier stopped first (None: not looked for)."""
    start = time.monotonic() if start is None else start
    tests_dir, logs_dir = Path(tests_dir), Path(logs_dir)
    logs_dir.mkdir(parents=True, exist_ok=True)
    _remove_reward_files(logs_dir)
    details: dict[str, Any] = {
        "schema_version": DETAILS_SCHEMA_VERSION, "reward": 0.0, "reason": None, "reward_mode": None,
        "coverage_weight": None, "mutation_weight": None, "b_pass": None, "b_fail": None, "cov": None,
        "mutation_score": None, "n_cases": 0, "n_tests": 0,
        "kills": {}, "cases": [], "lint": [], "variants": [], "timings": {},
    }
    if strays_killed is not None:
        details["strays_killed"] = strays_killed
    try:
        if scratch is None:
            raise failure or RuntimeError("no scratch dir")
        _grade(details, scratch, Path(config or tests_dir / "verifier_config.json"), run_lint,
               rng or random.SystemRandom(), start)
    except ZeroReward as zero:
        details.update(reward=0.0, reason=str(zero), fault="submission")
    except vws.WorkspaceError as exc:
        details.update(reward=0.0, reason=str(exc), fault="submission")
    except Exception as exc:  # the verifier must always write a reward: 0 with the reason
        # Not the submission's doing (what it controls is read defensively): a scorer reports no reward.
        details.update(reward=0.0, reason=f"internal error: {type(exc).__name__}: {exc}", fault="verifier")
    details["timings"]["total"] = round(time.monotonic() - start, 3)
    publish(logs_dir, details)
    return details
