"""verifier_config.json, read strictly: the in-task twin of the host's pydantic `VerifierConfig`.

The verifier cannot import pydantic (stdlib + pytest + coverage), so it reads the config with this
dataclass reader; a host test keeps the two field lists identical. Version 1 (before twins) is read
too: its A′ diff is no longer used, and the twin settings take their defaults; version 2 (before
pytest_plugins) is read with no plugins; version 3 (before the graded reward's settings) with μ = 0.5
and no oracle lines (cov is then the coverage targets' share, as it was); version 4 with no pristine
archive (A is staged from the workspace, as it was); version 5 with no memory primitive exposed.

Stdlib only: copied verbatim into every task.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

try:
    from . import verifier_twins as vtwins
    from . import verifier_workspace as vws
except ImportError:  # run as a script from /tests: the modules are plain siblings
    import verifier_twins as vtwins  # type: ignore[no-redef]
    import verifier_workspace as vws  # type: ignore[no-redef]

# History: 1 = first version (variants.aprime: an A′ diff). 2 = twins drawn at grading time
# (twin_runs, twin_kinds, case_timeout_sec; variants without aprime). 3 = pytest_plugins. 4 = the graded
# reward: mutation_weight (μ, the siblings' share) and oracle_lines (what the coverage term is relative to).
# 5 = pristine_archive (A's files shipped in tests/; runs are built from it, never from the workspace).
# 6 = native_exposed (the memory-primitive extension modules the target needs; verifier_native).
CONFIG_SCHEMA_VERSION = 6
REWARD_MODES = ("gated", "rfc")
_DEFAULTS_V2 = {"twin_runs": 4, "twin_kinds": list(vtwins.KINDS), "case_timeout_sec": 60.0}
_DEFAULTS_V3 = {"pytest_plugins": []}
_DEFAULTS_V4 = {"mutation_weight": 0.5, "oracle_lines": []}
_DEFAULTS_V5 = {"pristine_archive": None}
_DEFAULTS_V6 = {"native_exposed": []}
# A plugin name as pytest's -p takes it: never an option, never "no:" (the verifier's own -p no: stay).
_PLUGIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


@dataclass(frozen=True, slots=True)
class Variants:
    """Diff files (relative to the tests dir) that turn A into B and the sibling mutants."""

    broken: str
    siblings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Config:
    """verifier_config.json (mirrored by the pydantic `VerifierConfig` on the host)."""

    schema_version: int
    submission: str
    target_file: str
    target_qualname: str
    function_lines: tuple[int, ...]
    coverage_targets: tuple[int, ...]
    baseline_full_coverage: bool
    import_roots: tuple[str, ...]
    reward_mode: str
    coverage_weight: float
    min_new_tests: int
    max_test_loc: int
    run_timeout_sec: float
    memory_mb: int
    variants: Variants
    manifest: str
    twin_runs: int  # runs of A′ and as many of B′ (the two sides are equally many: see verifier_grade)
    twin_kinds: tuple[str, ...]
    case_timeout_sec: float
    pytest_plugins: tuple[str, ...]  # the task image's plugins, loaded with -p (autoload is off)
    mutation_weight: float  # μ: how much of the discrimination term the siblings' kills decide
    oracle_lines: tuple[int, ...]  # the function's lines the reference tests run on A: gated cov's base
    pristine_archive: str | None  # A's files as tar.xz in tests/ (None: staged from the workspace, checked)
    native_exposed: tuple[str, ...]  # memory primitives the target needs at import: mapped, and reported


def _check(name: str, value: Any, kind: type | tuple[type, ...]) -> Any:
    if isinstance(value, bool) and kind in (int, float, (int, float)):
        raise ValueError(f"config {name}: expected a number, got a bool")
    if not isinstance(value, kind):
        raise ValueError(f"config {name}: expected {kind}, got {type(value).__name__}")
    return value


def _relpath(name: str, value: Any) -> str:
    vws.safe_join(Path("."), _check(name, value, str))  # raises for absolute paths and '..'
    return value


def _upgrade(raw: dict[str, Any]) -> dict[str, Any]:
    """A version-1 config as version 2: the A′ diff dropped, the twin settings at their defaults."""
    raw = dict(raw, schema_version=2, **{k: v for k, v in _DEFAULTS_V2.items() if k not in raw})
    variants = dict(_check("variants", raw.get("variants"), dict))
    variants.pop("aprime", None)
    raw["variants"] = variants
    return raw


def read_config(path: Path) -> Config:
    """Strictly parse verifier_config.json: unknown or missing keys and wrong types are errors."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(raw, dict):
        raise ValueError("config: expected an object")
    if raw.get("schema_version") == 1:
        raw = _upgrade(raw)
    if raw.get("schema_version") == 2:
        raw = dict(raw, schema_version=3, **{k: v for k, v in _DEFAULTS_V3.items() if k not in raw})
    if raw.get("schema_version") == 3:
        raw = dict(raw, schema_version=4, **{k: v for k, v in _DEFAULTS_V4.items() if k not in raw})
    if raw.get("schema_version") == 4:
        raw = dict(raw, schema_version=5, **{k: v for k, v in _DEFAULTS_V5.items() if k not in raw})
    if raw.get("schema_version") == 5:
        raw = dict(raw, schema_version=6, **{k: v for k, v in _DEFAULTS_V6.items() if k not in raw})
    expected = {f.name for f in fields(Config)}
    if set(raw) != expected:
        raise ValueError(f"config keys differ from the schema: {sorted(set(raw) ^ expected)}")
    if raw["schema_version"] != CONFIG_SCHEMA_VERSION:
        raise ValueError(f"config schema_version {raw['schema_version']} is not {CONFIG_SCHEMA_VERSION}")
    var = _check("variants", raw["variants"], dict)
    if not {"broken"} <= set(var) <= {"broken", "siblings"}:
        raise ValueError("config variants: expected broken and optional siblings")
    ints = lambda key: tuple(_check(key, v, int) for v in _check(key, raw[key], list))  # noqa: E731
    cfg = Config(
        schema_version=raw["schema_version"],
        submission=_relpath("submission", raw["submission"]),
        target_file=_relpath("target_file", raw["target_file"]),
        target_qualname=_check("target_qualname", raw["target_qualname"], str),
        function_lines=ints("function_lines"),
        coverage_targets=ints("coverage_targets"),
        baseline_full_coverage=_check("baseline_full_coverage", raw["baseline_full_coverage"], bool),
        import_roots=tuple(_check("import_roots", r, str) for r in _check("import_roots", raw["import_roots"], list)),
        reward_mode=_check("reward_mode", raw["reward_mode"], str),
        coverage_weight=float(_check("coverage_weight", raw["coverage_weight"], (int, float))),
        min_new_tests=_check("min_new_tests", raw["min_new_tests"], int),
        max_test_loc=_check("max_test_loc", raw["max_test_loc"], int),
        run_timeout_sec=float(_check("run_timeout_sec", raw["run_timeout_sec"], (int, float))),
        memory_mb=_check("memory_mb", raw["memory_mb"], int),
        variants=Variants(_relpath("broken", var["broken"]),
                          tuple(_relpath("siblings", s) for s in _check("siblings", var.get("siblings", []), list))),
        manifest=_relpath("manifest", raw["manifest"]),
        twin_runs=_check("twin_runs", raw["twin_runs"], int),
        twin_kinds=tuple(_check("twin_kinds", k, str) for k in _check("twin_kinds", raw["twin_kinds"], list)),
        case_timeout_sec=float(_check("case_timeout_sec", raw["case_timeout_sec"], (int, float))),
        pytest_plugins=tuple(_check("pytest_plugins", p, str)
                             for p in _check("pytest_plugins", raw["pytest_plugins"], list)),
        mutation_weight=float(_check("mutation_weight", raw["mutation_weight"], (int, float))),
        oracle_lines=ints("oracle_lines"),
        pristine_archive=None if raw["pristine_archive"] is None else _relpath("pristine_archive", raw["pristine_archive"]),
        native_exposed=tuple(_check("native_exposed", n, str) for n in _check("native_exposed", raw["native_exposed"], list)),
    )
    if cfg.reward_mode not in REWARD_MODES:
        raise ValueError(f"config reward_mode {cfg.reward_mode!r} is not one of {REWARD_MODES}")
    if not 0.0 <= cfg.coverage_weight <= 1.0:
        raise ValueError("config coverage_weight must be within [0, 1]")
    if not 0.0 <= cfg.mutation_weight <= 1.0:
        raise ValueError("config mutation_weight must be within [0, 1]")
    if not 1 <= cfg.twin_runs <= 16:
        raise ValueError("config twin_runs must be within [1, 16]")
    bad = [p for p in cfg.pytest_plugins if not _PLUGIN_NAME.fullmatch(p)]
    if bad:
        raise ValueError(f"config pytest_plugins: not plugin names {bad}")
    unknown = set(cfg.twin_kinds) - set(vtwins.KINDS)
    if unknown:
        raise ValueError(f"config twin_kinds: unknown {sorted(unknown)}")
    for root in cfg.import_roots:
        if root:
            _relpath("import_roots", root)
    return cfg
