"""`task.toml` as a pydantic model: Harbor's sections plus our provenance under [metadata.repo2env].

Written through the model (never a hand-built dict), with `extra="forbid"` so a misspelt key fails here
rather than in `harbor lint`. Key names follow Harbor's TaskConfig (0.13+: `environment_mode`, `artifacts`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from repo2rlenv.dataset.difficulty import DifficultyFeatures

# History: 1 = first layout of [metadata.repo2env] for test_synthesis. 2 = test_synthesis.twin_kinds (the
# checked rewrite kinds the verifier draws twins from) replaces aprime_level; version-1 files still load.
# 3 = test_synthesis.mutation_weight (the graded reward's μ) and test_synthesis.difficulty (the features the
# label is computed from); version-2 files load with μ = 0.5 and no features.
# 4 = test_synthesis.oracle_origin (who wrote the oracle: the change's developers, the model-free search or a
# model; issue 33); older files load with the origin their oracle_kind implies.
SPEC_VERSION = 4

OracleOrigin = Literal["human", "differential", "model"]
# The origin an `oracle_kind` implies: the kinds an oracle search records ("human" since spec 4).
ORIGIN_OF_KIND: dict[str, OracleOrigin] = {"human": "human", "differential": "differential", "llm": "model"}


def origin_of_kind(kind: str | None) -> OracleOrigin:
    """`oracle_origin` for an `oracle_kind`; an option's name (`hybrid`, `auto`) counts as the model-free
    search's, as before spec 4 only `llm` meant a model wrote the file."""
    return ORIGIN_OF_KIND.get(kind or "", "differential")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TaskInfo(_Model):
    name: str = Field(description="org/name, as Harbor's registry wants it.")
    description: str
    keywords: list[str] = Field(default_factory=list)


class TestSynthesisMeta(_Model):
    __test__ = False

    strategy: Literal["mutation", "commit_pair"]
    touched_function: str = Field(description="path::qualname of the function B changes.")
    mutation_kind: str | None = None
    operator: str | None = None
    commit: str | None = Field(None, description="The fixing commit (commit_pair).")
    baseline_coverage: float = Field(description="Fraction of the function's lines the existing suite runs.")
    baseline_full_coverage: bool
    reward_mode: Literal["gated", "rfc"]
    coverage_weight: float
    min_new_tests: int
    max_test_loc: int
    oracle_kind: str
    oracle_origin: OracleOrigin = Field(
        description="Who wrote the oracle: the change's developers (human), the model-free search "
                    "(differential) or a model (spec 4).")
    oracle_attempts: int = 1
    oracle_inputs: Literal["recorded", "perturbed", "generated", "guessed", "model"] | None = Field(
        None, description="Where the reference tests' inputs came from; all but guessed and model keep the "
                          "parameters' types (spec 3).")
    test_path: str
    existing_test_files: list[str] = Field(
        default_factory=list, description="The repo's test files that cover the function (validation submits one).")
    twin_kinds: list[str] = Field(default_factory=list, description="The rewrite kinds the verifier's twins use.")
    siblings: int = 0
    mutation_weight: float = Field(0.5, description="μ: the siblings' share of the discrimination term (gated).")
    difficulty: DifficultyFeatures | None = Field(None, description="What metadata.difficulty was computed from.")

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        """Version 1 recorded the level of a fixed A′ (no longer made); its tasks carry their own verifier.
        Versions 1-3 had no oracle_origin: their oracle_kind implies it."""
        if isinstance(data, dict) and "aprime_level" in data:
            data = {k: v for k, v in data.items() if k != "aprime_level"}
        if isinstance(data, dict) and "oracle_origin" not in data:
            data = {**data, "oracle_origin": origin_of_kind(data.get("oracle_kind"))}
        return data


class Repo2EnvMeta(_Model):
    spec_version: int = SPEC_VERSION
    pipeline: Literal["test_synthesis"] = "test_synthesis"
    pipeline_version: str
    repo: str
    ref: str | None = None
    content_hash: str = Field(description="Hash of everything that decides the task's content.")
    synthesis_llm: str | None = None
    verifier_version: int | None = Field(
        None, description="The shipped verifier's VERIFIER_VERSION (verifiers/test_synthesis/verifier_version.py); "
                          "absent in tasks made before it was recorded (their verifiers are versions 1-2).")
    test_synthesis: TestSynthesisMeta


class Metadata(_Model):
    difficulty: Literal["easy", "medium", "hard"]
    category: str = "software-testing"
    keywords: list[str] = Field(default_factory=list)
    repo2env: Repo2EnvMeta


class AgentSection(_Model):
    timeout_sec: float
    network_mode: Literal["no-network"] | None = Field(None, description="Harbor's per-phase network policy.")


class VerifierSection(_Model):
    timeout_sec: float
    environment_mode: Literal["separate"] | None = Field(
        None, description="Set for Harbor >= 0.13 grading in a fresh container; omitted in the shared form.")


class EnvironmentSection(_Model):
    build_timeout_sec: float
    cpus: float
    memory_mb: int
    storage_mb: int


# Harbor's task format version that the files follow (Harbor 0.26's TaskConfig.schema_version). Files
# written before it carry `version = "1.0"`, Harbor's older name for the same key; they still load.
HARBOR_SCHEMA_VERSION = "1.4"


class TaskToml(_Model):
    schema_version: str = Field(HARBOR_SCHEMA_VERSION, description="Harbor task format version.")
    task: TaskInfo
    metadata: Metadata
    agent: AgentSection
    verifier: VerifierSection
    environment: EnvironmentSection
    artifacts: list[str] = Field(default_factory=list, description="Files handed to a separate verifier.")

    @model_validator(mode="before")
    @classmethod
    def _old_version_key(cls, data: Any) -> Any:
        # Harbor renamed `version` to `schema_version`; read older files under the new name, as Harbor does.
        if isinstance(data, dict) and "version" in data:
            data = dict(data)
            data.setdefault("schema_version", data.pop("version"))
        return data

    def to_toml(self) -> str:
        import tomli_w

        header = "# Generated by repo2rlenv (pipeline test_synthesis). Harbor task definition.\n"
        return header + tomli_w.dumps(self.model_dump(exclude_none=True))

    @classmethod
    def from_toml(cls, text: str) -> "TaskToml":
        import tomllib

        return cls.model_validate(tomllib.loads(text))
