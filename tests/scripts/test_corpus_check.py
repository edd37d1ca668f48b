"""scripts/corpus_check.py: the list format, the error line it reads, and the table it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus(load_script):
    return load_script("corpus_check")


def test_parse_list_maps_mirrors(corpus, tmp_path: Path):
    (tmp_path / "mirror" / "pallets+itsdangerous" / "repo").mkdir(parents=True)
    text = "# header\n\npallets/itsdangerous   # flit, src\nhukkin/tomli # flit\n./local/repo\n"
    entries = corpus.parse_list(text, tmp_path / "mirror")
    assert [(e.name, e.comment) for e in entries] == [("pallets/itsdangerous", "flit, src"), ("hukkin/tomli", "flit"),
                                                      ("./local/repo", "")]
    assert entries[0].spec == str(tmp_path / "mirror" / "pallets+itsdangerous" / "repo")
    assert entries[1].spec == "hukkin/tomli"  # no mirror: generate clones it


def test_the_shipped_list_is_long_and_varied(corpus):
    entries = corpus.parse_list((ROOT / "scripts" / "corpus" / "popular.txt").read_text())
    assert len(entries) >= 15 and all(e.comment for e in entries)
    styles = " ".join(e.comment for e in entries)
    for style in ("setup.py", "setuptools-scm", "hatch-vcs", "flit", "poetry", "pdm", "src layout", "unittest"):
        assert style in styles, style
    # Repos this project's tests and benchmarks use (the example, its benchmark repos, pytest's own deps).
    names = {e.name.split("/")[1].lower() for e in entries}
    assert not names & {"minicart", "more-itertools", "cachetools", "pluggy", "iniconfig", "attrs"}


@pytest.mark.parametrize(
    ("stderr", "expected"),
    [("noise\nerror: baseline: no test passes at the ref (full output: /o/logs/baseline.log)\n",
      ("baseline", "no test passes at the ref (full output: /o/logs/baseline.log)")),
     ("error: coverage report failed: No data\n", (None, "coverage report failed: No data")),
     ("Traceback ...\nKeyError: 'x'\n", (None, "KeyError: 'x'")),
     ("", (None, ""))],
)
def test_error_line(corpus, stderr, expected):
    assert corpus.error_line(stderr) == expected


def test_table_writer(corpus, tmp_path: Path):
    rows = [corpus.CorpusRow(repo="a/ok", backend="flit_core.buildapi", stage="done", tests=10, candidates=40,
                             survived=5, emitted=3, validated=3),
            corpus.CorpusRow(repo="b/bad", backend="hatchling.build", stage="environment",
                             cause="pip could not build | the project's metadata")]
    corpus.write_outputs(tmp_path, rows, command="python3 scripts/corpus_check.py L --out D")
    md = (tmp_path / "corpus.md").read_text().splitlines()
    assert md[0] == "# Corpus: 1/2 (50%) repos emit ≥ 3 validated tasks"
    assert "Command: `python3 scripts/corpus_check.py L --out D`" in md
    header = md.index("| repo | backend | stage reached | tests | candidates | survived | emitted | validated | cause |")
    assert md[header + 2] == "| a/ok | flit_core.buildapi | done | 10 | 40 | 5 | 3 | 3 |  |"
    assert md[header + 3] == ("| b/bad | hatchling.build | environment | – | – | – | 0 | 0 | "
                              "pip could not build \\| the project's metadata |")
    data = json.loads((tmp_path / "corpus.json").read_text())
    assert [d["repo"] for d in data] == ["a/ok", "b/bad"] and data[1]["cause"].startswith("pip could not build")


def test_resumes_repos_already_measured(corpus, tmp_path: Path, monkeypatch):
    listing = tmp_path / "list.txt"
    listing.write_text("a/done\nb/new\n")
    done = tmp_path / "out" / "repos" / "a+done"
    done.mkdir(parents=True)
    (done / "result.json").write_text(corpus.CorpusRow(repo="a/done", stage="done", emitted=3,
                                                       validated=3).model_dump_json())
    measured = []

    def fake_measure(entry, repo_dir, timeout):
        measured.append((entry.name, timeout))
        return corpus.CorpusRow(repo=entry.name, stage="baseline", cause="no test passes at the ref")

    monkeypatch.setattr(corpus, "measure", fake_measure)
    assert corpus.main([str(listing), "--out", str(tmp_path / "out"), "--timeout-per-repo", "60"]) == 0
    assert measured == [("b/new", 60.0)]
    assert (tmp_path / "out" / "repos" / "b+new" / "result.json").is_file()
    assert "| b/new | ? | baseline |" in (tmp_path / "out" / "corpus.md").read_text()
    assert "1/2 (50%)" in (tmp_path / "out" / "corpus.md").read_text()


def test_a_mirror_that_cannot_be_checked_out_is_a_row_not_a_crash(corpus, tmp_path: Path, monkeypatch):
    """A mirror missing a file's contents failed its clone's checkout and took the whole measurement down with
    it; now that repo's row says so (stage source), nothing half checked out is left, and the list goes on."""
    listing = tmp_path / "list.txt"
    listing.write_text("c/broken\nd/fine\n")
    broken = tmp_path / "mirror" / "c+broken" / "repo"
    broken.mkdir(parents=True)
    (broken / "HEAD").write_text("ref: refs/heads/main\n")  # looks like a bare clone, is none
    measured = []
    monkeypatch.setattr(corpus, "measure", lambda entry, repo_dir, timeout: measured.append(entry.name)
                        or corpus.CorpusRow(repo=entry.name, stage="done", emitted=3, validated=3))
    out = tmp_path / "out"
    assert corpus.main([str(listing), "--out", str(out), "--mirror", str(tmp_path / "mirror")]) == 0
    assert measured == ["d/fine"]
    row = corpus.CorpusRow.model_validate_json((out / "repos" / "c+broken" / "result.json").read_text())
    assert row.stage == "source" and row.cause.startswith(f"git clone of {broken} failed: ")
    assert not (out / "checkouts" / "c" / "broken").exists()


def test_a_run_stopped_at_the_limit_says_how_far_it_got(corpus, tmp_path: Path):
    state = tmp_path / ".r2e-state"
    state.mkdir()
    lines = ['{"skip_reason": "killed by existing tests"}'] * 3 + ['{"skip_reason": null}', '{"skip_re']
    (state / "k.jsonl").write_text("\n".join(lines))
    assert corpus._decided_so_far(tmp_path) == " after 4 candidates decided (killed by existing tests: 3, emitted: 1)"
    assert corpus._decided_so_far(tmp_path / "none") == ""


def _log(path: Path, code, stdout: str, stderr: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"$ repo2rlenv x\n# exit {code} after 12s\n--- stdout\n{stdout}\n--- stderr\n{stderr}\n")


def test_row_read_back_from_the_logs(corpus, tmp_path: Path):
    doctor = {"backend": "flit_core.buildapi", "tests": None, "stage_reached": "environment",
              "problems": [{"kind": "baseline_failed", "stage": "baseline", "line": "no test passes at the ref"},
                           {"kind": "collection_errors", "stage": "baseline",
                            "line": "1 files fail to collect: t/test_x.py (first: ModuleNotFoundError: freezegun)"}]}
    _log(tmp_path / "doctor.log", 1, json.dumps(doctor), "")
    _log(tmp_path / "generate.log", 1, "", "» opening\nerror: baseline: no test passes at the ref (full output: L)")
    entry = corpus.RepoEntry(name="pallets/itsdangerous", spec=str(tmp_path / "nowhere"))
    row = corpus.read_row(entry, tmp_path, 480)
    assert (row.backend, row.stage, row.emitted, row.seconds) == ("flit_core.buildapi", "baseline", 0, 24.0)
    assert row.cause == ("no test passes at the ref (full output: L); baseline: 1 files fail to collect: "
                         "t/test_x.py (first: ModuleNotFoundError: freezegun)")
    assert corpus.read_log(tmp_path / "missing.log") is None


def test_rerender_reads_the_causes_with_the_runs_own_limit(corpus, tmp_path: Path):
    listing = tmp_path / "list.txt"
    listing.write_text(f"{tmp_path / 'repo'}\n")
    (tmp_path / "repo").mkdir()
    repo_dir = tmp_path / "out" / "repos" / corpus.slug(str(tmp_path / "repo"))
    _log(repo_dir / "doctor.log", None, "", "")  # doctor stopped at the limit
    (repo_dir / "result.json").write_text(corpus.CorpusRow(repo="r", limit=900).model_dump_json())
    assert corpus.main([str(listing), "--out", str(tmp_path / "out"), "--rerender", "--timeout-per-repo", "60"]) == 0
    row = corpus.CorpusRow.model_validate_json((repo_dir / "result.json").read_text())
    assert row.cause == "doctor: over the 900s limit" and row.limit == 900


def test_generate_gets_what_doctor_left_of_the_limit_as_its_budget(corpus):
    assert corpus.budget_opts(1200 - 200) == ["--pipeline-opt", "time_budget_min=15.2"]
    assert corpus.budget_opts(30) == ["--pipeline-opt", "time_budget_min=1.0"]
