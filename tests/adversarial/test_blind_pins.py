"""A generated family of behaviour-blind submissions scores 0 on every task generated from examples/.

Each submission pins one structural fact of the target (its module's size, where a raise lands, the
reference count of a constant B's change touches, how many names the module has …) against its value on
A, with one of several comparisons (equal; equal or far off; same residue; at most; at least), so that
it passes on A by construction and tests no behaviour. None may earn anything: the twins move every
such fact (or leave it as it is on B too), and the guard refuses the ones read from code or source.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from repo2rlenv.config import GenerateConfig
from repo2rlenv.generate import run_generate
from repo2rlenv.progress import Reporter
from repo2rlenv.dataset.taskdir import DatasetPaths
from repo2rlenv.verifiers.test_synthesis.verifier import score

pytestmark = pytest.mark.slow
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "minicart"
FACTS = {
    "module size": "os.path.getsize(m.__file__)",
    "module stat size": "os.stat(m.__file__).st_size",
    "names in the module": "len(dir(m))",
    "line of a raise inside the function": "raise_line(f)",
    "offset of that raise": "raise_lasti(f)",
    "reference count of a constant B touches": "sys.getrefcount(CONST)",
    "interned-ness of a string B touches": "int(sys.intern(''.join(list(WORD))) is WORD)",
    "first line of the function": "f.__code__.co_firstlineno",
    "size of the module's text": "len(open(m.__file__).read())",
}
COMPARE = {
    "equal": "x == {a}",
    "equal or far off": "x == {a} or abs(x - {a}) > 3",
    "same residue": "x % 7 == {a} % 7",
    "at most": "x <= {a}",
    "at least": "x >= {a}",
}
HELPERS = '''import os
import sys


def _innermost(f):
    for args in ((), (None,), (None, None), (object(), object()), (-1,), ("", ""), (None, None, None)):
        try:
            f(*args)
        except Exception as exc:
            tb = exc.__traceback__
            while tb.tb_next:
                tb = tb.tb_next
            if tb.tb_frame.f_globals.get("__name__") == f.__module__:
                return tb
    return None


def raise_line(f):
    tb = _innermost(f)
    return -1 if tb is None else tb.tb_lineno


def raise_lasti(f):
    tb = _innermost(f)
    return -1 if tb is None else tb.tb_lasti
'''


@pytest.fixture(scope="module")
def minicart_tasks(tmp_path_factory, docker_ready, r2e_cache) -> list[Path]:
    out = tmp_path_factory.mktemp("blind") / "ds"
    config = GenerateConfig(repo=str(EXAMPLE), out=out, sandbox="docker", cache_dir=r2e_cache,
                            pipeline_opts={"strategy": "mutation", "limit": 3, "seed": 7, "validate_tasks": False})
    result = run_generate(config, Reporter(quiet=True))
    assert len(result.emitted) == 3
    return [DatasetPaths(out).task(t).root for t in result.emitted]


def _touched(diff: str) -> tuple[int, str]:
    """A number and a word from the lines B's diff adds (what a reference-count pin would look at)."""
    added = " ".join(line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++"))
    numbers = [int(n) for n in re.findall(r"\b\d+\b", added)] or [1]
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", added) or ["value"]
    return numbers[0], words[0]


def _prelude(cfg: dict, const: int, word: str) -> str:
    module = cfg["target_file"].removeprefix("src/").removesuffix(".py").replace("/", ".")
    path = ".".join(cfg["target_qualname"].split(".")[:-1])
    owner = f"m.{path}" if path else "m"
    return (f"import os\nimport sys\nimport {module} as m\nfrom r2e_blind_helpers import raise_line, raise_lasti\n"
            f"f = getattr({owner}, {cfg['target_qualname'].split('.')[-1]!r})\nCONST = {const}\nWORD = {word!r}\n")


def _value_on_a(task: Path, workspace: Path, prelude: str, expr: str, python: str) -> str | None:
    code = f"import sys\nsys.path[:0] = [{str(workspace / 'src')!r}, {str(workspace.parent)!r}]\n{prelude}\nprint(repr({expr}))"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, cwd=workspace, timeout=60)
    return done.stdout.strip() if done.returncode == 0 else None


def test_random_structural_pins_earn_nothing_on_every_task(minicart_tasks, tmp_path, portable_python):
    rng = random.Random(20261201)
    graded = passed_on_a = 0
    for task in minicart_tasks:
        cfg = json.loads((task / "tests" / "verifier_config.json").read_text())
        const, word = _touched((task / "tests" / "broken_patch.diff").read_text())
        prelude = _prelude(cfg, const, word)
        for fact_name, compare_name in rng.sample([(f, c) for f in FACTS for c in COMPARE], 8):
            root = tmp_path / f"{task.name}-{graded}"
            workspace = root / "workspace"
            shutil.copytree(task / "environment" / "repo", workspace)
            shutil.copytree(task / "tests", root / "tests")
            (root / "r2e_blind_helpers.py").write_text(HELPERS)
            value = _value_on_a(task, workspace, prelude, FACTS[fact_name], portable_python)
            if value is None:  # the fact cannot even be read on A: the pin could not pass anywhere
                continue
            body = (f"{prelude}\n\ndef test_pin():\n    x = {FACTS[fact_name]}\n"
                    f"    assert {COMPARE[compare_name].format(a=value)}\n")
            body = body.replace("from r2e_blind_helpers import raise_line, raise_lasti\n", HELPERS)
            (workspace / cfg["submission"]).write_text(body)
            details = score(workspace, root / "tests", root / "logs", python=portable_python, run_lint=False)
            assert details["reward"] == 0.0, (task.name, fact_name, compare_name, details["reason"])
            graded += 1
            passed_on_a += details["cases"] and details["cases"][0]["outcomes"]["A"] == "passed"
    assert graded >= 18  # most pins could be computed on A, and every one of them earned nothing
    assert passed_on_a >= graded // 3  # and many did pass on A: they were real pins, refused or moved later
