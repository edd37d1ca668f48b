"""The in-task verifier as shipped: which files a task's `tests/` dir gets, and A's workspace manifest.

The verifier modules are flat siblings in `/tests` (they import each other by plain name there) and a
normal subpackage here (`from . import …`), so the host imports them like any module. Host side only.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from types import ModuleType
from typing import Iterable

from repo2rlenv.payload import payload_dir, payload_names
from repo2rlenv.verifiers.test_synthesis import verifier as _verifier
from repo2rlenv.verifiers.config_model import WorkspaceManifest

VERIFIER_PACKAGE = "repo2rlenv.verifiers.test_synthesis"
# The verifier's folder is shipped whole (`repo2rlenv.payload`): copied verbatim into every task's tests/
# dir, next to test.sh. The host-only modules (this one, `config_model.py`) live outside it.
VERIFIER_DIR = payload_dir(VERIFIER_PACKAGE)
VERIFIER_MODULES = tuple(payload_names(VERIFIER_PACKAGE))
TEST_SH = Path(__file__).resolve().parent.parent / "harbor_templates" / "test.sh"


def install_verifier(tests_dir: Path) -> list[Path]:
    """Copy test.sh and the verifier modules into `tests_dir`; returns the written paths."""
    tests_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in VERIFIER_MODULES:
        written.append(Path(shutil.copyfile(VERIFIER_DIR / name, tests_dir / name)))
    test_sh = Path(shutil.copyfile(TEST_SH, tests_dir / "test.sh"))
    test_sh.chmod(0o755)
    return [test_sh, *written]


def workspace_manifest(root: Path, relpaths: Iterable[str]) -> WorkspaceManifest:
    """sha256 of each of A's files (relative, '/'-separated paths) as they will be in the image."""
    return WorkspaceManifest(files={rel: hashlib.sha256((root / rel).read_bytes()).hexdigest()
                                    for rel in sorted(relpaths)})


# Past this much of A (uncompressed), no pristine archive is shipped: the verifier then stages A from the
# workspace and checks it against the manifest, as before the archive existed.
PRISTINE_ARCHIVE_MAX_BYTES = 64 * 1024 * 1024


def write_pristine_archive(root: Path, relpaths: Iterable[str], dest: Path) -> bool:
    """A's files as a deterministic tar.xz at `dest` (same files, same bytes); False, and nothing written,
    when they are too large to ship."""
    import tarfile

    rels = sorted(relpaths)
    if sum((root / rel).stat().st_size for rel in rels) > PRISTINE_ARCHIVE_MAX_BYTES:
        return False
    tmp = dest.with_name(f".{dest.name}.partial")
    with tarfile.open(tmp, mode="w:xz", format=tarfile.PAX_FORMAT, preset=6) as tar:
        for rel in rels:
            path = root / rel
            info = tarfile.TarInfo(rel)
            info.size = path.stat().st_size
            info.mode = 0o755 if path.stat().st_mode & 0o111 else 0o644
            info.mtime = 0
            with path.open("rb") as handle:
                tar.addfile(info, handle)
    tmp.replace(dest)
    return True


def verifier_module() -> ModuleType:
    """The verifier module (`score`, `main`, `read_config`, `compute_reward`)."""
    return _verifier
