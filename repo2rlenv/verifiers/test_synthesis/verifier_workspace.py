"""Pristine copies of the repository for grading: the manifest check, the staged A tree, each run's copy.

The agent worked in the workspace and may have left anything there: edited sources, a `conftest.py`,
a `sitecustomize.py`, pytest config. Grading never runs in the workspace. The files listed in
`workspace_manifest.json` (A as built into the image) are checked against their sha256 and staged once;
every run then gets a fresh copy of that stage, the variant's patched files and the submission — and
nothing else the agent wrote. A manifest file whose content changed means the workspace was tampered
with: the reward is 0 and the reason says which file.

Every copy is built the same way: the staged A (hard links to root's read-only files when the runs are
unprivileged), then the files its variant changes (all variants change the same files: every copy holds
the same set), then the submission; every file and directory has one fixed mtime.

Stdlib only: this file is copied verbatim into every task's `tests/` directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

try:
    from . import verifier_patch as vpatch
except ImportError:  # run as a script from /tests: the modules are plain siblings
    import verifier_patch as vpatch  # type: ignore[no-redef]

# 2001-09-09T01:46:40Z for every file and directory of every copy: no variant is "newer".
FIXED_MTIME = 1_000_000_000
MAX_SUBMISSION_BYTES = 1_000_000
# Files an agent could add to change how pytest or Python start; reported when found outside the manifest.
STARTUP_NAMES = frozenset({"conftest.py", "sitecustomize.py", "usercustomize.py", "pytest.ini", "setup.cfg",
                           "tox.ini", "pyproject.toml", ".pth"})
SKIP_DIRS = frozenset({".git", "__pycache__", ".venv", "venv", "node_modules", ".tox", ".nox", ".mypy_cache",
                       ".pytest_cache", ".ruff_cache", ".eggs"})


class WorkspaceError(Exception):
    """The workspace cannot be graded as given (tampered or missing files); the message is the reason."""


def safe_join(root: Path, relpath: str) -> Path:
    """`root/relpath` for a plain relative path; WorkspaceError for absolute paths or '..'."""
    try:
        vpatch.check_relpath(relpath)
    except vpatch.PatchError as exc:
        raise WorkspaceError(str(exc)) from exc
    return root / relpath


def read_manifest(path: Path) -> dict[str, str]:
    """{relpath: sha256} from a workspace manifest file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise ValueError(f"{path.name}: expected {{'files': {{relpath: sha256}}}}")
    for rel in files:
        vpatch.check_relpath(rel)
    return files


def read_submission(workspace: Path, relpath: str) -> bytes | None:
    """The submission's bytes, or None when it is missing; WorkspaceError when it is not a plain file."""
    path = safe_join(workspace, relpath)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise WorkspaceError(f"submission {relpath} is not a regular file")
    if st.st_size > MAX_SUBMISSION_BYTES:
        raise WorkspaceError(f"submission {relpath} is larger than {MAX_SUBMISSION_BYTES} bytes")
    return path.read_bytes()


def stage_workspace(workspace: Path, manifest: dict[str, str], stage: Path, *, exempt: str) -> None:
    """Copy the manifest's files from `workspace` into `stage`, checking each against its sha256."""
    for rel, digest in sorted(manifest.items()):
        if rel == exempt:
            continue
        src = safe_join(workspace, rel)
        try:
            st = os.stat(src)  # follows a symlink that was part of A; its content is still checked
        except FileNotFoundError:
            raise WorkspaceError(f"workspace tampered: {rel} is missing") from None
        if not stat.S_ISREG(st.st_mode):  # a FIFO or device would hang or flood the read
            raise WorkspaceError(f"workspace tampered: {rel} is not a regular file")
        data = src.read_bytes()
        if hashlib.sha256(data).hexdigest() != digest.lower():
            raise WorkspaceError(f"workspace tampered: {rel} differs from the manifest")
        dest = stage / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        os.chmod(dest, 0o755 if st.st_mode & 0o111 else 0o644)


def stage_archive(archive: Path, manifest: dict[str, str], stage: Path, *, exempt: str) -> None:
    """Stage A from the pristine archive shipped in tests/: exactly the manifest's files, each checked
    against its sha256 (the archive is the task's own; a mismatch is an internal error, not the agent's)."""
    import tarfile

    wanted = {rel: digest for rel, digest in manifest.items() if rel != exempt}
    seen: set[str] = set()
    with tarfile.open(archive, mode="r:xz") as tar:
        for member in tar:
            rel = member.name
            if not member.isfile() or rel not in wanted or rel in seen:
                raise ValueError(f"pristine archive: unexpected member {rel!r}")
            handle = tar.extractfile(member)
            data = handle.read() if handle else b""
            if hashlib.sha256(data).hexdigest() != wanted[rel].lower():
                raise ValueError(f"pristine archive: {rel} differs from the manifest")
            dest = safe_join(stage, rel)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
            os.chmod(dest, 0o755 if member.mode & 0o111 else 0o644)
            seen.add(rel)
    missing = sorted(set(wanted) - seen)
    if missing:
        raise ValueError(f"pristine archive: {len(missing)} files of the manifest missing, e.g. {missing[0]}")


def changed_files(workspace: Path, manifest: dict[str, str], *, exempt: str, limit: int = 50) -> list[str]:
    """A's files the workspace no longer holds as built (changed, removed, not regular): first `limit`."""
    found: list[str] = []
    for rel, digest in sorted(manifest.items()):
        if rel == exempt:
            continue
        try:
            path = safe_join(workspace, rel)
            st = os.stat(path)
            same = stat.S_ISREG(st.st_mode) and hashlib.sha256(path.read_bytes()).hexdigest() == digest.lower()
        except (OSError, WorkspaceError):
            same = False
        if not same:
            found.append(rel)
            if len(found) >= limit:
                break
    return found


def ignored_files(workspace: Path, manifest: dict[str, str], submission: str, limit: int = 50) -> tuple[list[str], int]:
    """Workspace files outside the manifest that could affect a run (never copied); first `limit` and the count."""
    found: list[str] = []
    count = 0
    for dirpath, dirnames, filenames in os.walk(workspace):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            rel = os.path.relpath(os.path.join(dirpath, name), workspace).replace(os.sep, "/")
            if rel in manifest or rel == submission:
                continue
            if name in STARTUP_NAMES or name.endswith((".py", ".pth")):
                count += 1
                if len(found) < limit:
                    found.append(rel)
    return found, count


def remove_tree(path: Path) -> None:
    """Delete a tree a test run may have left unreadable (chmod 000 dirs): restore access as needed."""
    def retry(func, failed, _exc) -> None:  # type: ignore[no-untyped-def]
        for target in {os.path.dirname(failed), failed}:
            try:
                os.chmod(target, 0o700)
            except OSError:
                pass
        func(failed)

    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    elif sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=retry)
    else:
        shutil.rmtree(path, onerror=retry)


def decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def variant_files(stage: Path, diff_text: str) -> dict[str, bytes | None]:
    """The files a diff changes relative to the staged A (relpath → new bytes, None = deleted)."""
    paths = vpatch.touched_paths(diff_text)
    current = {p: decode((stage / p).read_bytes()) for p in paths if (stage / p).is_file()}
    changed = vpatch.apply_diff(diff_text, current)
    return {p: (None if text is None else encode(text)) for p, text in changed.items()}


@dataclass(frozen=True, slots=True)
class CopySpec:
    """One run's copy: where, which files differ from the staged A (computed by the builder: twins take
    a few milliseconds each), and for whom."""

    dest: Path
    overrides: Callable[[], dict[str, bytes | None]]
    owner: tuple[int, int] | None


def build_copy(stage: Path, spec: CopySpec, *, submission: tuple[str, bytes], link: bool) -> None:
    """The staged A at `spec.dest`, with the overrides and the submission; fixed mtimes.

    With `link` (the verifier is root and the run is not), unchanged files are hard links to the stage:
    root's files, which the run can read but not change, shared by every copy; a run may still replace
    one in its own copy (the directories are its own). Otherwise every file is copied.
    """
    dest = spec.dest
    remove_tree(dest)
    shutil.copytree(stage, dest, copy_function=os.link if link else shutil.copy)
    for rel, data in spec.overrides().items():
        target = dest / rel
        if target.exists() or target.is_symlink():
            target.unlink()
        if data is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            os.chmod(target, 0o644)
            os.utime(target, (FIXED_MTIME, FIXED_MTIME))
    sub_rel, sub_bytes = submission
    sub = dest / sub_rel
    if sub.exists():
        sub.unlink()
    sub.parent.mkdir(parents=True, exist_ok=True)
    sub.write_bytes(sub_bytes)
    os.utime(sub, (FIXED_MTIME, FIXED_MTIME))
    for dirpath, dirnames, _ in os.walk(dest, topdown=False):
        for path in [os.path.join(dirpath, d) for d in dirnames] + ([dest] if dirpath == str(dest) else []):
            if spec.owner is not None:
                os.chown(path, *spec.owner)
            os.chmod(path, 0o755)
            os.utime(path, (FIXED_MTIME, FIXED_MTIME))


def fix_stage_times(stage: Path) -> None:
    """One mtime for every staged file and directory (the copies' hard links share the files' times)."""
    for dirpath, dirnames, filenames in os.walk(stage, topdown=False):
        for name in filenames + dirnames:
            os.utime(os.path.join(dirpath, name), (FIXED_MTIME, FIXED_MTIME), follow_symlinks=False)


class CopyBuilder:
    """Builds the runs' copies in forked processes while the verifier goes on (the first run starts as
    soon as its copy is ready; the others are built during it). `workers` processes take every
    `workers`-th copy each: making twins and their bytecode is mostly compiling, and a machine has more
    than one core. Processes, not threads: compiling holds the interpreter lock. A process with other
    threads (a host calling `score()`) builds them in place instead, since forking it is unsafe."""

    def __init__(self, stage: Path, specs: list[CopySpec], *, submission: tuple[str, bytes], link: bool,
                 workers: int = 2):
        self.stage, self.specs, self.submission, self.link = stage, specs, submission, link
        self.workers = max(1, min(workers, len(specs)))
        self._pids: list[int] = []
        self._reads: dict[int, int] = {}  # read fd → worker index
        self._done: set[int] = set()
        self._pending: dict[int, bytes] = {}

    def _build(self, i: int) -> None:
        build_copy(self.stage, self.specs[i], submission=self.submission, link=self.link)

    def start(self) -> None:
        if threading.active_count() > 1:
            for i in range(len(self.specs)):
                self._build(i)
            self._done = set(range(len(self.specs)))
            return
        for worker in range(self.workers):
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:  # a builder
                code = 0
                try:
                    os.close(read)
                    for i in range(worker, len(self.specs), self.workers):
                        self._build(i)
                        os.write(write, f"+{i}\n".encode())
                except BaseException as exc:
                    os.write(write, b"!" + f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")[:4000])
                    code = 1
                finally:
                    os._exit(code)
            os.close(write)
            self._pids.append(pid)
            self._reads[read] = worker

    def wait(self, count: int) -> None:
        """Block until the first `count` copies are built; WorkspaceError if building failed."""
        import select

        while not set(range(count)) <= self._done:
            if not self._reads:
                raise WorkspaceError("building a copy failed: the builders exited")
            ready, _, _ = select.select(list(self._reads), [], [])
            for fd in ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    del self._reads[fd]
                    os.close(fd)
                    continue
                data = self._pending.get(fd, b"") + chunk
                if b"!" in data:
                    self.close()
                    raise WorkspaceError("building a copy failed: "
                                         + data[data.index(b"!") + 1:].decode("utf-8", "replace"))
                *lines, rest = data.split(b"\n")
                self._pending[fd] = rest
                self._done |= {int(line[1:]) for line in lines if line.startswith(b"+")}

    def close(self) -> None:
        """Stop the builders (copies not built by now are not needed) and reap them."""
        for pid in self._pids:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        self._pids = []
        for fd in self._reads:
            os.close(fd)
        self._reads = {}
