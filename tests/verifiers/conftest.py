"""Fixtures for the verifier tests: an interpreter uid 65534 can run, and a builder of real tasks on disk.

The helpers live in `task_kit.py` (shared with tests/adversarial, which loads it the same way); with
pytest's importlib mode a conftest cannot import its sibling by name, so it is loaded from its path.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

import pytest


def load_task_kit() -> ModuleType:
    name = "r2e_verifier_task_kit"
    if name not in sys.modules:  # dataclasses need their module registered while it executes
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("task_kit.py"))
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def kit() -> ModuleType:
    """The task_kit module (toy package, mutants, GOOD_TEST, build_task)."""
    return load_task_kit()


@pytest.fixture(scope="session")
def portable_python(kit: ModuleType) -> Iterator[str]:
    """An interpreter with pytest + coverage that uid 65534 can run (this one, when it can)."""
    python, home = kit.build_portable_python()
    yield python
    if home is not None:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def make_task(tmp_path: Path, kit: ModuleType, portable_python: str) -> Callable[..., Any]:
    """`make_task(submission_text | None, **config_overrides)` → a Task under tmp_path."""
    counter = {"n": 0}

    def build(submission: str | None, **kwargs: Any) -> Any:
        counter["n"] += 1
        return kit.build_task(tmp_path / f"task{counter['n']}", submission, python=portable_python, **kwargs)

    return build
