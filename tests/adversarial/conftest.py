"""Fixtures for the reward-hack suite: re-exported from tests/verifiers/conftest.py (loaded by path, since
with pytest's importlib mode test directories are not packages that could import each other)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "r2e_verifiers_conftest", Path(__file__).resolve().parent.parent / "verifiers" / "conftest.py")
assert _spec and _spec.loader
_shared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shared)

kit = _shared.kit
portable_python = _shared.portable_python
make_task = _shared.make_task
