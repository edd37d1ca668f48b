"""Scripts under scripts/ are not a package: tests load them by path, once per module."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def load_script():
    def load(name: str) -> ModuleType:
        spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses and pydantic look their module up by name
        spec.loader.exec_module(module)
        return module

    return load
