"""The in-task config reader: strict, the twin of the pydantic model, and able to read version 1."""

from __future__ import annotations

import dataclasses
import json

import pytest

from repo2rlenv.verifiers.test_synthesis import verifier_config as vc
from repo2rlenv.verifiers.test_synthesis import verifier_twins as vt
from repo2rlenv.verifiers.config_model import (
    CONFIG_SCHEMA_VERSION,
    TWIN_KINDS,
    VariantDiffs,
    VerifierConfig,
)


def minimal(**overrides) -> dict:
    raw = VerifierConfig(submission="t.py", target_file="m.py", target_qualname="f", function_lines=[1],
                         coverage_targets=[], baseline_full_coverage=True, import_roots=[""]).model_dump(mode="json")
    return {**raw, **overrides}


def test_reader_and_model_have_the_same_fields():
    assert {f.name for f in dataclasses.fields(vc.Config)} == set(VerifierConfig.model_fields)
    assert {f.name for f in dataclasses.fields(vc.Variants)} == set(VariantDiffs.model_fields)
    assert vc.CONFIG_SCHEMA_VERSION == CONFIG_SCHEMA_VERSION
    assert tuple(TWIN_KINDS) == vt.KINDS


def test_a_written_model_reads_back(tmp_path):
    model = VerifierConfig(submission="tests/test_r2e_x.py", target_file="src/m.py", target_qualname="C.f",
                           function_lines=[3, 4], coverage_targets=[4], baseline_full_coverage=False,
                           import_roots=["src"], variants=VariantDiffs(siblings=["siblings/01.diff"]),
                           twin_kinds=["padding", "references"])
    model.write(tmp_path / "verifier_config.json")
    cfg = vc.read_config(tmp_path / "verifier_config.json")
    assert cfg.variants == vc.Variants("broken_patch.diff", ("siblings/01.diff",))
    assert (cfg.reward_mode, cfg.coverage_weight, cfg.import_roots, cfg.twin_runs) == ("gated", 0.5, ("src",), 4)
    assert cfg.twin_kinds == ("padding", "references")


def test_version_1_is_read_with_its_aprime_diff_dropped(tmp_path):
    raw = minimal()
    for key in ("twin_runs", "twin_kinds", "case_timeout_sec", "pytest_plugins", "mutation_weight", "oracle_lines",
                "pristine_archive"):
        raw.pop(key)
    raw.update(schema_version=1, variants={"broken": "broken_patch.diff", "aprime": "aprime_patch.diff", "siblings": []})
    (tmp_path / "c.json").write_text(json.dumps(raw))
    cfg = vc.read_config(tmp_path / "c.json")
    assert cfg.schema_version == 6 and cfg.variants == vc.Variants("broken_patch.diff", ())
    assert cfg.twin_kinds == vt.KINDS and cfg.twin_runs == 4 and cfg.pytest_plugins == ()
    assert (cfg.mutation_weight, cfg.oracle_lines, cfg.pristine_archive) == (0.5, (), None)


def test_version_2_is_read_with_no_plugins(tmp_path):
    raw = minimal()
    for key in ("pytest_plugins", "mutation_weight", "oracle_lines", "pristine_archive"):
        raw.pop(key)
    raw.update(schema_version=2)
    (tmp_path / "c.json").write_text(json.dumps(raw))
    cfg = vc.read_config(tmp_path / "c.json")
    assert cfg.schema_version == 6 and cfg.pytest_plugins == ()


def test_version_3_is_read_with_the_old_coverage_term(tmp_path):
    raw = minimal()
    for key in ("mutation_weight", "oracle_lines", "pristine_archive"):
        raw.pop(key)
    raw.update(schema_version=3)
    (tmp_path / "c.json").write_text(json.dumps(raw))
    cfg = vc.read_config(tmp_path / "c.json")
    assert (cfg.schema_version, cfg.mutation_weight, cfg.oracle_lines) == (6, 0.5, ())


def test_version_4_is_read_with_no_pristine_archive(tmp_path):
    raw = minimal()
    raw.pop("pristine_archive")
    raw.update(schema_version=4)
    (tmp_path / "c.json").write_text(json.dumps(raw))
    cfg = vc.read_config(tmp_path / "c.json")
    assert (cfg.schema_version, cfg.pristine_archive) == (6, None)
    (tmp_path / "d.json").write_text(json.dumps(minimal()))
    assert vc.read_config(tmp_path / "d.json").pristine_archive == "workspace.tar.xz"


def test_version_5_is_read_with_nothing_exposed(tmp_path):
    raw = minimal()
    raw.pop("native_exposed")
    raw.update(schema_version=5)
    (tmp_path / "c.json").write_text(json.dumps(raw))
    cfg = vc.read_config(tmp_path / "c.json")
    assert (cfg.schema_version, cfg.native_exposed) == (6, ())
    (tmp_path / "d.json").write_text(json.dumps(minimal(native_exposed=["_ctypes"])))
    assert vc.read_config(tmp_path / "d.json").native_exposed == ("_ctypes",)


def test_plugins_read_back(tmp_path):
    (tmp_path / "c.json").write_text(json.dumps(minimal(pytest_plugins=["asyncio", "pytest_mock", "xdist.looponfail"])))
    assert vc.read_config(tmp_path / "c.json").pytest_plugins == ("asyncio", "pytest_mock", "xdist.looponfail")


@pytest.mark.parametrize(("change", "message"), [
    ({"submission": "../evil.py"}, "unsafe path"),
    ({"import_roots": ["/abs"]}, "unsafe path"),
    ({"manifest": "/etc/passwd"}, "unsafe path"),
    ({"reward_mode": "lenient"}, "reward_mode"),
    ({"coverage_weight": 2}, "coverage_weight"),
    ({"min_new_tests": True}, "expected a number"),
    ({"function_lines": ["3"]}, "function_lines"),
    ({"schema_version": 7}, "schema_version"),
    ({"pristine_archive": "../a.tar.xz"}, "unsafe path"),
    ({"mutation_weight": 1.5}, "mutation_weight"),
    ({"oracle_lines": [3.5]}, "oracle_lines"),
    ({"pytest_plugins": ["--import-mode=append"]}, "pytest_plugins"),
    ({"pytest_plugins": ["no:verifier_outcomes"]}, "pytest_plugins"),
    ({"pytest_plugins": "asyncio"}, "pytest_plugins"),
    ({"twin_runs": 0}, "twin_runs"),
    ({"twin_kinds": ["padding", "rot13"]}, "twin_kinds"),
    ({"variants": {"broken": "b.diff", "aprime": "a.diff"}}, "variants"),
    ({"extra_key": 1}, "keys differ"),
])
def test_the_reader_is_strict(tmp_path, change, message):
    (tmp_path / "c.json").write_text(json.dumps(minimal(**change)))
    with pytest.raises(Exception, match=message):
        vc.read_config(tmp_path / "c.json")
