"""The dataset card (README.md): YAML front matter for the Hub, statistics, and how to use the tasks.

The statistics are computed once (`CardStats`) from the same task list the table and the registry are
built from; the card only formats them, so the numbers on the card are the manifest's numbers.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

import yaml
from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv import __version__
from repo2rlenv.hub.layout import TABLE_GLOB
from repo2rlenv.hub.license import UNKNOWN, detect_license
from repo2rlenv.hub.registry import PublishTarget
from repo2rlenv.hub.source import LocalTask, ValidationStatus

TAGS = ("reinforcement-learning", "harbor", "test-generation", "repo2rlenv", "code")
TASK_CATEGORIES = ("reinforcement-learning", "text-generation")
NO_MUTATION_KIND = "(none)"  # commit_pair tasks: the change is a real commit, not a mutation operator
# The Hub's size buckets, smallest first: (upper bound, label).
_SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))

# Headers of the card's statistics tables: (first column, what it counts). Tests parse the card by these.
STATS_TABLES: dict[str, str] = {
    "per_repo": "repository", "per_strategy": "strategy", "per_mutation_kind": "mutation kind",
    "per_validation": "validation", "per_difficulty": "difficulty", "per_oracle_inputs": "oracle inputs",
    "per_oracle_origin": "oracle origin",
}
# Where an oracle's inputs came from, when they keep the parameters' types (`InputSource`).
TYPE_CONSISTENT_INPUTS = ("recorded", "perturbed", "generated")


class CardStats(BaseModel):
    """What the card reports about the tasks."""

    model_config = ConfigDict(extra="forbid")

    tasks: int
    per_repo: dict[str, int]
    per_strategy: dict[str, int]
    per_mutation_kind: dict[str, int] = Field(description=f"{NO_MUTATION_KIND} for tasks without one.")
    per_validation: dict[str, int] = Field(description="passed / failed / stale / missing.")
    per_difficulty: dict[str, int] = Field(default_factory=dict, description="task.toml's metadata.difficulty.")
    per_oracle_inputs: dict[str, int] = Field(
        default_factory=dict, description="Where the reference tests' inputs came from (unknown: older tasks).")
    per_oracle_origin: dict[str, int] = Field(
        default_factory=dict, description="Who wrote the reference tests: human (the change's developers), "
                                          "differential (model-free search) or model (unknown: older tasks).")
    licenses: dict[str, str] = Field(description="Source repository → the Hub license id (or unknown).")
    dropped_dependencies: dict[str, list[str]] = Field(
        default_factory=dict, description="Run → optional test/dev dependencies its environment could not "
        "install (not imported by the tests), each with pip's reason.")

    @property
    def pass_rate(self) -> float:
        return self.per_validation.get(ValidationStatus.PASSED.value, 0) / self.tasks if self.tasks else 0.0


def _counts(values: Iterable[str]) -> dict[str, int]:
    # Most common first, ties by name, so the card is the same for the same tasks.
    return dict(sorted(Counter(values).items(), key=lambda kv: (-kv[1], kv[0])))


def compute_stats(tasks: Sequence[LocalTask]) -> CardStats:
    licenses: dict[str, str] = {}
    for task in tasks:
        if licenses.get(task.row.repo, UNKNOWN) == UNKNOWN:
            licenses[task.row.repo] = detect_license(task.paths.repo)
    return CardStats(
        tasks=len(tasks),
        per_repo=_counts(t.row.repo for t in tasks),
        per_strategy=_counts(t.row.strategy for t in tasks),
        per_mutation_kind=_counts(t.row.mutation_kind or NO_MUTATION_KIND for t in tasks),
        per_validation=_counts(t.status.value for t in tasks),
        per_difficulty=_counts(t.row.difficulty for t in tasks),
        per_oracle_inputs=_counts(t.row.oracle_inputs or UNKNOWN for t in tasks),
        per_oracle_origin=_counts(t.row.oracle_origin or UNKNOWN for t in tasks),
        licenses=dict(sorted(licenses.items())),
    )


def front_matter(stats: CardStats, name: str) -> dict[str, object]:
    """The card's YAML metadata, as the Hub reads it (license, tags, and the table as the default config)."""
    found = set(stats.licenses.values())
    licenses = sorted(found - {UNKNOWN}) + ([UNKNOWN] if UNKNOWN in found else [])
    size = next((label for bound, label in _SIZE_CATEGORIES if stats.tasks < bound), "n>1M")
    return {
        "license": licenses[0] if len(licenses) == 1 else licenses,
        "pretty_name": name,
        "tags": list(TAGS),
        "task_categories": list(TASK_CATEGORIES),
        "size_categories": [size],
        "configs": [{"config_name": "default", "data_files": [{"split": "train", "path": TABLE_GLOB}]}],
    }


def _table(header: str, counts: dict[str, int]) -> str:
    lines = [f"| {header} | tasks |", "|---|---:|"]
    lines += [f"| {key.replace('|', '/')} | {value} |" for key, value in counts.items()]
    return "\n".join(lines)


def _dropped_section(stats: CardStats) -> str:
    """Declared dependencies left out of the environments, when any were (nothing otherwise)."""
    if not stats.dropped_dependencies:
        return ""
    rows = "\n".join(f"- `{run}`: {dep}" for run, deps in stats.dropped_dependencies.items() for dep in deps)
    return ("\nDeclared development dependencies that the tests do not import and that failed to install were "
            "left out of the task environments (the suite passed without them):\n\n" + rows + "\n")


def render_card(stats: CardStats, target: PublishTarget) -> str:
    """The full README.md text."""
    name, version = target.dataset_name, target.version
    repo_id = target.repo_id or "ORG/NAME"
    ds = "ds"
    passed = stats.per_validation.get(ValidationStatus.PASSED.value, 0)
    typed = sum(n for source, n in stats.per_oracle_inputs.items() if source in TYPE_CONSISTENT_INPUTS)
    tables = "\n\n".join(_table(header, getattr(stats, field)) for field, header in STATS_TABLES.items())
    license_lines = "\n".join(f"- `{repo}`: {lic}" for repo, lic in stats.licenses.items())
    harbor_repo = (f"harbor run --repo {target.git_url}{'@' + target.revision if target.revision else ''} "
                   f"-d {name}@{version} -a <agent> -m <model>") if target.git_url else \
        "# (exported without --repo-id: push it, or use the registry file below from this folder)"
    return f"""---
{yaml.safe_dump(front_matter(stats, name), sort_keys=False).rstrip()}
---

# {name}

Reinforcement-learning tasks in which an agent must **write the tests that catch a hidden behaviour
change**. In each task one function of a Python repository exists in two versions: A, which the agent
sees and on which the repository's own tests pass, and B, hidden, whose behaviour differs in a way those
tests miss. The agent writes a pytest file; the task's verifier pays for tests that pass on A (and on
behaviour-preserving rewrites of it) and fail on B; above that, the reward grows with the hidden sibling
changes of the same function the tests also catch (a mutation score) and with how much of the function
they execute relative to the reference tests. Every task ships a reference test file that scores exactly 1.0.

Generated by repo2rlenv {__version__} (pipeline `test_synthesis`). The tasks are
[Harbor](https://github.com/laude-institute/harbor) task directories.

## Statistics

**{stats.tasks} tasks**; validation pass rate **{stats.pass_rate:.1%}** ({passed} of {stats.tasks} tasks
scored 1.0 with the reference tests and 0.0 with an empty submission, as they are now);
{typed} of {stats.tasks} reference test files call the function only with inputs that keep its parameters'
types (recorded calls of the repository's tests, perturbations within a type, or grids of known types).

{tables}

Licenses of the source repositories (the tasks contain a copy of each):

{license_lines}
{_dropped_section(stats)}
## Files

- `tasks/<task_id>/`: the Harbor task directories (`task.toml`, `instruction.md`, `environment/`,
  `tests/` with the verifier, `solution/` with the reference tests);
- `{TABLE_GLOB}`: one row per task: provenance, instruction, broken patch, reference tests,
  validation, and every file of the task tree (`files`: path, text or base64, executable bit);
- `registry.json`: a Harbor registry with one dataset, `{name}@{version}`;
- `manifest.jsonl`, `validation/`: the dataset's manifest and validation records, as repo2rlenv reads them.

## Load with `datasets`

```python
from datasets import load_dataset

tasks = load_dataset("{repo_id}", split="train")
print(tasks[0]["instruction"])
```

## Run with Harbor

```bash
{harbor_repo}
# or, from a local copy (repo2rlenv pull {repo_id} {ds}):
harbor run -d {name}@{version} --registry-path {ds}/registry.json -a <agent> -m <model>
harbor run -p {ds}/tasks -a <agent> -m <model>
```

Grading happens in the task: after the agent's turn Harbor copies `tests/` into the container and runs
`tests/test.sh`, which runs `tests/verifier.py` and writes the reward to `/logs/verifier/reward.txt`
(the breakdown to `reward-details.json`).

## Score a submission with the verifier

The agent's test file goes to `/workspace/<oracle_test_path>` (a column of the table). To score one
without Harbor, build the task's image and run its grader:

```bash
T={ds}/tasks/<task_id>
docker build -t r2e-task "$T/environment"
mkdir -p logs && docker run --rm --network none -v "$PWD/$T/tests:/tests:ro" -v "$PWD/logs:/logs/verifier" \\
  -v "$PWD/my_tests.py:/workspace/<oracle_test_path>:ro" r2e-task bash /tests/test.sh
cat logs/reward.txt          # one float in [0, 1]
```

With the default `gated` reward mode, reward = b_pass · b_fail · ((1 − w) + w · cov): the fraction of
cases passing on A and A′, times the fraction failing on B, times a coverage bonus (w =
`coverage_weight`). `repo2rlenv validate {ds}` re-checks every task (reference 1.0, empty 0.0).
"""
