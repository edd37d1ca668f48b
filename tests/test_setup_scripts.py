"""Set-up scripts tell litellm to use its bundled price table before anything can import it: otherwise
every `import litellm` (ours, or Harbor's at its start) tries the network and prints its retries."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SCRIPTS = sorted((Path(__file__).resolve().parents[1] / "scripts").glob("*.sh"))
EXPORT = re.compile(r"^export LITELLM_LOCAL_MODEL_COST_MAP=True$", re.M)
# Python or Harbor run on the host (not inside an image build's RUN lines).
RUNS_PYTHON = re.compile(r"^(?!\s*(#|RUN |--include))[^\n]*(python3 -c|python3 -m pip|/bin/harbor\b|\bharbor run)", re.M)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_script_that_runs_python_exports_the_local_price_map_before_its_first_command(script):
    text = script.read_text()
    if not RUNS_PYTHON.search(text):
        return
    match = EXPORT.search(text)
    assert match is not None, f"{script.name} runs Python or Harbor without exporting LITELLM_LOCAL_MODEL_COST_MAP=True"
    first_command = next(m.start() for m in re.finditer(r"^(?!#|set |\s*$|export )\S", text, re.M))
    assert match.start() < first_command, f"{script.name} exports it only after its first command"
