"""`repo2rlenv audit` on a real generated dataset (Docker): clean tasks pass every check, and each kind of
leak — in the instruction, in the build context, only in the built image, in the git history — is found
by the check that owns it. Duplicates are reported; bad input is one line and exit 2."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from repo2rlenv.audit.files import changed_lines, hidden_of
from repo2rlenv.dataset.taskdir import DatasetPaths


def _audit(dataset: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "repo2rlenv", "audit", str(dataset), *extra],
                          capture_output=True, text=True, timeout=900)


def _checks(dataset: Path) -> dict[str, dict[str, list[str] | str]]:
    report = json.loads((dataset / "audit.json").read_text())
    return {t["task_id"]: {c["name"]: c["verdict"] if c["verdict"] != "problem" else c["found"] for c in t["checks"]}
            for t in report["tasks"]}


@pytest.fixture
def dataset(scored_dataset, tmp_path) -> Path:
    out = tmp_path / "ds"
    shutil.copytree(scored_dataset, out, symlinks=True)
    return out


def _meta(task) -> dict:
    import tomllib

    return tomllib.loads(task.task_toml.read_text())["metadata"]["repo2env"]["test_synthesis"]


def test_a_generated_dataset_passes_every_check(dataset):
    res = _audit(dataset)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    checks = _checks(dataset)
    assert len(checks) == 2
    for verdicts in checks.values():
        assert verdicts == {"instruction": "ok", "environment": "ok", "network": "ok", "image": "ok", "history": "ok"}
    report = json.loads((dataset / "audit.json").read_text())
    assert report["images_checked"] is True and report["duplicates"] == []
    assert list(report["stats"]["repo"].values()) == [2] and sum(report["stats"]["difficulty"].values()) == 2
    assert (dataset / "browser.html").is_file()


_LONGEST_LINE = r'''
import inspect, _pytest.raises as r
def longest(mod):
    lines = [l.strip() for l in open(mod.__file__).read().splitlines()]
    return max((l for l in lines if '"' * 3 not in l and chr(92) not in l
                and not l.startswith(("#", "import", "from"))), key=len)
print(longest(inspect)); print(longest(r))
'''


def _base_lines(task) -> list[str]:
    """The longest line of the stdlib's inspect.py and of pytest's raises.py in the task's base image."""
    base = next(line.split()[1] for line in task.dockerfile.read_text().splitlines() if line.startswith("FROM"))
    res = subprocess.run(["docker", "run", "--rm", "--network", "none", base, "python3", "-c", _LONGEST_LINE],
                         capture_output=True, text=True, timeout=120, check=True)
    return res.stdout.splitlines()


def test_oracle_lines_that_installed_files_also_hold_are_no_leak(dataset):
    """Issue 34, item 5: an oracle line that the stdlib's inspect.py and pytest's raises.py hold verbatim is
    common text, not a leak; the audit names it under `common` and stays clean."""
    paths = DatasetPaths(dataset)
    task = paths.task(paths.task_ids()[0])
    shared = _base_lines(task)
    oracle = task.solution / Path(_meta(task)["test_path"]).name
    oracle.write_text(oracle.read_text() + '\n_SHARED = """\n' + "\n".join(shared) + '\n"""\n')
    assert set(shared) <= set(hidden_of(task, _meta(task)["test_path"]).oracle_lines)
    res = _audit(dataset)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    report = json.loads((dataset / "audit.json").read_text())
    image = next(c for t in report["tasks"] if t["task_id"] == task.root.name for c in t["checks"]
                 if c["name"] == "image")
    assert image["verdict"] == "ok"
    assert any("inspect.py" in c for c in image["common"]) and any("raises.py" in c for c in image["common"])


def test_each_leak_is_found_by_its_own_check(dataset):
    paths = DatasetPaths(dataset)
    first, second = paths.task_ids()
    one, two = paths.task(first), paths.task(second)
    meta = _meta(one)
    # 1. The instruction names the operator and the changed line.
    line = changed_lines(one.broken_patch.read_text())[0]
    one.instruction.write_text(one.instruction.read_text() + f"\nHint: look at line {line} ({meta['operator']}).\n")
    # 2. The build context holds a copy of the oracle under its own name.
    oracle = one.solution / Path(meta["test_path"]).name
    shutil.copy(oracle, one.repo / oracle.name)
    # 3. Task two's image holds the oracle's text, though neither its context nor its Dockerfile does, and
    #    its history has a second commit and an object no commit reaches.
    hidden = hidden_of(two, _meta(two)["test_path"])
    needle = hidden.oracle_lines[0]
    encoded = base64.b64encode(needle.encode()).decode()
    two.dockerfile.write_text(two.dockerfile.read_text() + (
        f"RUN mkdir -p /opt/notes && echo {encoded} | base64 -d > /opt/notes/n.txt\n"
        "RUN echo orphan | git hash-object -w --stdin >/dev/null"
        " && git -c user.name=x -c user.email=x@x commit -q --allow-empty -m again\n"))

    res = _audit(dataset)
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-3000:]
    checks = _checks(dataset)
    found_one = checks[first]
    assert any(f"line {line}" == f for f in found_one["instruction"])
    assert any(meta["operator"] in f for f in found_one["instruction"])
    assert any(oracle.name in f for f in found_one["environment"])
    # The planted copy is also the oracle's text inside the built image.
    assert any(f"/workspace/{oracle.name}" in f for f in found_one["image"])
    assert found_one["history"] == "ok"
    found_two = checks[second]
    assert found_two["instruction"] == "ok" and found_two["environment"] == "ok"
    assert found_two["image"] == [f"/opt/notes/n.txt holds {needle!r}"]
    assert any("2 commits" in f for f in found_two["history"])
    assert any("objects stored" in f or "unreachable" in f for f in found_two["history"])
    # The browser marks both tasks.
    assert (dataset / "browser.html").read_text().count('"problems": []') == 0


def test_a_leak_into_an_installed_library_file_is_still_found(dataset):
    """Installed files vouch for common text only while they hold what their package manifest says: the
    oracle's line appended to pytest's own raises.py is a leak (its RECORD hash no longer matches)."""
    paths = DatasetPaths(dataset)
    task = paths.task(paths.task_ids()[1])
    needle = hidden_of(task, _meta(task)["test_path"]).oracle_lines[0]
    encoded = base64.b64encode(("\n# " + needle + "\n").encode()).decode()
    target = "$(python3 -c 'import _pytest.raises as r; print(r.__file__)')"
    task.dockerfile.write_text(task.dockerfile.read_text() + f"RUN echo {encoded} | base64 -d >> {target}\n")
    res = _audit(dataset)
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-3000:]
    image = _checks(dataset)[task.root.name]["image"]
    assert len(image) == 1 and image[0].endswith(f"/site-packages/_pytest/raises.py holds {needle!r}"), image


def test_a_context_holding_b_instead_of_a_is_found(dataset):
    paths = DatasetPaths(dataset)
    task = paths.task(paths.task_ids()[0])
    subprocess.run(["git", "apply", "-p1", str(task.broken_patch)], cwd=task.repo, check=True)
    res = _audit(dataset, "--no-images")
    assert res.returncode == 1
    found = _checks(dataset)[task.root.name]
    assert any("does not apply" in f for f in found["environment"])
    assert found["image"] == "skipped" and found["history"] == "skipped"


def test_duplicates_are_reported_not_removed(dataset):
    paths = DatasetPaths(dataset)
    first = paths.task_ids()[0]
    copy = paths.tasks / (first + "x")
    shutil.copytree(paths.task(first).root, copy, symlinks=True)
    res = _audit(dataset, "--no-images")
    assert res.returncode == 1
    report = json.loads((dataset / "audit.json").read_text())
    assert [(d["task_id"], d["kept"], d["rule"]) for d in report["duplicates"]] == [(copy.name, first, "same change")]
    assert copy.is_dir()


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    res = _audit(tmp_path / "nothing-here")
    assert res.returncode == 2
    assert len(res.stderr.strip().splitlines()) == 1 and "not a repo2rlenv dataset" in res.stderr
    assert not (tmp_path / "nothing-here").exists()


def test_a_real_changes_own_words_and_a_networked_agent_are_found(dataset):
    """A real-history task: its change's subject in the instruction, a changelog line it added in the build
    context (and so in the image), and an agent with network (the fix is upstream) are each a problem."""
    from repo2rlenv.dataset.change_record import ChangeRecord

    paths = DatasetPaths(dataset)
    first, second = paths.task_ids()
    one, two = paths.task(first), paths.task(second)
    for task in (one, two):
        text = task.task_toml.read_text().replace('strategy = "mutation"', 'strategy = "commit_pair"\ncommit = "'
                                                  + "ab" * 20 + '"')
        task.task_toml.write_text(text.replace("[agent]\n", '[agent]\nnetwork_mode = "no-network"\n', 1)
                                  if task is two else text)
    added = "- Fixed the total when a coupon exceeds the subtotal (#1234)."
    record = ChangeRecord.of("ab" * 20, "Clamp the total at zero when coupons exceed it",
                             [({"CHANGES.md": "# Changes\n"}, {"CHANGES.md": f"# Changes\n{added}\n"})])
    assert record.added_lines == {"CHANGES.md": [added]}
    for task in (one, two):
        task.change.write_text(record.model_dump_json())
    one.instruction.write_text(one.instruction.read_text() + f"\n{record.subject}\n")
    (one.repo / "CHANGES.md").write_text(f"# Changes\n{added}\n")

    res = _audit(dataset)
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-3000:]
    checks = _checks(dataset)
    found_one = checks[first]
    assert found_one["instruction"] == [f"the change's subject {record.subject!r}"]
    assert found_one["environment"] == [f"environment/repo/CHANGES.md holds {added!r}"]
    assert any("CHANGES.md" in f for f in found_one["image"])
    assert len(found_one["network"]) == 1 and "network" in found_one["network"][0]
    # The other task keeps its change's words to tests/ and its agent offline: nothing to report.
    assert {k: checks[second][k] for k in ("instruction", "environment", "image", "network")} == \
        {"instruction": "ok", "environment": "ok", "image": "ok", "network": "ok"}


def test_a_b_line_that_a_holds_inside_a_longer_line_is_not_a_needle(tmp_path):
    """B's `return rccmp` is part of A's `return rccmp(a, b)`: searched as a substring it would be found in
    every image built from A (a false alarm on python-semver); a line of B that A lacks still is a needle."""
    from repo2rlenv.dataset.taskdir import TaskPaths

    task = TaskPaths(tmp_path / "t")
    task.repo.mkdir(parents=True)
    (task.repo / "semver.py").write_text("def f(a, b):\n    return rccmp(a, b)\n")
    task.tests.mkdir()
    task.broken_patch.write_text("--- a/semver.py\n+++ b/semver.py\n@@ -1,2 +1,3 @@\n def f(a, b):\n"
                                 "-    return rccmp(a, b)\n+    rccmp = a - b\n+    return rccmp\n")
    task.solution.mkdir()
    hidden = hidden_of(task, "tests/test_r2e_x.py")
    assert hidden.b_lines == ["rccmp = a - b"]
