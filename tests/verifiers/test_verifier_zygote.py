"""The warm zygote that starts the verifier's test runs: it grades exactly like fresh subprocesses, keeps
runs apart from each other and from the verifier, kills what hangs, survives what crashes, and falls back
to subprocesses when it cannot serve. Runs of a batch are released together."""

from __future__ import annotations

import json
import os
import random
import re
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from repo2rlenv.verifiers.test_synthesis import verifier_launch as vlaunch
from repo2rlenv.verifiers.test_synthesis import verifier_layout as vlayout
from repo2rlenv.verifiers.test_synthesis import verifier_run as vrun
from repo2rlenv.verifiers.config_model import RewardDetails

pytestmark = pytest.mark.slow
OWNER = (vrun.NOBODY, vrun.NOBODY) if os.geteuid() == 0 else None
SECRET = "r2e-verifier-secret-5d1c"

# Appended to the submissions below: one case that discriminates, so that every variant runs.
HUNDRED = """

def test_hundred():
    from shopcalc.pricing import apply_discount

    assert apply_discount(10, 100) == 5
"""

# What a test can observe of its process, printed when the process exits: the same in both launch paths.
FACTS = r'''import atexit
import json
import os
import random
import resource
import signal
import sys
import tempfile


def _read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", "replace")
    except OSError as exc:
        return type(exc).__name__


def test_facts():
    limits = {n: resource.getrlimit(getattr(resource, "RLIMIT_" + n)) for n in ("AS", "NPROC", "FSIZE", "CORE", "CPU")}
    facts = {
        "path": sys.path, "env": dict(os.environ), "argv": sys.argv, "cwd": os.getcwd(),
        "ids": [os.getuid(), os.getgid(), sorted(os.getgroups())], "random": random.random(), "hash": hash("r2e"),
        "tmp": tempfile.gettempdir(), "main": getattr(sys.modules["__main__"], "__file__", None),
        "flags": [sys.flags.dont_write_bytecode, sys.flags.no_user_site, sys.flags.isolated],
        "limits": limits, "leader": os.getsid(0) == os.getpid(), "stdin": os.readlink("/proc/self/fd/0"),
        "signals": [str(signal.getsignal(s)) for s in (signal.SIGINT, signal.SIGPIPE, signal.SIGCHLD, signal.SIGTERM)],
        "environ": sorted(_read("/proc/self/environ").split("\0")), "status_uid": _read("/proc/self/status").count("Uid:"),
        "encoding": sys.stdout.encoding, "umask": os.umask(0o022),
    }
    base = os.path.dirname(os.path.dirname(os.getcwd()))
    line = "FACTS " + json.dumps(facts, sort_keys=True).replace(base, "<base>") + "\\n"
    atexit.register(os.write, 2, line.encode())
''' + HUNDRED

NO_LEAKS = '''import builtins
import os
import sys

# The changed module is imported at the session's start (sealed): from this run's own copy.
SEEN = [hasattr(builtins, "r2e_mark"), "R2E_MARK" in os.environ, "r2e_mark_module" in sys.modules,
        not sys.modules["shopcalc.pricing"].__file__.startswith(os.getcwd() + "/")]
builtins.r2e_mark = True
os.environ["R2E_MARK"] = "1"
sys.modules["r2e_mark_module"] = sys

import shopcalc.pricing  # noqa: E402,F401


def test_starts_clean():
    assert SEEN == [False, False, False, False]
''' + HUNDRED

# Which needles occur in the readable memory of process `pid` (shared by the submission below and this file).
SCAN = '''def _scan(pid, needles):
    found = set()
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb") as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if not perms.startswith("r"):
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(start)
                chunk = mem.read(end - start)
            except (OSError, ValueError, OverflowError):
                continue
            found |= {n for n in needles if n in chunk}
    return found
'''


def _from_source(source: str, name: str):
    namespace: dict = {}
    exec(source, namespace)
    return namespace[name]


# Reads what it can of its own and its parent's environment, command line and memory.
SNOOP = '''import os

SECRETS = [b"@@SECRET@@", b"@@MARKER@@"]


def _read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return b""


''' + SCAN + '''

def test_nothing_secret_in_reach():
    blob = repr(dict(os.environ)).encode()
    for pid in ("self", str(os.getppid())):
        blob += _read(f"/proc/{pid}/environ") + _read(f"/proc/{pid}/cmdline")
    assert not any(s in blob for s in SECRETS)
    try:
        assert _scan(os.getppid(), SECRETS) == set()
    except OSError:  # the parent's memory is out of reach: nothing to find there either
        pass
''' + HUNDRED


def _facts(details: dict, variant: str) -> dict:
    tail = next(v["output_tail"] for v in details["variants"] if v["name"] == variant)
    match = re.search(r"FACTS (\{.*\})", tail)
    assert match, tail
    return json.loads(match.group(1))


def _normalized(facts: dict) -> dict:
    """Facts with the run's own random dir name and uid replaced: every run has its own."""
    run_dir = facts["cwd"].rsplit("/", 2)[-2]
    normal = json.loads(json.dumps(facts, sort_keys=True).replace(run_dir, "<run>"))
    normal["ids"] = ["<uid>", "<gid>", ["<gid>"] if facts["ids"][2] else []]
    return normal


def test_zygote_children_see_what_a_fresh_pytest_process_sees(make_task):
    task = make_task(FACTS)
    fast = task.score(run_lint=False, rng=random.Random(0))
    slow = task.score(run_lint=False, rng=random.Random(0), zygote=False)
    assert fast["runner"] == {"via": "zygote", "note": ""}
    assert slow["runner"] == {"via": "subprocess", "note": "zygote switched off"}
    for variant in ("A", "A′1", "B′1"):
        assert _normalized(_facts(fast, variant)) == _normalized(_facts(slow, variant))
    facts = _normalized(_facts(fast, "A"))
    assert facts["cwd"] == "<base>/<run>/ws"
    assert facts["path"][:3] == ["<base>/<run>/ws/tests", "<base>/<run>/ws", "<base>/boot"]
    assert facts["env"]["PYTHONPATH"] == "<base>/boot:<base>/<run>/ws/src" and facts["tmp"] == "<base>/<run>/tmp"
    assert facts["main"].endswith("pytest/__main__.py") and facts["leader"] and facts["stdin"] == "/dev/null"
    assert facts["environ"] == ["PermissionError"] and facts["status_uid"] == 0  # Landlock: no /proc
    for run in ("A′1", "A′4", "B′2"):  # nothing differs between variants either, but for their own paths and uids
        assert _normalized(_facts(fast, run)) == facts


def test_zygote_and_subprocess_runs_grade_alike(make_task):
    # Two siblings, one case catching only B and the cap sibling, coverage of one target: every term is partial.
    text = ("from shopcalc.pricing import apply_discount\n\n\ndef test_cap():\n    assert apply_discount(10, 80) == 5\n\n\n"
            "def test_hundred():\n    assert apply_discount(10, 100) == 5\n")
    task = make_task(text, siblings=2)
    fast, slow = task.score(rng=random.Random(5)), task.score(rng=random.Random(5), zygote=False)
    for key in ("reward", "reason", "b_pass", "b_fail", "cov", "n_cases", "cases", "coverage", "isolation", "kills"):
        assert fast[key] == slow[key], key
    assert {v["via"] for v in fast["variants"]} == {"zygote"}
    assert {v["via"] for v in slow["variants"]} == {"subprocess"}
    assert 0 < fast["reward"] < 1
    RewardDetails.model_validate(fast)


def test_no_state_carries_from_one_run_to_the_next(make_task):
    details = make_task(NO_LEAKS).score(run_lint=False)
    assert set(details["cases"][0]["outcomes"].values()) == {"passed"}


def test_the_runs_of_a_batch_get_the_same_job_but_for_their_own_dirs_and_uid(make_task, kit, monkeypatch):
    sent: list[list[dict]] = []
    real = vlaunch.request_line
    monkeypatch.setattr(vlaunch, "request_line", lambda jobs: sent.append(jobs) or real(jobs))
    details = make_task(kit.GOOD_TEST, siblings=1).score()
    assert (details["b_fail"], details["mutation_score"]) == (1.0, 0.0)  # B caught, the sibling (0% off raises) not
    assert [len(batch) for batch in sent] == [1, 9]  # A alone, then A′1-4, B′1-4 and the sibling together

    def blank(job: dict) -> str:
        text = json.dumps(job, sort_keys=True)
        text = text.replace(job["cwd"].rsplit("/", 2)[-2], "<run>").replace(job["log"].rsplit("/", 1)[-1], "<log>")
        if job["owner"]:
            text = text.replace(f"[{job['owner'][0]}, {job['owner'][1]}]", "<owner>")
        return text

    assert len({blank(job) for job in sent[1]}) == 1  # which run is which variant is not in the request
    assert b"broken" not in real(sent[1]) and "B′".encode() not in real(sent[1])
    assert len({job["cwd"] for job in sent[1]}) == 9 and len({tuple(job["owner"] or [0]) for job in sent[1]}) in (1, 9)
    # A alone records coverage (its record is the one read), with a key of its own.
    assert [[job["guard"].get("cover") is not None for job in batch] for batch in sent] == [[True], [False] * 9]


def test_runs_find_no_secret_of_the_verifier_anywhere(make_task, kit, monkeypatch):
    monkeypatch.setenv("R2E_VERIFIER_SECRET", SECRET)
    marker = kit.BROKEN[1]  # only in B's diff, which the verifier reads after the zygote started
    task = make_task(SNOOP.replace("@@SECRET@@", SECRET).replace("@@MARKER@@", marker))
    details = task.score(run_lint=False)
    assert set(details["cases"][0]["outcomes"].values()) == {"passed"}


_scan = _from_source(SCAN, "_scan")


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A scratch dir the run uid can reach (pytest's own tmp_path is private to root)."""
    with tempfile.TemporaryDirectory(prefix="r2e-zygote-test-") as tmp:
        yield Path(tmp)


def _launcher(scratch: Path, python: str) -> tuple[vrun.Layout, vlaunch.Launcher]:
    layout = vrun.Layout.create(scratch)
    layout.write_boot([scratch / "hidden"])
    return layout, vlayout.start_launcher(layout, python, probe_owner=OWNER)


def _runner(layout: vrun.Layout, launcher: vlaunch.Launcher, timeout: float = 60) -> vrun.Runner:
    return vrun.Runner(layout, launcher, vrun.Limits(timeout, 1024), [""], "test_it.py", "target.py", ["target.py"],
                       vrun.readable_roots(layout, launcher.python, [layout.base / "hidden"]))


def _run(layout: vrun.Layout, test_source: str) -> vrun.Run:
    dirs = layout.new_run(random.Random(), OWNER)
    dirs.ws.mkdir()
    (dirs.ws / "test_it.py").write_text(test_source)
    (dirs.ws / "target.py").write_text("def f():\n    return 1\n")
    for path in (dirs.ws, dirs.ws / "test_it.py"):
        if OWNER is not None:
            os.chown(path, *OWNER)
    return vrun.Run("A", dirs, OWNER)


def test_the_zygote_never_holds_what_the_verifier_knows(scratch, portable_python):
    secret = f"{SECRET}-in-the-verifier".encode()  # alive in this process the whole time
    layout, launcher = _launcher(scratch, portable_python)
    try:
        run = _run(layout, "def test_ok():\n    pass\n")
        (result,) = _runner(layout, launcher).run_batch([run])
        assert (result.status.value, result.via) == ("ok", "zygote"), result.output_tail
        zygote = launcher.zygote
        assert zygote is not None
        found = _scan(zygote.proc.pid, [secret, str(run.dirs.ws).encode()])
        assert found == {str(run.dirs.ws).encode()}  # it read its request, and nothing else
    finally:
        launcher.close()


def test_a_hanging_run_is_killed_and_the_zygote_serves_on(scratch, portable_python):
    layout, launcher = _launcher(scratch, portable_python)
    hang = "import time\n\n\ndef test_hang():\n    time.sleep(600)\n"
    try:
        runner = _runner(layout, launcher, timeout=3)
        hung, fine = runner.run_batch([_run(layout, hang), _run(layout, "def test_ok():\n    pass\n")])
        assert hung.status.value == "timeout" and hung.returncode is None and hung.seconds < 15
        assert fine.status.value == "ok" and fine.cases  # its batch-mate was not held up or killed
        (ok,) = _runner(layout, launcher).run_batch([_run(layout, "def test_ok():\n    pass\n")])
        assert (ok.status.value, ok.via) == ("ok", "zygote"), ok.output_tail  # the zygote is unharmed
        runner.end()
        assert vrun.processes_of(runner.uids) == []
    finally:
        launcher.close()


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] in ("Z", "X")  # dead, waiting for a non-reaping init


@pytest.mark.parametrize(("body", "returncode"), [
    ("import os\n\n\ndef test_quit():\n    os._exit(3)\n", 3),
    ("import os\nimport signal\n\n\ndef test_segfault():\n    os.kill(os.getpid(), signal.SIGSEGV)\n", -11),
], ids=["os._exit", "segfault"])
def test_a_run_that_dies_gives_no_result_and_the_zygote_serves_on(make_task, body, returncode):
    details = make_task(body + HUNDRED).score(run_lint=False)
    ran = [v for v in details["variants"] if v["status"] != "not_run"]
    assert [v["name"] for v in ran] == ["A"]  # nothing of A counts: nothing else runs
    assert {(v["status"], v["returncode"], v["via"]) for v in ran} == {("crashed", returncode, "zygote")}
    assert details["runner"] == {"via": "zygote", "note": ""} and details["reward"] == 0.0
    assert details["reason"].startswith("the run on A did not finish")


def test_a_zygote_that_cannot_start_leaves_the_runs_to_subprocesses(make_task, kit, monkeypatch):
    real = vlaunch.zygote_command
    monkeypatch.setattr(vlaunch, "zygote_command", lambda python, mode, *args: (
        [python, "-c", "import sys; sys.exit('no warm-up today')"] if mode == "serve" else real(python, mode, *args)))
    details = make_task(kit.GOOD_TEST).score()
    assert details["reward"] == 1.0
    assert details["runner"]["via"] == "subprocess"
    assert details["runner"]["note"] == "the zygote exited: no warm-up today"
    assert {v["via"] for v in details["variants"]} == {"subprocess"}
    if OWNER is not None:
        assert details["isolation"]["dropped_privileges"] is True  # probed by a subprocess instead


class _LostZygote:
    def __init__(self, ran: bool):
        self.ran = ran
        self.closed = False

    def launch_batch(self, jobs, timeout):
        raise vlaunch.ZygoteLost("the zygote exited: gone", ran=self.ran)

    def close(self):
        self.closed = True


@pytest.mark.parametrize("ran", [True, False])
def test_a_lost_zygote_never_reruns_a_started_job(tmp_path, monkeypatch, ran):
    calls = []
    monkeypatch.setattr(vlaunch, "launch_subprocesses", lambda python, jobs, **k: calls.append(jobs) or [
        vlaunch.Launched(0, False, 0.0, 0, vlaunch.Via.subprocess) for _ in jobs])
    stub = _LostZygote(ran)
    launcher = vlaunch.Launcher(sys.executable, tmp_path, {}, tmp_path, zygote=stub)  # type: ignore[arg-type]
    (first,) = launcher.launch([{"x": 1}], logs=[tmp_path / "log"], timeout=5)
    assert stub.closed and launcher.zygote is None and launcher.note == "the zygote exited: gone"
    if ran:  # its child ran on the copy: no second attempt, no result
        assert (first.returncode, first.via, calls) == (None, vlaunch.Via.zygote, [])
    else:
        assert (first.returncode, first.via, calls) == (0, vlaunch.Via.subprocess, [[{"x": 1}]])
    assert launcher.launch([{"x": 1}], logs=[tmp_path / "log"], timeout=5)[0].via == vlaunch.Via.subprocess


def test_the_rehearsal_leaves_imports_and_caches_but_nothing_a_run_could_tell(tmp_path):
    # The zygote rehearses one pytest session (a passing and a failing case) before forking: what it keeps
    # is pytest's lazily built state; what it undoes is everything a run could see of it.
    import subprocess

    folder = Path(vlaunch.__file__).parent
    probe = f"""
import json, os, sys, tempfile
sys.path.insert(0, {str(folder)!r})
os.environ["TMPDIR"] = {str(tmp_path)!r}
tempfile.tempdir = None
import verifier_zygote
before = (list(sys.path), dict(os.environ), list(sys.meta_path), sys.stdout, sys.stderr)
verifier_zygote.warm(rehearsal=True)
import inspect, re
print(json.dumps({{
    "path": sys.path == before[0], "environ": dict(os.environ) == before[1], "finders": sys.meta_path == before[2],
    "streams": (sys.stdout, sys.stderr) == before[3:],
    "test module": [m for m in sys.modules if "rehearsal" in m],
    "left on disk": os.listdir({str(tmp_path)!r}),
    "inspect knows pytest": any("_pytest" in f for f in inspect.modulesbyfile),
    "regexes cached": len(re._cache) > 0,
    "explainer imported": "_pytest.assertion.util" in sys.modules,
}}))
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "path": True, "environ": True, "finders": True, "streams": True, "test module": [], "left on disk": [],
        "inspect knows pytest": True, "regexes cached": True, "explainer imported": True}
