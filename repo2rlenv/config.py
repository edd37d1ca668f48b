"""The `generate` run's configuration: flags, an optional TOML/YAML file, and `--pipeline-opt` parsing.

Precedence: built-in defaults < config file < command-line flags. Pipeline options are validated by the
pipeline's own options model; every failure becomes one `ConfigError` line naming field, value and rule.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from repo2rlenv.errors import ConfigError
from repo2rlenv.llm.prices import ModelPrice

SandboxChoice = Literal["auto", "docker", "local"]
# The image when a caller needs one name; `generate` picks per repo from requires-python
# (repo2rlenv/discovery/python.py keeps the table image → Python) unless --base-image is given.
DEFAULT_BASE_IMAGE = "repo2rlenv-base:bookworm"


class GenerateConfig(BaseModel):
    """Everything `repo2rlenv generate` needs, after merging the config file and the flags."""

    model_config = ConfigDict(extra="forbid")

    pipeline: str = Field("test_synthesis", description="Registered pipeline name.")
    repo: str = Field(..., description="Local path, git URL, or GitHub owner/name.")
    ref: str | None = Field(None, description="Branch, tag or commit; default: the repo's HEAD.")
    out: Path = Field(Path("r2e-out"), description="Dataset directory to write tasks into.")
    sandbox: SandboxChoice = Field("auto", description="Where untrusted code runs.")
    base_image: str | None = Field(None, description="Image every task and sandbox image starts FROM; "
                                   "default: chosen from the repo's requires-python (bookworm 3.11, trixie 3.13).")
    ca_bundle: Path | None = Field(None, description="PEM bundle trusted inside image builds (TLS proxies).")
    llm: str | None = Field(None, description="litellm model id, e.g. openai/gpt-4o-mini; none = no model.")
    llm_base_url: str | None = Field(None, description="OpenAI-compatible base URL for the model.")
    api_key_env: str | None = Field(None, description="Environment variable holding the model's API key; "
                                    "default: the provider's own (OPENAI_API_KEY …).")
    max_spend_usd: float | None = Field(None, ge=0, description="Stop model calls past this spend.")
    prices: dict[str, ModelPrice] = Field(default_factory=dict, description="USD per 1M tokens by model id "
                                          "(input_per_mtok, output_per_mtok); R2E_PRICE_<MODEL> also works.")
    pipeline_opts: dict[str, Any] = Field(default_factory=dict, description="Options for the pipeline.")
    routing: dict[str, str] = Field(default_factory=dict, description="Per-role models of solve and eval; "
                                    "accepted so that one file serves all three commands (generate uses `llm`).")
    cache_dir: Path | None = Field(None, description="Clones and venvs cache; default ~/.cache/repo2rlenv.")


def parse_opt_value(text: str) -> Any:
    """`true/false` → bool, a JSON literal → that value, anything else → the string itself."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return text


def parse_pipeline_opts(pairs: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """Parse repeated `--pipeline-opt key=value` flags."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--pipeline-opt expects key=value, got {pair!r}")
        out[key] = parse_opt_value(value)
    return out


def load_config_file(path: Path) -> dict[str, Any]:
    """Read a TOML or YAML config file into a plain dict (keys as in `GenerateConfig`)."""
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".toml":
            data: Any = tomllib.loads(text)
        elif path.suffix in (".yaml", ".yml"):
            import yaml  # only config files need it

            data = yaml.safe_load(text) or {}
        else:
            raise ConfigError(f"config file must end in .toml, .yaml or .yml: {path}")
    except (tomllib.TOMLDecodeError, ValueError) as exc:
        raise ConfigError(f"cannot parse config file {path}: {str(exc).splitlines()[0]}") from exc
    except Exception as exc:  # yaml.YAMLError, kept generic so yaml is imported lazily
        if type(exc).__module__.startswith("yaml"):
            raise ConfigError(f"cannot parse config file {path}: {str(exc).splitlines()[0]}") from exc
        raise
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a table/mapping at the top level")
    return {str(k).replace("-", "_"): v for k, v in data.items()}


def describe_validation_error(exc: ValidationError, *, what: str) -> str:
    """One line naming the field, the value given and what is allowed."""
    parts = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or what
        if err["type"] == "extra_forbidden":
            parts.append(f"unknown {what} {field!r}")
            continue
        value = err.get("input")
        rule = err["msg"]
        ctx = err.get("ctx") or {}
        if "expected" in ctx:
            rule = f"expected {ctx['expected']}"
        parts.append(f"{what} {field!r}: {value!r} is not allowed ({rule})")
    return "; ".join(parts)


def build_config(file_values: dict[str, Any], flag_values: dict[str, Any]) -> GenerateConfig:
    """Merge file and flags (flags win; pipeline options merge key by key) and validate."""
    merged = dict(file_values)
    file_opts = dict(merged.pop("pipeline_opts", None) or {})
    flag_opts = dict(flag_values.pop("pipeline_opts", None) or {})
    merged.update({k: v for k, v in flag_values.items() if v is not None})
    merged["pipeline_opts"] = {**file_opts, **flag_opts}
    if "repo" not in merged:
        raise ConfigError("no repository given: pass --repo PATH|URL|owner/name (or `repo` in the config file)")
    try:
        return GenerateConfig.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, what="setting")) from exc


def validate_options(model: type[BaseModel], values: dict[str, Any]) -> BaseModel:
    """Validate pipeline options with the pipeline's model; one clear line on failure."""
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, what="pipeline option")) from exc
