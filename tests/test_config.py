"""Config merging, `--pipeline-opt` parsing and option validation messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from repo2rlenv.config import build_config, load_config_file, parse_opt_value, parse_pipeline_opts, validate_options
from repo2rlenv.errors import ConfigError
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions


@pytest.mark.parametrize(
    ("text", "value"),
    [("true", True), ("False", False), ("3", 3), ("0.5", 0.5), ('["a", "b"]', ["a", "b"]),
     ('{"x": 1}', {"x": 1}), ("null", None), ("mutation", "mutation"), ("a=b", "a=b"), ("", "")],
)
def test_opt_values(text, value):
    assert parse_opt_value(text) == value


def test_pipeline_opts_split_on_first_equals():
    assert parse_pipeline_opts(["strategy=mutation", "limit=3", "since=2024-01-01"]) == {
        "strategy": "mutation", "limit": 3, "since": "2024-01-01"}
    with pytest.raises(ConfigError, match="key=value"):
        parse_pipeline_opts(["limit"])


def test_flags_override_file_and_opts_merge(tmp_path: Path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('repo = "a"\nsandbox = "local"\n[pipeline_opts]\nlimit = 5\nseed = 3\n')
    merged = build_config(load_config_file(cfg), {"repo": "b", "sandbox": None, "pipeline_opts": {"limit": 7}})
    assert merged.repo == "b" and merged.sandbox == "local"
    assert merged.pipeline_opts == {"limit": 7, "seed": 3}


def test_yaml_config(tmp_path: Path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("repo: x\npipeline-opts:\n  strategy: mutation\n")
    assert build_config(load_config_file(cfg), {}).pipeline_opts == {"strategy": "mutation"}


@pytest.mark.parametrize(
    ("values", "needle"),
    [({"limit": 0}, "pipeline option 'limit': 0 is not allowed (Input should be greater than or equal to 1)"),
     ({"strategy": "magic"}, "pipeline option 'strategy': 'magic' is not allowed (expected 'commit_pair', 'mutation' or 'hybrid')"),
     ({"coverage_weight": 1.5}, "pipeline option 'coverage_weight': 1.5"),
     ({"limt": 3}, "unknown pipeline option 'limt'"),
     ({"min_loc": 9, "max_loc": 3}, "min_loc (9) must not exceed max_loc (3)")],
)
def test_option_errors_name_field_value_and_rule(values, needle):
    with pytest.raises(ConfigError) as info:
        validate_options(TestSynthesisOptions, values)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_defaults_match_the_rfc():
    opts = TestSynthesisOptions()
    assert (opts.limit, opts.strategy, opts.coverage_weight, opts.min_new_tests, opts.max_test_loc) == (
        50, "hybrid", 0.5, 1, 200)


def test_bad_config_files(tmp_path: Path):
    with pytest.raises(ConfigError, match="not found"):
        load_config_file(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("repo = [")
    with pytest.raises(ConfigError, match="cannot parse"):
        load_config_file(bad)
    other = tmp_path / "c.json"
    other.write_text("{}")
    with pytest.raises(ConfigError, match="must end in"):
        load_config_file(other)


def test_prices_and_the_key_variable_are_settings_of_generate_too(tmp_path: Path):
    cfg = tmp_path / "run.toml"
    cfg.write_text('repo = "x"\nllm = "openai/m"\napi_key_env = "MY_KEY"\nmax_spend_usd = 2.0\n'
                   '[prices."openai/m"]\ninput_per_mtok = 0.5\noutput_per_mtok = 1.5\n')
    config = build_config(load_config_file(cfg), {})
    assert config.api_key_env == "MY_KEY" and config.prices["openai/m"].output_per_mtok == 1.5
