"""Shared pieces of the solver and eval tests (loaded by path, like tests/llm/scripted_server.py).

- `TINY_FILES`: a one-module package whose function `discounted` has lines its own suite misses (7, 9);
- reply builders in the format the solver's prompts ask for (`file_reply`, `edit_reply`);
- `ensure_dataset`: tasks generated from examples/minicart once per test session (the Docker image each
  task builds is cached by content, so every Docker test shares it);
- `task_responder`: scripted replies for those tasks, chosen by the test path the request names.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from string import Template
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]
MODEL = "openai/scripted"
TEST_PATH = "tests/test_r2e_tiny.py"

TINY_FILES = {
    "pyproject.toml": '[project]\nname = "tinyshop"\nversion = "0.0.1"\n'
                      '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n',
    "tinyshop/__init__.py": "",
    "tinyshop/prices.py": (
        '"""Prices for the tiny shop."""\n'
        "\n"
        "\n"
        "def discounted(price: float, percent: float) -> float:\n"
        '    """The price after a percentage discount, rounded to cents."""\n'
        "    if percent < 0 or percent > 100:\n"
        '        raise ValueError("percent must be within 0..100")\n'
        "    if percent == 0:\n"
        "        return price\n"
        "    return round(price * (100 - percent) / 100, 2)\n"
        "\n"
        "\n"
        "def label(price: float) -> str:\n"
        '    return f"${price:.2f}"\n'
    ),
    "tests/test_prices.py": "from tinyshop.prices import discounted\n\n\ndef test_half_price():\n"
                            "    assert discounted(10.0, 50) == 5.0\n",
}
UNCOVERED = [7, 9]  # the raise and the early return: the existing suite runs neither

GOOD_TESTS = """\
import pytest

from tinyshop.prices import discounted


def test_zero_percent_keeps_the_price():
    assert discounted(12.5, 0) == 12.5


def test_negative_percent_is_refused():
    with pytest.raises(ValueError):
        discounted(1.0, -1)


def test_quarter_off():
    assert discounted(8.0, 25) == 6.0
"""

WRONG_TESTS = """\
from tinyshop.prices import discounted


def test_half_price_again():
    assert discounted(10.0, 50) == 6.0
"""


def instruction(test_path: str = TEST_PATH) -> str:
    """The task instruction, rendered from the real template for the tiny package."""
    template = Template((ROOT / "repo2rlenv" / "harbor_templates" / "instruction.md").read_text())
    return template.substitute(qualname="discounted", path="tinyshop/prices.py",
                               signature="def discounted(price: float, percent: float) -> float",
                               test_path=test_path, import_name="discounted", module="tinyshop.prices",
                               min_new_tests=1, max_test_loc=200)


def file_reply(text: str, path: str = TEST_PATH, *, preface: str = "Here is the file.") -> str:
    return f"{preface}\n\nFILE: {path}\n```python\n{text}```\n"


def edit_reply(search: str, replace: str, path: str = TEST_PATH) -> str:
    return f"EDIT: {path}\n```\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n```\n"


# ---------------------------------------------------------------------------- minicart tasks (Docker)

def ensure_dataset(cache: Path, n_tasks: int = 2) -> Path:
    """Tasks from examples/minicart (mutation strategy, no validation), generated once per session (the
    solver, eval and Harbor tests share them: each Docker generate is a minute of the suite)."""
    out = cache / f"solver-dataset-{n_tasks}"
    marker = out / ".complete"
    if marker.is_file():
        return out
    proc = subprocess.run(
        [sys.executable, "-m", "repo2rlenv", "generate", "--repo", "examples/minicart",
         "--pipeline-opt", "strategy=mutation", "--pipeline-opt", f"limit={n_tasks}",
         "--sandbox", "docker", "--no-validate", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
        env={**os.environ, "REPO2RLENV_CACHE": str(cache / "generate-cache")})
    assert proc.returncode == 0, f"generate failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    tasks = sorted(p for p in (out / "tasks").iterdir() if p.is_dir())
    assert len(tasks) == n_tasks, [p.name for p in tasks]
    marker.write_text("ok\n")
    return out


def task_dirs(dataset: Path) -> list[Path]:
    return sorted(p for p in (dataset / "tasks").iterdir() if p.is_dir())


def oracle_text(task: Path) -> tuple[str, str]:
    """(test path, oracle tests) of a task."""
    import tomllib

    test_path = tomllib.loads((task / "task.toml").read_text())["metadata"]["repo2env"]["test_synthesis"]["test_path"]
    return test_path, (task / "solution" / Path(test_path).name).read_text()


def weak_tests(task: Path) -> str:
    """Tests that pass on A but pin nothing down: the verifier pays them 0 (b_fail = 0)."""
    module = re.search(r"from\s+`([^`]+)`", (task / "instruction.md").read_text())
    name = re.search(r"contains\s+the\s+function\s+`([^`]+)`", (task / "instruction.md").read_text())
    assert module and name
    return f"from {module[1]} import {name[1].split('.')[0]}\n\n\ndef test_it_exists():\n    assert callable({name[1].split('.')[0]})\n"


def task_responder(scripted: Any, replies: dict[str, str]) -> Callable[[Any], Any]:
    """A server responder: plan requests get a short plan; generate/repair requests for the task whose
    test path they name get `replies[test_path]` as a FILE block."""

    def respond(request: Any) -> Any:
        text = request.text()
        if "make a plan" in text:
            return scripted.reply("1. Pin down the exact results of the function's branches.")
        for test_path, body in replies.items():
            if f"`{test_path}`" in text:
                return scripted.reply(file_reply(body, test_path))
        return scripted.error(400)

    return respond


# ---------------------------------------------------------------------------- real Harbor

def harbor_venv() -> Path:
    return Path(os.environ.get("R2E_HARBOR_VENV", "/opt/r2e-harbor"))


def harbor_problem(base_image: str) -> str | None:
    """Why real Harbor with podman cannot run here (scripts/harbor_setup.sh sets it up), or None."""
    import shutil

    for tool in ("python", "harbor", "podman-compose"):
        if not (harbor_venv() / "bin" / tool).exists():
            return f"{harbor_venv()}/bin/{tool} missing (bash scripts/harbor_setup.sh)"
    if shutil.which("podman") is None:
        return "podman not installed (bash scripts/harbor_setup.sh)"
    image = subprocess.run(["podman", "image", "exists", base_image], capture_output=True, timeout=60, check=False)
    if image.returncode != 0:
        return f"base image {base_image} not in podman's store (bash scripts/harbor_setup.sh)"
    return None
