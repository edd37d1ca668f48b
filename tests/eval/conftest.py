"""Fixtures of the eval tests: the scripted model server and the solver's test kit, re-exported from
tests/solver/conftest.py (run by path; it loads tests/llm's server and tests/solver/solver_kit.py once)."""

from __future__ import annotations

import runpy
from pathlib import Path

_solver = runpy.run_path(str(Path(__file__).resolve().parents[1] / "solver" / "conftest.py"))

scripted = _solver["scripted"]
scripted_server = _solver["scripted_server"]
scripted_module = _solver["scripted_module"]
solver_kit = _solver["solver_kit"]
