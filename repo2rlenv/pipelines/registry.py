"""The registry of pipelines, keyed by each class's own `name` (one list, no parallel tables)."""

from __future__ import annotations

from repo2rlenv.errors import ConfigError
from repo2rlenv.pipelines.base import Pipeline


def _classes() -> list[type]:
    # Imported here so `repo2rlenv --help` does not import every pipeline's dependencies.
    from repo2rlenv.pipelines.test_synthesis.pipeline import TestSynthesisPipeline

    return [TestSynthesisPipeline]


def registry() -> dict[str, type]:
    """Pipeline name → class."""
    out: dict[str, type] = {}
    for cls in _classes():
        if cls.name in out:
            raise RuntimeError(f"two pipelines are named {cls.name!r}")
        out[cls.name] = cls
    return out


def pipeline_names() -> list[str]:
    return sorted(registry())


def get_pipeline(name: str) -> Pipeline:
    """An instance of the pipeline called `name`, or a ConfigError listing the known ones."""
    reg = registry()
    if name not in reg:
        raise ConfigError(f"unknown pipeline {name!r} (known: {', '.join(sorted(reg))})")
    return reg[name]()
