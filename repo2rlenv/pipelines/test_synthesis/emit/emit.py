"""Write one Harbor task directory (DESIGN §4) for a candidate with a verified oracle.

The task is written into a hidden staging dir next to its final place and renamed when complete, so a
dataset never holds half a task and a killed run can be resumed. Templates live in
`repo2rlenv/harbor_templates/`; the verifier files are copied verbatim from `repo2rlenv/verifiers/`.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from importlib import resources
from pathlib import Path
from string import Template

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv import atomic
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.dataset import difficulty
from repo2rlenv.dataset.difficulty import DifficultyFeatures
from repo2rlenv.dataset import leaks
from repo2rlenv.dataset.change_record import ChangeRecord
from repo2rlenv.dataset.task_toml import (
    AgentSection,
    EnvironmentSection,
    Metadata,
    OracleOrigin,
    Repo2EnvMeta,
    TaskInfo,
    TaskToml,
    TestSynthesisMeta,
    VerifierSection,
    origin_of_kind,
)
from repo2rlenv.sandbox.dockerfile import render_dockerfile
from repo2rlenv.sandbox.install import InstallPlan
from repo2rlenv.dataset.taskdir import TaskPaths
from repo2rlenv.verifiers.bundle import install_verifier, workspace_manifest, write_pristine_archive
from repo2rlenv.verifiers.test_synthesis.verifier_version import VERIFIER_VERSION


class TaskSpec(BaseModel):
    """Everything that decides a task's files."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    test_path: str = Field(description="Where the agent writes its tests, relative to /workspace.")
    repo: str
    repo_slug: str
    ref: str | None
    pipeline_version: str
    candidate: Candidate
    oracle_source: str
    oracle_kind: str
    oracle_origin: OracleOrigin | None = Field(
        None, description="Who wrote the oracle: human, differential or model (task.toml's oracle_origin); "
                          "None: the one `oracle_kind` implies.")
    oracle_attempts: int = 1
    oracle_inputs: str | None = Field(None, description="Where the oracle's inputs came from (task.toml's oracle_inputs).")
    b_crashes: bool = Field(False, description="The oracle's calls alone, nothing asserted, catch B (it raises where A returns).")
    synthesis_llm: str | None = None
    twin_kinds: list[str] = Field(description="the twin kinds checked for this task (twins.checked_kinds)")
    sibling_diffs: list[str] = Field(default_factory=list)
    existing_test_files: list[str] = Field(default_factory=list)
    verifier_config: dict = Field(description="verifier_config.json contents.")
    base_image: str
    install: InstallPlan
    generated_files: dict[str, str] = Field(
        default_factory=dict, description="Files the environment's build writes (a VCS _version.py): written into "
                                          "the task's repo, so the manifest and every verifier copy hold them.")


def task_hash(repo_slug: str, ref: str | None, cand: Candidate) -> str:
    """8 hex digits, stable for the same candidate of the same repo+ref."""
    return hashlib.sha256(f"{repo_slug}\0{ref or ''}\0{cand.candidate_id}\0{cand.diff}".encode()).hexdigest()[:8]


def task_id_for(repo_slug: str, ref: str | None, cand: Candidate) -> str:
    return f"{repo_slug}-ts-{task_hash(repo_slug, ref, cand)}"


def _template(name: str) -> Template:
    return Template(resources.files("repo2rlenv.harbor_templates").joinpath(name).read_text())


def _difficulty(spec: TaskSpec) -> DifficultyFeatures:
    cand = spec.candidate
    parts = cand.function.qualname.split(".")
    # A constructor is called by its class's name.
    name = parts[-2] if parts[-1] == "__init__" and len(parts) > 1 else parts[-1]
    return difficulty.features(changed_line_run_by_suite=bool(cand.line_tests), b_crashes=spec.b_crashes,
                               covering_tests=len(cand.covering_tests), oracle_source=spec.oracle_source,
                               function_name=name, siblings=len(spec.sibling_diffs))


def render_task_dockerfile(base_image: str, plan: InstallPlan) -> str:
    """The task image: the same install steps as the sandbox image the task was checked in (the tools
    line is a no-op on the base image unless the repo pins its own pytest)."""
    return render_dockerfile("repo2rlenv.harbor_templates", "Dockerfile", plan, base_image)


def _no_network(options: TestSynthesisOptions, cand: Candidate) -> bool:
    """Whether the agent runs without network: asked for, or (`auto`) a real change whose fix is upstream."""
    return options.agent_network == "no-network" or (options.agent_network == "auto" and cand.strategy == "commit_pair")


def build_task_toml(spec: TaskSpec, options: TestSynthesisOptions) -> TaskToml:
    cand = spec.candidate
    func = cand.function
    meta = TestSynthesisMeta(
        strategy=cand.strategy, touched_function=func.key,
        mutation_kind=cand.mutation_kind, operator=cand.operator, commit=cand.commit,
        baseline_coverage=round(cand.baseline.fraction if cand.baseline else 1.0, 4),
        baseline_full_coverage=bool(cand.baseline and not cand.baseline.uncovered),
        reward_mode=options.reward_mode, coverage_weight=options.coverage_weight,
        min_new_tests=options.min_new_tests, max_test_loc=options.max_test_loc,
        oracle_kind=spec.oracle_kind, oracle_origin=spec.oracle_origin or origin_of_kind(spec.oracle_kind), oracle_attempts=spec.oracle_attempts, oracle_inputs=spec.oracle_inputs,
        test_path=spec.test_path,
        existing_test_files=spec.existing_test_files,
        twin_kinds=spec.twin_kinds, siblings=len(spec.sibling_diffs), mutation_weight=options.mutation_weight,
        difficulty=_difficulty(spec),
    )
    content = hashlib.sha256(json.dumps(
        [spec.task_id, cand.diff, spec.oracle_source, spec.verifier_config, spec.sibling_diffs],
        sort_keys=True).encode()).hexdigest()
    keywords = ["test-generation", "python", "pytest", cand.strategy]
    separate = options.harbor_verifier == "separate"
    return TaskToml(
        task=TaskInfo(name=f"repo2rlenv/{spec.task_id}",
                      description=f"Write pytest tests that pin down {func.qualname} in {func.path} of {spec.repo}.",
                      keywords=keywords),
        metadata=Metadata(difficulty=difficulty.label(meta.difficulty), keywords=keywords, repo2env=Repo2EnvMeta(
            pipeline_version=spec.pipeline_version, repo=spec.repo, ref=spec.ref, content_hash=content,
            synthesis_llm=spec.synthesis_llm, verifier_version=VERIFIER_VERSION, test_synthesis=meta)),
        agent=AgentSection(timeout_sec=options.agent_timeout_sec,
                           network_mode="no-network" if _no_network(options, cand) else None),
        verifier=VerifierSection(timeout_sec=options.verifier_timeout_sec,
                                 environment_mode="separate" if separate else None),
        environment=EnvironmentSection(build_timeout_sec=900, cpus=max(1.0, options.cpus),
                                       memory_mb=options.memory_mb, storage_mb=10240),
        artifacts=[f"/workspace/{spec.test_path}"] if separate else [],
    )


def render_instruction(spec: TaskSpec, options: TestSynthesisOptions) -> str:
    func = spec.candidate.function
    return _template("instruction.md").substitute(
        qualname=func.qualname, path=func.path, signature=func.signature, test_path=spec.test_path,
        module=func.module, import_name=func.qualname.split(".")[0],
        min_new_tests=options.min_new_tests, max_test_loc=options.max_test_loc)


def _audit(spec: TaskSpec, seen: str) -> None:
    """Raise `InstructionLeak` when what the agent reads tells it where or what B is."""
    cand = spec.candidate
    lines = [*([cand.line] if cand.line else []), *spec.verifier_config.get("coverage_targets", [])]
    found = leaks.audit(seen, diff=cand.diff, lines=lines, operator=cand.operator)
    if found:
        raise leaks.InstructionLeak(f"what the agent reads tells about B: {', '.join(found)}")


def render_solve(spec: TaskSpec) -> str:
    source = spec.oracle_source if spec.oracle_source.endswith("\n") else spec.oracle_source + "\n"
    if "R2E_ORACLE_EOF" in source:
        raise ValueError("oracle source contains the heredoc terminator")
    return _template("solve.sh").substitute(test_path=spec.test_path, oracle_source=source)


def write_task(spec: TaskSpec, options: TestSynthesisOptions, a_dir: Path, tasks_root: Path) -> TaskPaths:
    """Write the task into a staging dir and publish it at tasks_root/<task_id>."""
    staging = atomic.staging_dir(tasks_root, spec.task_id)
    try:
        paths = TaskPaths(staging)
        paths.task_toml.write_text(build_task_toml(spec, options).to_toml())
        instruction = render_instruction(spec, options)
        paths.instruction.write_text(instruction)
        paths.environment.mkdir()
        shutil.copytree(a_dir, paths.repo, symlinks=True,
                        ignore=shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", ".coverage*"))
        for rel, text in spec.generated_files.items():
            target = paths.repo / rel
            if paths.repo.resolve() in target.resolve().parents and not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
        paths.dockerfile.write_text(render_task_dockerfile(spec.base_image, spec.install))
        _audit(spec, instruction + paths.dockerfile.read_text())
        install_verifier(paths.tests)
        paths.broken_patch.write_text(spec.candidate.diff)
        cand = spec.candidate
        if cand.strategy == "commit_pair" and cand.commit:
            change = ChangeRecord.of(cand.commit, cand.change_subject,
                                     [(cand.notes_a, cand.notes_change), (cand.tests_a, dict(cand.tests_change))])
            paths.change.write_text(change.model_dump_json(indent=1) + "\n")
        if spec.sibling_diffs:
            paths.siblings.mkdir()
            for i, diff in enumerate(spec.sibling_diffs, 1):
                (paths.siblings / f"{i:02d}.diff").write_text(diff)
        repo_files = [p.relative_to(paths.repo).as_posix() for p in paths.repo.rglob("*") if p.is_file()]
        paths.workspace_manifest.write_text(workspace_manifest(paths.repo, repo_files).model_dump_json(indent=1))
        config = dict(spec.verifier_config)
        archive = config.get("pristine_archive")
        if archive and not write_pristine_archive(paths.repo, repo_files, paths.tests / archive):
            config["pristine_archive"] = None  # too large to ship: A is staged from the workspace instead
        paths.verifier_config.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        paths.solution.mkdir()
        paths.solve_sh.write_text(render_solve(spec))
        paths.solve_sh.chmod(0o755)
        (paths.solution / Path(spec.test_path).name).write_text(spec.oracle_source)
        final = tasks_root / spec.task_id
        atomic.publish_dir(staging, final)
        return TaskPaths(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
