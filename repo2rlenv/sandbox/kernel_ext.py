"""Build `_r2e_kernel` (templates/r2e_kernel.c) for one interpreter, into a directory on its path.

The verifier confines each graded run through this extension rather than ctypes (see the C file for
why). The base images compile it in a build stage (scripts/build_base_image.sh); this module does the
same for an interpreter on this machine — the local sandbox's venvs, the test suite's portable
interpreter — when a C compiler and that interpreter's headers are here. Where they are not, the
verifier falls back to ctypes and its reward details say so (`ffi`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "templates" / "r2e_kernel.c"
HEADERS = (SOURCE.parent / "r2e_heap.h",)  # included by SOURCE from its own directory
MODULE = "_r2e_kernel"
# What the interpreter says about itself: where its headers are, its extension suffix, its site dir.
_PROBE = ("import json, sysconfig; p = sysconfig.get_paths(); "
          "print(json.dumps({'include': p['include'], 'suffix': sysconfig.get_config_var('EXT_SUFFIX'), "
          "'platlib': p['platlib']}))")


class KernelExtError(RuntimeError):
    """The extension could not be built here; the message says what is missing."""


def source_stamp() -> str:
    """What a built extension was built from (the base images' stamp carries the same hash)."""
    return hashlib.sha256(b"".join(f.read_bytes() for f in (SOURCE, *HEADERS))).hexdigest()[:12]


def _interpreter(python: str) -> dict[str, str]:
    try:
        out = subprocess.run([python, "-I", "-c", _PROBE], capture_output=True, text=True, timeout=60, check=True)
        return json.loads(out.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise KernelExtError(f"cannot ask {python} where its headers are: {exc}") from None


def build(python: str, dest: Path | None = None, *, compiler: str | None = None) -> Path:
    """Compile the extension for `python` into `dest` (default: its platlib); returns the file written.
    Raises KernelExtError with the missing piece (compiler, headers) or the compiler's first error."""
    info = _interpreter(python)
    cc = shutil.which(compiler or os.environ.get("CC") or "cc") or (None if compiler else shutil.which("gcc"))
    if not cc:
        raise KernelExtError(f"no C compiler ({compiler or 'cc or gcc'}) on PATH")
    if not (Path(info["include"]) / "Python.h").is_file():
        raise KernelExtError(f"no Python headers for {python} (Python.h not in {info['include']})")
    target_dir = Path(dest or info["platlib"])
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / f"{MODULE}{info['suffix']}"
    # Compiled beside the target and renamed into place: a reader never sees half a library.
    fd, tmp = tempfile.mkstemp(prefix=f".{MODULE}-", suffix=".so", dir=target_dir)
    os.close(fd)
    try:
        proc = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-Wall", f"-I{info['include']}", str(SOURCE),
                               "-o", tmp], capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            first = next((line for line in proc.stderr.splitlines() if "error" in line), proc.stderr.strip()[:300])
            raise KernelExtError(f"compiling {SOURCE.name} failed: {first}")
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def try_build(python: str, dest: Path | None = None) -> tuple[Path | None, str]:
    """`build`, but a failure is (None, why): callers carry on with the ctypes fallback and report why."""
    try:
        return build(python, dest), ""
    except KernelExtError as exc:
        return None, str(exc)
