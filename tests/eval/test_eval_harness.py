"""`repo2rlenv eval` on tasks generated from examples/minicart, with the model scripted over HTTP: the
results table and files, the totals, resuming a killed eval, and report.html rendered in headless Chromium
(totals read from the rendered page; every download link carries its artifact's exact bytes, offline)."""

from __future__ import annotations

import base64
import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from repo2rlenv.eval.formatting import coverage_gain
from repo2rlenv.eval.harness import EvalPaths
from repo2rlenv.cli.solver import eval_command

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def evaluated(docker_ready, r2e_cache, tmp_path_factory, scripted_module, solver_kit):
    """One eval of two tasks: the first answered with its oracle tests (reward 1), the second with tests
    that pin nothing down (reward 0). Module-scoped: the tests below read what it wrote."""
    scripted, kit = scripted_module, solver_kit
    dataset = kit.ensure_dataset(r2e_cache)
    first, second = kit.task_dirs(dataset)
    replies = {kit.oracle_text(first)[0]: kit.oracle_text(first)[1], kit.oracle_text(second)[0]: kit.weak_tests(second)}
    out = tmp_path_factory.mktemp("eval") / "run"
    patch = pytest.MonkeyPatch()
    patch.setenv("R2E_TEST_LLM_KEY", "sk-scripted-test")
    patch.setenv("NO_PROXY", "127.0.0.1,localhost")
    patch.setenv("R2E_PRICE_OPENAI_SCRIPTED", "1.0,2.0")
    try:
        with scripted.ScriptedServer(responder=kit.task_responder(scripted, replies)) as server:
            args = [str(dataset), "--llm", kit.MODEL, "--llm-base-url", server.base_url,
                    "--api-key-env", "R2E_TEST_LLM_KEY", "--out", str(out)]
            result = CliRunner().invoke(eval_command, args)
            yield {"result": result, "out": out, "dataset": dataset, "tasks": (first.name, second.name),
                   "server": server, "args": args, "replies": replies}
    finally:
        patch.undo()


def test_eval_prints_the_table_and_writes_the_results(evaluated):
    result, out = evaluated["result"], evaluated["out"]
    first, second = evaluated["tasks"]
    assert result.exit_code == 0, result.output + result.stderr
    assert "solve rate 50.0% (1/2 finished), mean reward 0.500" in result.stderr
    assert first in result.stderr and second in result.stderr  # the results table

    data = json.loads((out / "results.json").read_text())
    totals = data["totals"]
    assert (totals["tasks"], totals["solved"], totals["solve_rate"], totals["mean_reward"]) == (2, 1, 0.5, 0.5)
    # The weak tests never call the function, so the solver does not stop at "solved": it repairs once,
    # sees the same outcome again and stops with no progress (plan + generate, then plan + generate + repair).
    assert totals["calls"] == 5 and totals["stop_reasons"] == {"no_progress": 1, "solved": 1}
    assert totals["unfinished"] == 0 and totals["graded"] == 2
    # Every reply reports 100 prompt + 50 completion tokens at $1/$2 per million: $0.0002 per call.
    assert totals["cost_usd"] == pytest.approx(5 * 0.0002)
    rows = {t["task_id"]: t for t in data["tasks"]}
    # b_fail (the share of cases failing on B) is reported, not paid: the oracle's cases added for its
    # siblings pass on B.
    assert rows[first]["grade"]["reward"] == 1.0 and 0 < rows[first]["grade"]["b_fail"] <= 1.0
    assert rows[second]["grade"]["reward"] == 0.0
    assert "fails on B" in rows[second]["grade"]["reason"]  # the verifier's why, kept in the record
    assert rows[second]["final_tests"] == evaluated["replies"][rows[second]["test_path"]]
    md = (out / "results.md").read_text()
    assert "| 2 | 0 | 1 | 50.0% (1/2 finished) | 0.500 |" in md
    assert f"| {first} | 1.000 | 1.000 |" in md


def test_a_killed_eval_resumes_with_the_unfinished_task(evaluated, tmp_path):
    first, second = evaluated["tasks"]
    out = tmp_path / "resumed"
    shutil.copytree(evaluated["out"], out)
    paths = EvalPaths(out)
    # What a kill during the second task leaves: its journal line missing, its ledger half written.
    lines = paths.journal.read_text().splitlines()
    assert [json.loads(line)["task_id"] for line in lines] == [first, second]
    paths.journal.write_text(lines[0] + "\n")
    for name in ("results.json", "results.md", "report.html"):
        (out / name).unlink()
    server = evaluated["server"]
    before = len(server.requests)
    args = [a if a != str(evaluated["out"]) else str(out) for a in evaluated["args"]]
    result = CliRunner().invoke(eval_command, args)
    assert result.exit_code == 0, result.output + result.stderr

    assert f"{first}: done before (solved, reward 1), skipped" in result.stderr
    resent = [r.text() for r in server.requests[before:]]
    second_path = next(p for p in evaluated["replies"] if f"`{p}`" in resent[-1])
    # plan, generate, repair: only the unfinished task is asked again
    assert len(resent) == 3 and all(f"`{second_path}`" in text for text in resent)
    assert (paths.ledgers / f"{second}.aborted-1.jsonl").is_file()
    totals = json.loads(paths.results_json.read_text())["totals"]
    assert (totals["solved"], totals["mean_reward"]) == (1, 0.5)


class _Page(HTMLParser):
    """Text of elements by id, and download links, from a rendered DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.by_id: dict[str, str] = {}
        self.links: list[dict[str, str]] = []
        self.urls: list[str] = []
        self._open: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("src", "href"):
            if attrs.get(name):
                self.urls.append(attrs[name])
        if tag == "a" and "download" in (attrs.get("class") or ""):
            self.links.append(attrs)
        if attrs.get("id"):
            self._open.append(attrs["id"])
            self.by_id[attrs["id"]] = ""

    def handle_endtag(self, tag):
        if tag in ("td", "p", "ul", "table") and self._open:
            self._open.pop()

    def handle_data(self, data):
        if self._open:
            self.by_id[self._open[-1]] += data


def test_report_html_renders_the_totals_and_carries_every_artifact(evaluated, dump_dom):
    out: Path = evaluated["out"]
    dom = dump_dom((out / "report.html").as_uri())
    assert "<table" in dom
    page = _Page()
    page.feed(dom)

    keys = ("tasks", "unfinished", "solved", "solve-rate", "mean-reward")
    totals = {k: page.by_id[f"total-{k}"].strip() for k in keys}
    assert totals == {"tasks": "2", "unfinished": "0", "solved": "1", "solve-rate": "50.0% (1/2 finished)",
                      "mean-reward": "0.500"}
    saved = json.loads((out / "results.json").read_text())["totals"]
    assert page.by_id["total-mean-coverage-gain"].strip() == coverage_gain(saved["mean_coverage_gain"],
                                                                          saved["coverage_tasks"])
    # Self-contained: every URL in the page is a data: URL.
    assert page.urls and all(url.startswith("data:") for url in page.urls)
    by_path = {link["data-path"]: link for link in page.links}
    first, second = evaluated["tasks"]
    expected = {"results.json", "results.md"} | {f"{kind}/{task}.jsonl" for kind in ("ledgers", "trajectories")
                                                 for task in (first, second)}
    assert expected <= set(by_path)
    assert any(p.startswith(f"tests/{first}/") for p in by_path)
    for rel, link in by_path.items():
        payload = link["href"].split(",", 1)[1]
        assert base64.b64decode(payload) == (out / rel).read_bytes(), rel
        assert link["download"] == Path(rel).name
