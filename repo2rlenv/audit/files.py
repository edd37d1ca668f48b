"""Checks on a task's files: what the agent reads (instruction, Dockerfile) and what its image is built
from (environment/) must hold nothing of B, the oracle or the grading.

The agent's container is built from `environment/` alone; `tests/` and `solution/` reach a container only
after the agent has finished (Harbor's rule), so they are where B and the oracle belong.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from repo2rlenv.audit.models import Check
from repo2rlenv.dataset import leaks
from repo2rlenv.dataset.change_record import ChangeRecord
from repo2rlenv.dataset.task_toml import TaskToml, TestSynthesisMeta
from repo2rlenv.dataset.taskdir import TaskPaths

# Files only grading has; one of them inside the agent's image means grading material leaked into it.
GRADING_NAMES = ("task.toml", "broken_patch.diff", "verifier_config.json", "verifier_guard.py", "verifier.py",
                 "workspace_manifest.json", "workspace.tar.xz", "solve.sh", "reward-details.json")
# Text shorter than this is too common to mean a leak when found (as the emit-time audit's rule).
MIN_NEEDLE = leaks.MIN_CHANGED_TEXT
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@")
# A change's subject shorter than this ("Fix typo") is too common to mean a leak.
SUBJECT_NEEDLE = 20
# How many of the oracle's longest lines are searched for.
ORACLE_NEEDLES = 12
# Files under environment/ larger than this are not searched for text (data files, wheels).
_MAX_SEARCHED_BYTES = 2_000_000


@dataclass(slots=True)
class Hidden:
    """What of a task the agent must not have: its names and telling text (absent from A's own files)."""

    oracle_name: str
    b_lines: list[str] = field(default_factory=list)
    oracle_lines: list[str] = field(default_factory=list)
    diffs: list[str] = field(default_factory=list)
    # A real change's own words (tests/change.json): its subject, and the changelog, news and test lines
    # it added that A does not hold.
    change_subject: str = ""
    change_lines: list[str] = field(default_factory=list)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.oracle_name, *GRADING_NAMES)

    @property
    def needles(self) -> list[str]:
        return [*self.b_lines, *self.oracle_lines, *self.change_lines]


def changed_lines(diff: str) -> list[int]:
    """A's line numbers that the diff removes or changes (where B is)."""
    out, line = [], 0
    for text in diff.splitlines():
        match = _HUNK.match(text)
        if match:
            line = int(match.group(1))
        elif text.startswith("-") and not text.startswith("---"):
            out.append(line)
            line += 1
        elif text.startswith(" "):
            line += 1
    return out


def _texts(root: Path) -> dict[str, str]:
    """Relative POSIX path → text of every file under `root` small enough to search."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.stat().st_size <= _MAX_SEARCHED_BYTES:
            out[path.relative_to(root).as_posix()] = path.read_text(errors="replace")
    return out


def hidden_of(task: TaskPaths, test_path: str) -> Hidden:
    """B's added lines and the oracle's lines that A's own files do not contain: finding one of them in
    what the agent gets means B or the oracle reached it."""
    a_files = _texts(task.repo)
    a_text = "\n".join(a_files.values())
    a_lines = {line.strip() for line in a_text.splitlines()}
    diffs = [task.broken_patch.read_text()]
    if task.siblings.is_dir():
        diffs += [p.read_text() for p in sorted(task.siblings.glob("*.diff"))]
    # A needle is searched for as a substring, so one that A's own text holds anywhere (a B line that is part
    # of a longer line of A) would be found in every task built from A: not telling (issue 34, item 5).
    b_lines = sorted({text for diff in diffs for text in leaks.changed_text(diff)
                      if text not in a_lines and text not in a_text})
    oracle = task.solution / Path(test_path).name
    oracle_lines = []
    if oracle.is_file():
        candidates = {line.strip() for line in oracle.read_text().splitlines()
                      if len(line.strip()) >= 2 * MIN_NEEDLE and not line.strip().startswith(("#", "import", "from"))}
        # The longest lines are the oracle's own (inputs and expected values). More than a few are kept: the
        # image check discounts lines installed libraries also hold, and what is left must still say something.
        oracle_lines = sorted(c for c in candidates if c not in a_lines and c not in a_text)
        oracle_lines = sorted(oracle_lines, key=lambda s: (-len(s), s))[:ORACLE_NEEDLES]
    change = ChangeRecord.read(task.change)
    return Hidden(oracle_name=Path(test_path).name, b_lines=b_lines, oracle_lines=oracle_lines, diffs=diffs,
                  change_subject=change.subject if change else "", change_lines=_change_lines(a_files, change))


def _change_lines(a_files: dict[str, str], change: ChangeRecord | None) -> list[str]:
    """The lines a real change added to its notes and tests, less those A holds in its other files anyway
    (common text); in the change's own files A must hold none of them."""
    if change is None or not change.added_lines:
        return []
    own = set(change.added_lines)
    elsewhere = {line.strip() for rel, text in a_files.items() if rel not in own for line in text.splitlines()}
    return sorted({line for lines in change.added_lines.values() for line in lines if line not in elsewhere})


def check_instruction(task: TaskPaths, meta: TestSynthesisMeta, config: dict, hidden: Hidden) -> Check:
    """The instruction and the Dockerfile name no change kind, operator, line, commit or diff text."""
    seen = task.instruction.read_text() + "\n" + task.dockerfile.read_text()
    diff = hidden.diffs[0]
    found = leaks.audit(seen, diff=diff, lines=[*changed_lines(diff), *config.get("coverage_targets", [])],
                        operator=meta.operator)
    kind = meta.mutation_kind
    if kind and re.search(rf"\b{re.escape(kind.lower())}\b", seen.lower()):
        found.append(f"the change kind {kind!r}")
    commit = meta.commit
    if commit and any(commit[:n] in seen for n in (7, 8, 10, 12, 40) if len(commit) >= n):
        found.append(f"the commit {commit[:12]}")
    found += [f"the reference tests' text {text!r}" for text in hidden.oracle_lines if text in seen]
    found += [f"the change's text {text!r}" for text in hidden.change_lines if text in seen]
    subject = hidden.change_subject
    if len(subject) >= SUBJECT_NEEDLE and subject.lower() in seen.lower():
        found.append(f"the change's subject {subject!r}")
    return Check(name="instruction", verdict="problem" if found else "ok", found=found)


def check_network(meta: TestSynthesisMeta, toml: TaskToml) -> Check:
    """A real-history task's agent has no network: the upstream repository holds the fix."""
    if meta.strategy != "commit_pair":
        return Check(name="network", verdict="ok")
    if toml.agent.network_mode == "no-network":
        return Check(name="network", verdict="ok")
    return Check(name="network", verdict="problem",
                 found=["a real-history task whose agent has network (the fix is upstream; agent_network=auto)"])


def check_environment(task: TaskPaths, hidden: Hidden) -> Check:
    """environment/ (the agent's image's build context) holds A and nothing of B, the oracle or grading."""
    found = []
    for path in sorted(task.environment.rglob("*")):
        rel = path.relative_to(task.root).as_posix()
        if path.name in hidden.names:
            found.append(f"{rel} (a grading file's name)")
        elif path.is_file() and not path.is_symlink() and path.stat().st_size <= _MAX_SEARCHED_BYTES:
            text = path.read_text(errors="replace")
            found += [f"{rel} holds {needle!r}" for needle in hidden.needles if needle in text]
    # A's target file is the one B's patch applies to (and B's is not): the build context is A.
    applies = _git_apply_check(task.repo, hidden.diffs[0])
    if applies is not None:
        found.append(f"B's patch does not apply to environment/repo ({applies}): its files are not A")
    return Check(name="environment", verdict="problem" if found else "ok", found=found)


def _git_apply_check(root: Path, diff: str) -> str | None:
    """None when `diff` applies cleanly at `root`, else git's reason."""
    proc = subprocess.run(["git", "apply", "--check", "-p1", "-"], cwd=root, input=diff, capture_output=True,
                          text=True)
    if proc.returncode == 0:
        return None
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    return lines[0] if lines else f"git apply exited {proc.returncode}"


def read_task(task: TaskPaths) -> tuple[TaskToml, TestSynthesisMeta, dict]:
    """task.toml (through its model), its test_synthesis table, and the verifier config."""
    import json

    toml = task.config()
    return toml, toml.metadata.repo2env.test_synthesis, json.loads(task.verifier_config.read_text())
