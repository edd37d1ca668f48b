"""The default command (`strategy=hybrid`): real history first, then mutants fill `limit` (issue 33)."""

from __future__ import annotations

import json

import pytest

from repo2rlenv.config import GenerateConfig
from repo2rlenv.generate import run_generate
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.progress import Reporter

PYPROJECT = ('[project]\nname = "tinypkg"\nversion = "0.0.1"\n[build-system]\nrequires = ["setuptools>=61"]\n'
             'build-backend = "setuptools.build_meta"\n')
PRICING = '''\
def bulk_price(quantity):
    if quantity <= 0:
        raise ValueError("quantity must be positive")
    if quantity > 100:
        return quantity * 8
    return quantity * 10


def shipping(weight):
    if weight > 20:
        return 15
    return 5
'''
TESTS = ("from tinypkg.price import bulk_price, shipping\n\n\ndef test_few():\n    assert bulk_price(3) == 30\n\n\n"
         "def test_many():\n    assert bulk_price(200) == 1600\n\n\ndef test_light():\n    assert shipping(1) == 5\n")


def test_the_default_strategy_is_hybrid():
    assert TestSynthesisOptions().strategy == "hybrid"


@pytest.mark.slow
def test_the_default_command_fills_limit_from_history_then_mutants(make_repo, run_git, tmp_path, r2e_cache):
    root = make_repo({"pyproject.toml": PYPROJECT, "tinypkg/__init__.py": "",
                      "tinypkg/price.py": PRICING.replace("quantity > 100", "quantity >= 100"),
                      "tests/test_price.py": TESTS})
    (root / "tinypkg/price.py").write_text(PRICING)
    run_git(root, "commit", "-qam", "fix the boundary")
    out = tmp_path / "dataset"
    config = GenerateConfig(repo=str(root), out=out, sandbox="local", cache_dir=r2e_cache,
                            pipeline_opts={"limit": 2})
    result = run_generate(config, Reporter(quiet=True))
    assert len(result.emitted) == 2
    summary = json.loads((out / "summary.json").read_text())
    # One task from the fix; the other from a mutant of the function no change touched.
    assert summary["tasks_by_strategy"] == {"commit_pair": 1, "mutation": 1}
    assert "advice" not in summary
