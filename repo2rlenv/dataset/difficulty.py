"""A task's difficulty label, from features that make catching B harder (issue 16, item 4).

Each rule adds a point; the label is read off the total. The rules are a table so that the docs
(`docs/reward.md`, "Difficulty") and the code cannot drift apart, and so that a measured solve rate can
replace the points when a model has tried the task (`eval`'s solve rates; not part of emit).
"""

from __future__ import annotations

import ast
from typing import Callable, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

Label = Literal["easy", "medium", "hard"]
# Past this many AST nodes in the arguments of its richest call, the reference tests' inputs are not
# ones a test writer types without reading the function closely (a dict of lists, a built object).
COMPLEX_INPUT_NODES = 12


class DifficultyFeatures(BaseModel):
    """What the label is computed from; recorded in task.toml beside it."""

    model_config = ConfigDict(extra="forbid")

    changed_line_run_by_suite: bool = Field(
        description="The existing suite executes B's changed line and still passes: reaching it is not enough.")
    b_crashes: bool = Field(False, description="B raises where A returns on the reference tests' inputs: a call "
                                                "that asserts nothing catches it.")
    covering_tests: int = Field(ge=0, description="Stable tests of the suite that run the function.")
    oracle_input_nodes: int = Field(
        ge=0, description="AST nodes in the arguments of the reference tests' richest call of the function.")
    siblings: int = Field(ge=0, description="Hidden sibling mutants a full reward must also catch.")
    points: int = Field(ge=0, description="How many of the rules in `RULES` hold.")


class Rule(NamedTuple):
    says: str
    holds: Callable[[DifficultyFeatures], bool]


RULES: tuple[Rule, ...] = (
    Rule("the suite runs B's line and misses the change: only a precise assertion catches it",
         lambda f: f.changed_line_run_by_suite),
    Rule("B changes a value rather than crashing: a call alone does not catch it", lambda f: not f.b_crashes),
    Rule("three or more covering tests already pin the function's common paths",
         lambda f: f.covering_tests >= 3),
    Rule(f"the reference tests need inputs of more than {COMPLEX_INPUT_NODES} AST nodes",
         lambda f: f.oracle_input_nodes > COMPLEX_INPUT_NODES),
    Rule("two or more hidden siblings share the graded term", lambda f: f.siblings >= 2),
)
# points → label: 0-2 easy, 3 medium, 4+ hard.
THRESHOLDS: tuple[tuple[int, Label], ...] = ((4, "hard"), (3, "medium"), (0, "easy"))


def input_nodes(oracle_source: str, name: str) -> int:
    """AST nodes in the arguments of the richest call of `name` (a plain or attribute call) in the
    oracle; 0 when it does not parse or never calls it by that name."""
    try:
        tree = ast.parse(oracle_source)
    except SyntaxError:
        return 0
    richest = 0
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if callee != name:
            continue
        args = [*node.args, *(k.value for k in node.keywords)]
        richest = max(richest, sum(1 for arg in args for _ in ast.walk(arg)))
    return richest


def features(*, changed_line_run_by_suite: bool, covering_tests: int, oracle_source: str, function_name: str,
             siblings: int, b_crashes: bool = False) -> DifficultyFeatures:
    draft = DifficultyFeatures(changed_line_run_by_suite=changed_line_run_by_suite, b_crashes=b_crashes,
                               covering_tests=covering_tests,
                               oracle_input_nodes=input_nodes(oracle_source, function_name), siblings=siblings,
                               points=0)
    return draft.model_copy(update={"points": sum(rule.holds(draft) for rule in RULES)})


def label(found: DifficultyFeatures) -> Label:
    return next(name for least, name in THRESHOLDS if found.points >= least)
