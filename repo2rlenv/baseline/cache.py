"""Baselines kept on disk, keyed by everything that decides their outcome.

The baseline (the whole suite on A with coverage, then reruns) is the longest stage on real suites, and
`doctor` followed by `generate`, or a killed `generate` run again, would run it twice on the same input.
A baseline is a function of the tree, the environment it runs in and the way pytest is invoked, so it is
stored under a hash of exactly those: the tree's digest, the sandbox's identity (the Docker image tag,
itself a hash of tree, base image and Dockerfile; or the local interpreter), the pytest arguments and
import roots, our pytest plugin's source, the rerun count and the suite timeout. A change to any of them
is a different key. An entry that cannot be read (older schema, a truncated file) is a miss, never an
error: the suite simply runs again.

The local sandbox's packages are the host's and are not hashed; `baseline_cache=false` skips the cache for
a user who changed them in place.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import ValidationError

from repo2rlenv.atomic import write_text
from repo2rlenv.baseline.runner import PLUGIN_NAME, PLUGIN_PACKAGE, BaselineReport, SuiteRunner
from repo2rlenv.payload import payload_dir

# Bumped when the way a baseline is computed changes without any of the keyed inputs changing.
CACHE_VERSION = 1


def baseline_key(*, tree_digest: str, sandbox_id: str, runner: SuiteRunner, reruns: int, timeout: float) -> str:
    """The cache key of the baseline `runner` would compute for this tree in this sandbox."""
    plugin = (payload_dir(PLUGIN_PACKAGE) / f"{PLUGIN_NAME}.py").read_bytes()
    parts = {
        "cache_version": CACHE_VERSION,
        "schema_version": BaselineReport.model_fields["schema_version"].default,
        "tree": tree_digest,
        "sandbox": sandbox_id,
        "python": runner.session.python,
        "pytest_args": runner.pytest_args(),
        "suite_paths": runner.suite_paths,
        "import_roots": runner.import_roots,
        "plugin": hashlib.sha256(plugin).hexdigest(),
        "reruns": reruns,
        "timeout": timeout,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


def _path(root: Path, key: str) -> Path:
    return root / "baselines" / f"{key}.json"


def load_baseline(root: Path, key: str) -> BaselineReport | None:
    """The stored baseline for `key`, or None when there is none that this version can read."""
    try:
        return BaselineReport.model_validate_json(_path(root, key).read_text(encoding="utf-8"))
    except (OSError, ValueError, ValidationError):
        return None


def store_baseline(root: Path, key: str, report: BaselineReport) -> None:
    """Keep `report` under `key` (atomically: a killed run leaves no half-written entry)."""
    write_text(_path(root, key), report.model_dump_json())
