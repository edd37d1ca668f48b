"""Shipped payloads: standalone folders of modules copied whole into a sandbox (the gate worker, the probe)
or into a task's `tests/` dir (the verifier).

A payload folder is a package on the host only so that it travels with the installed package; its
`__init__.py` is the one file not shipped. Inside, its modules import each other by plain name: they run
as scripts from one flat directory of a sandbox where repo2rlenv is not installed. Shipping the whole
folder, not a list of names, means a new sibling module cannot be forgotten and then fail only inside a
container. The modules carry their folder's prefix (`gate_`, `probe_`, `verifier_`): they share
`sys.path` with the repo under test and must not shadow its modules.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

_NOT_SHIPPED = "__init__.py"


def payload_dir(package: str) -> Path:
    """The folder of the payload package `package` on this host."""
    return Path(str(resources.files(package)))


def payload_names(package: str) -> list[str]:
    """File names of the modules shipped from `package`, sorted."""
    return sorted(p.name for p in payload_dir(package).glob("*.py") if p.name != _NOT_SHIPPED)


def payload_files(package: str) -> dict[str, str]:
    """File name -> text of every module shipped from `package`."""
    folder = payload_dir(package)
    return {name: (folder / name).read_text(encoding="utf-8") for name in payload_names(package)}
