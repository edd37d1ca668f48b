"""The dataset browser in headless Chromium: filters from the URL, the hidden change behind a closed
reveal, every text shown literally (an instruction holding markup stays text), duplicates listed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from repo2rlenv.dataset.taskdir import DatasetPaths

MARKUP = "</script><script>document.title='owned'</script><b>bold</b>"


def test_the_browser_filters_reveals_and_shows_text_literally(scored_dataset, tmp_path, dump_dom):
    out = tmp_path / "ds"
    shutil.copytree(scored_dataset, out, symlinks=True)
    paths = DatasetPaths(out)
    first, second = paths.task_ids()
    paths.task(first).instruction.write_text(paths.task(first).instruction.read_text() + "\n" + MARKUP + "\n")
    shutil.copytree(paths.task(second).root, paths.tasks / (second + "b"), symlinks=True)
    res = subprocess.run([sys.executable, "-m", "repo2rlenv", "audit", str(out), "--no-images"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 1, res.stderr[-2000:]  # the duplicate
    report = json.loads((out / "audit.json").read_text())
    difficulty = {t["task_id"]: t["difficulty"] for t in report["tasks"]}

    page = out / "browser.html"
    dom = dump_dom(page.as_uri())
    cards = re.findall(r'<div class="task[^"]*" data-task="([^"]+)"', dom)
    assert sorted(cards) == sorted(difficulty)
    assert f"{len(cards)} of {len(cards)} tasks shown" in dom
    # Markup in a task's text is shown as text: no element was made of it and no script of it ran.
    assert "&lt;/script&gt;&lt;script&gt;document.title='owned'&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;" in dom
    assert "<b>bold</b>" not in dom and "<title>owned</title>" not in dom
    # The hidden change sits in a closed reveal, one per task.
    reveals = re.findall(r'<details class="hidden-change"( open)?>', dom)
    assert len(reveals) == len(cards) and not any(reveals)
    # The duplicate is listed with the task kept.
    assert f"<td>{second}b</td><td>{second}</td><td>same change</td>" in dom

    # Filters come from the URL: one difficulty shows just its tasks.
    chosen = difficulty[first]
    dom = dump_dom(page.as_uri() + f"#difficulty={chosen}")
    shown = re.findall(r'<div class="task[^"]*" data-task="([^"]+)"', dom)
    assert sorted(shown) == sorted(t for t, d in difficulty.items() if d == chosen)
    assert f"{len(shown)} of {len(cards)} tasks shown" in dom
    dom = dump_dom(page.as_uri() + "#difficulty=no-such-level")
    assert f"{len(cards)} of {len(cards)} tasks shown" in dom  # an unknown value falls back to all
