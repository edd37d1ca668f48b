"""Environments keyed by dependency spec: one image (or venv) per distinct set of dependency files.

Older commits can need older dependencies, but most neighbouring commits share their dependency files.
An environment's key is a digest of the install plan's dependency files (their names and bytes),
everything in the plan that changes what gets built (install commands, build variables such as pretend
versions, the base image: `InstallPlan.environment_inputs`) and what the sandbox adds on its own (the base
image's id, interpreter, CA bundle).
The first tree seen with a key builds the environment; every later tree with the same key starts a
session of it with its own files swapped into the workspace. Editable installs point at the workspace
(Docker) or at the build tree's copy (local), and the session's import roots come first on PYTHONPATH
anyway, so the code under test is always the session's own tree.

The test runner is the one dependency we add ourselves (`install.TOOL_REQUIREMENTS`), and the one a
commit's suite is most sensitive to: a suite configured to turn warnings into errors stops collecting
under a pytest newer than the one it was developed with. So when a tree pins pytest itself (`pytest==X`
among the test requirements the plan installs, else in its `uv.lock`) the environment uses that version.

Environments are cached twice: in the pool for the run, and by the sandbox under the key (an image tag, a
venv directory), so a rerun builds nothing it already built. A key whose build failed is remembered for
the run and fails fast.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from repo2rlenv.errors import SandboxError
from repo2rlenv.sandbox.base import Sandbox, Session
from repo2rlenv.sandbox.install import InstallPlan, plan_install

# A requirement line pinning pytest exactly (extras and an environment marker allowed).
_PYTEST_PIN = re.compile(r"^\s*pytest\s*(?:\[[^\]]*\])?\s*==\s*([\w.!+-]+)\s*(?:;.*)?$", re.IGNORECASE)


class EnvironmentBuildError(SandboxError):
    """The environment of a dependency spec could not be built (its dependencies do not install)."""

    @classmethod
    def of(cls, cause: SandboxError | str, output: str = "") -> "EnvironmentBuildError":
        err = cls(str(cause))
        err.output = getattr(cause, "output", "") or output  # the whole build log travels with it
        return err


@runtime_checkable
class KeyedEnvironments(Protocol):
    """What a sandbox offers to build and open environments by key (Docker and local sandboxes do)."""

    def plan_environment(self, tree_dir: Path) -> InstallPlan:
        """The plan of `tree_dir` as this sandbox builds it (its --base-image and version hint applied)."""
        ...

    def environment_salt(self, plan: InstallPlan) -> str:
        """What besides the dependency files decides an environment (base image, interpreter, …)."""
        ...

    def build_environment(self, key: str, tree_dir: Path, plan: InstallPlan) -> str:
        """Build the environment `key` from `tree_dir`, or find it already built; returns its handle."""
        ...

    def open_environment(self, handle: str, tree_dir: Path) -> Session:
        """A warm session of the environment `handle` whose workspace holds exactly `tree_dir`'s files."""
        ...


def file_hashes(root: Path) -> dict[str, str]:
    """Relative POSIX path → sha256 of every file under `root` (what a workspace swap compares)."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def pinned_pytest(tree_dir: Path, plan: InstallPlan) -> str | None:
    """The pytest version `tree_dir` pins: among the plan's test requirements, else in uv.lock."""
    for dep in plan.test_requirements:
        if found := _PYTEST_PIN.match(dep.spec):
            return found[1]
    lock = tree_dir / "uv.lock"
    if lock.is_file():
        try:
            packages = tomllib.loads(lock.read_text(encoding="utf-8")).get("package", [])
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            return None
        versions = {p.get("version") for p in packages if isinstance(p, dict) and p.get("name") == "pytest"}
        if len(versions) == 1:  # a lock resolving pytest differently per platform pins nothing usable
            return versions.pop()
    return None


def environment_plan(tree_dir: Path, *, version_hint: str | None = None, base_image: str | None = None) -> InstallPlan:
    """The install plan of `tree_dir`, with its own pytest pin (if any) instead of the tool default."""
    plan = plan_install(tree_dir, version_hint=version_hint, base_image=base_image)
    version = pinned_pytest(tree_dir, plan)
    if version is None:
        return plan
    # Only the tools step (the last) is ours to change; the repo's own lines already say what they say.
    tools = [f"pytest=={version}" if re.match(r"pytest\b(?!-)", arg) else arg for arg in plan.pip_installs[-1]]
    return plan.model_copy(update={"pip_installs": [*plan.pip_installs[:-1], tools]})


def dependency_key(tree_dir: Path, plan: InstallPlan, salt: str) -> str:
    """16 hex digits naming the environment `plan` needs for `tree_dir`."""
    digest = hashlib.sha256()
    for name in sorted(plan.dependency_files):
        digest.update(name.encode() + b"\0" + hashlib.sha256((tree_dir / name).read_bytes()).digest())
    digest.update(plan.environment_inputs().encode() + b"\0" + salt.encode())
    return digest.hexdigest()[:16]


@dataclass(slots=True)
class EnvSession:
    """A session for one tree, with that tree's own install plan and its environment's key."""

    session: Session
    plan: InstallPlan
    key: str

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> "EnvSession":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(slots=True)
class EnvironmentRecord:
    """One environment of a run: where it lives, the tree that built it, the trees that used it."""

    key: str
    handle: str
    built_from: str
    trees: list[str] = field(default_factory=list)
    sessions: int = 0

    def to_json(self) -> dict[str, object]:
        return {"key": self.key, "handle": self.handle, "built_from": self.built_from, "trees": len(self.trees),
                "sessions": self.sessions}


@dataclass
class EnvironmentPool:
    """Hands out sessions per tree, building one environment per distinct dependency key."""

    sandbox: Sandbox
    records: dict[str, EnvironmentRecord] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    failure_output: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.sandbox, KeyedEnvironments):
            raise SandboxError(f"the {self.sandbox.name} sandbox cannot build environments per dependency spec")

    @property
    def _backend(self) -> KeyedEnvironments:
        return self.sandbox  # type: ignore[return-value]

    def key_for(self, tree_dir: Path) -> tuple[str, InstallPlan]:
        """The environment key of `tree_dir` and its install plan."""
        plan = self._backend.plan_environment(tree_dir)
        return dependency_key(tree_dir, plan, self._backend.environment_salt(plan)), plan

    def session_for(self, tree_dir: Path) -> EnvSession:
        """A session on `tree_dir` in the environment of its dependency spec (built on first use).

        Raises `EnvironmentBuildError` when that environment cannot be built (now or earlier in the run).
        """
        key, plan = self.key_for(tree_dir)
        if key in self.failures:
            raise EnvironmentBuildError.of(self.failures[key], self.failure_output.get(key, ""))
        record = self.records.get(key)
        if record is None:
            try:
                handle = self._backend.build_environment(key, tree_dir, plan)
            except SandboxError as exc:
                self.failures[key] = str(exc)
                self.failure_output[key] = getattr(exc, "output", "") or ""
                raise EnvironmentBuildError.of(exc) from exc
            record = self.records[key] = EnvironmentRecord(key=key, handle=handle, built_from=tree_dir.name)
        session = self._backend.open_environment(record.handle, tree_dir)
        record.sessions += 1
        if tree_dir.name not in record.trees:
            record.trees.append(tree_dir.name)
        return EnvSession(session=session, plan=plan, key=key)

    def summary(self) -> list[dict[str, object]]:
        """Every environment this pool used, in first-use order."""
        return [record.to_json() for record in self.records.values()]
