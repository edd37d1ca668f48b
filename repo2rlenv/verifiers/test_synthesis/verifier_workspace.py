"""Pristine copies of the repository for grading: the manifest check, the staged A tree, each run's copy.

The agent worked in the workspace and may have left anything there: edited sources, a `conftest.py`,
a `sitecustomize.py`, pytest config. Grading never runs in the workspace. The files listed in
`workspace_manifest.json` (A as built into the image) are checked against their sha256 and staged once;
every run then gets a fresh copy of that stage, the variant's patched files and the submission — and
nothing else the agent wrote. A manifest file whose content changed means the workspace was tampered
with: the reward is 0 and the reason says which file.

Every copy is built the same way at the same path: all files the variants touch are rewritten in place
in every run, and every file and directory gets one fixed mtime, so a test cannot tell the variants
apart by timestamps, inode order or paths.

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


def _write_in_place(path: Path, data: bytes) -> None:
    # Same inode as the copied file when it exists: variants must not differ in inode order.
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "r+b" if path.exists() else "wb") as fh:
        fh.write(data)
        fh.truncate()


def build_copy(stage: Path, dest: Path, *, overrides: dict[str, bytes | None], rewrite: list[str],
               submission: tuple[str, bytes], owner: tuple[int, int] | None) -> None:
    """A fresh tree at `dest`: the staged A, then `overrides`, then the submission; fixed mtimes.

    `rewrite` lists every path any variant touches: those are rewritten in every copy (with this variant's
    content, or A's), so all copies are produced by the same sequence of writes.
    """
    remove_tree(dest)
    shutil.copytree(stage, dest, copy_function=shutil.copy)
    for rel in rewrite:
        target = dest / rel
        data = overrides.get(rel, (stage / rel).read_bytes() if (stage / rel).is_file() else None)
        if data is None:
            if target.exists():
                target.unlink()
        else:
            _write_in_place(target, data)
    sub_rel, sub_bytes = submission
    _write_in_place(dest / sub_rel, sub_bytes)
    for dirpath, dirnames, filenames in os.walk(dest, topdown=False):
        for name in filenames + dirnames:
            path = os.path.join(dirpath, name)
            if owner is not None:
                os.chown(path, *owner, follow_symlinks=False)
            if name in dirnames:
                os.chmod(path, 0o755)
            os.utime(path, (FIXED_MTIME, FIXED_MTIME), follow_symlinks=False)
    if owner is not None:
        os.chown(dest, *owner)
    os.chmod(dest, 0o755)
    os.utime(dest, (FIXED_MTIME, FIXED_MTIME))


class CopyQueue:
    """Copies built one ahead. While a run goes on at `ws`, a forked process builds the next variant's
    copy in `spare` (root-only: no run can reach it); `install` then swaps it in at `ws` with two renames,
    once the run has ended. A copy of a mid-sized repository takes 15-20 ms to build, and its changed
    modules' bytecode as long again; this way only the first copy is waited for, and it is built while
    the zygote warms up. A process, not a thread: compiling holds the interpreter lock for tens of ms,
    which would hold up the run's launch. A process with other threads (a host calling `score()`) builds
    in place instead, since forking it is unsafe. Used copies move to `spare` and go with the scratch dir."""

    def __init__(self, stage: Path, ws: Path, spare: Path, *, rewrite: list[str], submission: tuple[str, bytes]):
        self.stage, self.ws, self.spare = stage, ws, spare
        self.rewrite, self.submission = rewrite, submission
        self._pid: int | None = None
        self._errors: int | None = None  # read end of the pipe a failed build writes its error to
        self._building: object = None  # (variant, owner) of the copy in spare/next
        self._used = 0

    def _build(self, overrides: Callable[[], dict[str, bytes | None]], owner: tuple[int, int] | None) -> None:
        build_copy(self.stage, self.spare / "next", overrides=overrides(), rewrite=self.rewrite,
                   submission=self.submission, owner=owner)

    def prepare(self, variant: str, overrides: Callable[[], dict[str, bytes | None]],
                owner: tuple[int, int] | None) -> None:
        """Start building `variant`'s copy (its overrides are computed by the builder too)."""
        self._finish()
        self._building = (variant, owner)
        if threading.active_count() > 1:
            self._build(overrides, owner)
            return
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the builder
            code = 0
            try:
                os.close(read)
                self._build(overrides, owner)
            except BaseException as exc:
                os.write(write, f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")[:4000])
                code = 1
            finally:
                os._exit(code)
        os.close(write)
        self._pid, self._errors = pid, read

    def install(self, variant: str, overrides: Callable[[], dict[str, bytes | None]],
                owner: tuple[int, int] | None) -> None:
        """Put `variant`'s copy at `ws` (building it now if another one was prepared)."""
        if self._building != (variant, owner):
            self.prepare(variant, overrides, owner)
        self._finish()
        self._building = None
        if self.ws.exists():
            os.rename(self.ws, self.spare / f"used-{self._used}")
            self._used += 1
        os.rename(self.spare / "next", self.ws)

    def close(self) -> None:
        """Wait for a build still going (a copy prepared for a run that was not needed)."""
        try:
            self._finish()
        except Exception:
            pass

    def _finish(self) -> None:
        """Wait for the builder; raise what it failed with."""
        if self._pid is None:
            return
        pid, read, self._pid, self._errors = self._pid, self._errors, None, None
        _, status = os.waitpid(pid, 0)
        with os.fdopen(read, "rb") as fh:  # type: ignore[arg-type]
            message = fh.read().decode("utf-8", "replace")
        if status != 0:
            self._building = None
            raise WorkspaceError(f"building a copy failed: {message or f'wait status {status}'}")
