"""One-off test runs on a fresh copy of A with some files replaced: the tool every step after the gates
uses (the whole suite on B, a sibling against the oracle, twins against the covering tests, the oracle's
coverage on A).

Shared by the late stages (gate/, oracle/, emit/) the way `candidates.py` is: it sits beside the records
at the top of `test_synthesis/` so no stage folder has to import another to run a test.
"""

from __future__ import annotations

import posixpath
import uuid

from repo2rlenv.baseline.runner import SuiteRun, SuiteRunner
from repo2rlenv.errors import SandboxError


class WorkCopies:
    """Fresh copies of A in a session, with some files replaced, for one-off runs."""

    def __init__(self, suite: SuiteRunner):
        self.suite = suite
        self.session = suite.session

    def make(self, files: dict[str, str]) -> str:
        root = posixpath.join(self.session.scratch, "copies", uuid.uuid4().hex[:10])
        self.session.exec(["mkdir", "-p", posixpath.dirname(root)], timeout=30)
        res = self.session.exec(["cp", "-a", self.session.workspace, root], timeout=120)
        if res.exit_code != 0:
            raise SandboxError(f"cannot copy the workspace: {res.tail(3)}")
        if files:
            self.session.write_files({posixpath.join(root, rel): text for rel, text in files.items()})
        return root

    def drop(self, root: str) -> None:
        self.session.exec(["rm", "-rf", root], timeout=60)


class Trials:
    """Runs of chosen tests on A with `files` written over it, each in its own copy, and the one rule for
    when such a run on a B-side variant is a kill."""

    def __init__(self, suite: SuiteRunner, *, default_timeout: float, reward_mode: str):
        self.suite = suite
        self.copies = WorkCopies(suite)
        self.default_timeout = default_timeout
        self.reward_mode = reward_mode
        # The longest each test has taken in these runs. The baseline's one time per test can be far off in
        # a smaller run: on requests a test took 0.003 s in the whole suite and 28 s among its function's
        # covering tests (it depends on what ran before it), so a stage's share chosen from the baseline
        # alone can cost several times what it was given.
        self.seen: dict[str, float] = {}

    def durations(self, baseline: dict[str, float]) -> dict[str, float]:
        """Each test's time as a stage's share should count it: the longest of the baseline's and these runs'."""
        return {**baseline, **{t: max(d, baseline.get(t, 0.0)) for t, d in self.seen.items()}}

    def run(self, files: dict[str, str], tests: list[str], *, coverage: bool = False,
            timeout: float | None = None, extra_args: list[str] | None = None,
            deselect: list[str] | None = None) -> SuiteRun:
        root = self.copies.make(files)
        try:
            run = self.suite.run(root=root, tests=tests, with_coverage=coverage, extra_args=extra_args,
                                 timeout=timeout or self.default_timeout, deselect=deselect)
            for name, result in run.results.items():
                self.seen[name] = max(self.seen.get(name, 0.0), result.duration_sec)
            return run
        finally:
            self.copies.drop(root)

    def passes(self, files: dict[str, str], tests: list[str]) -> bool:
        """Every one of `tests` ran and passed, in time."""
        run = self.run(files, tests)
        return bool(run.results) and not run.not_passed() and not run.timed_out

    def caught(self, run: SuiteRun) -> bool:
        """Whether the oracle's run on a B-side variant is a kill as the reward counts it: in the gated form
        some test fails (a sibling's tests pass on B, B's on the sibling); in the RFC form, whose b_fail is
        the share of cases failing, every one does."""
        if not run.results or run.timed_out:
            return False
        return bool(run.not_passed()) if self.reward_mode == "gated" else not run.passed()

    def catches(self, oracle: str, files_b: dict[str, str], test_path: str) -> bool:
        """Whether `oracle`, written at `test_path`, kills the variant whose changed files are `files_b`."""
        return self.caught(self.run({**files_b, test_path: oracle}, [test_path]))
