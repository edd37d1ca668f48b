"""The human oracle end to end: real changes that carry tests, on a history each test scripts with git.

One change fixes `bulk_price` and adds a test that catches the fix: its task's oracle is that test (origin
`human`), A holds the parent's tests and not the change's, and it validates. Another fixes `discount` and
adds a test that does not tell A from B: the search falls back to the differential oracle and the
candidate records why.
"""

from __future__ import annotations

import json
import tomllib

import pytest

from repo2rlenv.config import GenerateConfig
from repo2rlenv.dataset.manifest import read_manifest
from repo2rlenv.generate import run_generate
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate
from repo2rlenv.pipelines.test_synthesis.oracle.human import HumanSkip
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


def discount(total):
    if total > 500:
        return round(total * 0.9, 2)
    return total
'''
PARENT_TESTS = '''\
from tinypkg.price import bulk_price, discount


def unit(n):
    return bulk_price(n) / n


def test_few():
    assert bulk_price(3) == 30


def test_many():
    assert bulk_price(200) == 1600


def test_small_total():
    assert discount(10) == 10
'''
# The fix's own tests: one new case that catches it (through the module's helper), one that cannot.
FIX_TESTS = PARENT_TESTS + '''

def test_boundary_is_full_price():
    assert unit(100) == 10


def test_one():
    assert bulk_price(1) == 10
'''
# A test for discount that runs it where the fix changes nothing.
DISCOUNT_TEST = "from tinypkg.price import discount\n\n\ndef test_big():\n    assert discount(1000) == 900\n"


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", ["docker", "local"])
def test_a_change_with_its_own_tests_gets_a_human_oracle(sandbox, make_repo, run_git, tmp_path, r2e_cache, request):
    if sandbox == "docker":
        request.getfixturevalue("docker_ready")
    buggy = PRICING.replace("quantity > 100", "quantity >= 100").replace("total > 500", "total >= 500")
    root = make_repo({"pyproject.toml": PYPROJECT, "tinypkg/__init__.py": "", "tinypkg/price.py": buggy,
                      "tests/test_price.py": PARENT_TESTS})

    def commit(files: dict[str, str], message: str) -> str:
        for rel, text in files.items():
            (root / rel).write_text(text)
        run_git(root, "add", "-A")
        run_git(root, "commit", "-q", "-m", message)
        return run_git(root, "rev-parse", "HEAD").strip()

    fix = commit({"tinypkg/price.py": PRICING.replace("total > 500", "total >= 500"),
                  "tests/test_price.py": FIX_TESTS}, "fix the boundary, with a test")
    other = commit({"tinypkg/price.py": PRICING, "tests/test_discount.py": DISCOUNT_TEST}, "fix discount at 500")
    out = tmp_path / "dataset"
    config = GenerateConfig(repo=str(root), out=out, sandbox=sandbox, cache_dir=r2e_cache,
                            pipeline_opts={"strategy": "commit_pair", "limit": 2})
    result = run_generate(config, Reporter(quiet=True))
    cands = {c.commit: c for c in (Candidate.model_validate_json(line)
                                   for line in (out / "candidates.jsonl").read_text().splitlines())}
    human = cands[fix]
    assert human.status == "emitted" and human.test_files == ["tests/test_price.py"]
    task = out / "tasks" / human.task_id
    meta = tomllib.loads((task / "task.toml").read_text())["metadata"]["repo2env"]
    assert meta["spec_version"] == 4
    assert meta["test_synthesis"]["oracle_kind"] == "human" and meta["test_synthesis"]["oracle_origin"] == "human"
    # The oracle is the change's one fail-to-pass case with the helper it needs; the case that passes on
    # B too, and the parent's cases, are left out.
    oracle = next((task / "solution").glob("test_r2e_*.py")).read_text()
    assert "def test_boundary_is_full_price" in oracle and "def unit(n)" in oracle
    assert "def test_one" not in oracle and "def test_few" not in oracle
    # A is the change's source with the parent's tests: nothing of the change's tests is in the image.
    repo_dir = task / "environment" / "repo"
    assert (repo_dir / "tests/test_price.py").read_text() == PARENT_TESTS
    assert "test_boundary_is_full_price" not in (task / "instruction.md").read_text()
    (gate,) = [g for g in human.gates if g.gate == "human oracle"]
    assert gate.passed and "test_boundary_is_full_price" in gate.detail
    # It validates like any oracle: exactly 1.0, and 0.0 for an empty submission.
    rows = {r.task_id: r for r in read_manifest(out / "manifest.jsonl")}
    row = rows[human.task_id]
    assert row.oracle_origin == "human" and row.validation is not None and row.validation.ok
    assert row.validation.oracle_reward == 1.0 and row.validation.empty_reward == 0.0

    # The discount fix's test runs discount where nothing changed: the search falls back.
    fallback = cands[other]
    (gate,) = [g for g in fallback.gates if g.gate == "human oracle"]
    assert not gate.passed and gate.detail.startswith(HumanSkip.none_stable.value)
    assert fallback.status == "emitted" and rows[fallback.task_id].oracle_origin == "differential"
    assert sorted(result.emitted) == sorted([human.task_id, fallback.task_id])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["oracle_origin"] == {"human": 1, "differential": 1}


@pytest.mark.slow
@pytest.mark.parametrize("reward_mode", ["rfc", "gated"])
def test_a_case_that_brings_other_cases_along_is_refused_in_the_rfc_form(reward_mode, make_repo, run_git, tmp_path,
                                                                         r2e_cache):
    # The change's class inherits from a test class of another module: pytest collects the imported class
    # and the inherited case too, which pass on B. The gated reward still pays 1.0 for such a file; the
    # RFC form (every case must fail on B) does not, so there the differential oracle writes the task.
    base = ("from tinypkg.price import bulk_price\n\n\nclass TestBase:\n    def test_few(self):\n"
            "        assert bulk_price(3) == 30\n")
    root = make_repo({"pyproject.toml": PYPROJECT, "tinypkg/__init__.py": "", "tests/test_base.py": base,
                      "tests/test_price.py": PARENT_TESTS,
                      "tinypkg/price.py": PRICING.replace("quantity > 100", "quantity >= 100")})
    (root / "tinypkg/price.py").write_text(PRICING)
    (root / "tests/test_price.py").write_text(
        "from test_base import TestBase\n" + PARENT_TESTS + "\n\nclass TestEdge(TestBase):\n"
        "    def test_boundary(self):\n        assert bulk_price(100) == 1000\n")
    run_git(root, "commit", "-qam", "fix the boundary, with an inheriting test")
    out = tmp_path / "dataset"
    config = GenerateConfig(repo=str(root), out=out, sandbox="local", cache_dir=r2e_cache,
                            pipeline_opts={"strategy": "commit_pair", "limit": 1, "reward_mode": reward_mode})
    result = run_generate(config, Reporter(quiet=True))
    (cand,) = [Candidate.model_validate_json(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
    (gate,) = [g for g in cand.gates if g.gate == "human oracle"]
    if reward_mode == "gated":
        assert gate.passed and "TestEdge::test_boundary" in gate.detail
        assert cand.status == "emitted" and result.emitted == [cand.task_id]
        assert read_manifest(out / "manifest.jsonl")[0].oracle_origin == "human"
        return
    assert not gate.passed and gate.detail.startswith(HumanSkip.unconfirmed.value), gate.detail
    assert "TestBase::test_few" in gate.detail and gate.detail.count("human oracle:") == 1
    # The search went on: the differential oracle found tests, so the late gate ran. (Whether the task
    # then validates is this tiny repo's RFC-form affair: its own tests earn coverage credit there.)
    names = [g.gate for g in cand.gates]
    assert "whole suite on B" in names[names.index("human oracle"):]
