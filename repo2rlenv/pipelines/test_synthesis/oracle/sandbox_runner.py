"""The adapter that lets the sandbox-agnostic differential oracle run its probe in a sandbox session.

Each call gets a fresh copy of A (or of A with the candidate's B files written over it), so nothing one
probe run leaves behind can change the next. The pytest sessions the probe starts (harvest, check) get the
options every run of this repo gets (`SuiteRunner.pytest_args`, through PYTEST_ADDOPTS): the repo's addopts
minus what breaks our runs. Without them an `-n auto` in addopts runs the covering tests in xdist workers,
where the harvester's trace function sees no call (bidict: 18 survivors, 0 calls recorded), and a `--cov`
whose plugin is absent stops the session before any test.
"""

from __future__ import annotations

import posixpath
import shlex
import uuid

from repo2rlenv.baseline.runner import SuiteRunner
from repo2rlenv.errors import SandboxError


class VariantRunner:
    """`runner(variant, argv, files) -> out.json text`, as the differential oracle's `Runner` protocol."""

    def __init__(self, suite: SuiteRunner, files_b: dict[str, str], *, timeout: float):
        self.suite = suite
        self.session = suite.session
        self.files_b = files_b
        self.timeout = timeout

    def __call__(self, variant: str, argv: list[str], files: dict[str, str]) -> str:
        base = posixpath.join(self.session.scratch, "variants", uuid.uuid4().hex[:10])
        root, scratch = posixpath.join(base, "repo"), posixpath.join(base, "scratch")
        res = self.session.exec(["mkdir", "-p", base], timeout=30)
        res = self.session.exec(["cp", "-a", self.session.workspace, root], timeout=120)
        if res.exit_code != 0:
            raise SandboxError(f"cannot copy the workspace: {res.tail(3)}")
        writes = {posixpath.join(scratch, name): text for name, text in files.items()}
        writes[posixpath.join(scratch, ".keep")] = ""
        if variant == "B":
            writes.update({posixpath.join(root, rel): text for rel, text in self.files_b.items()})
        self.session.write_files(writes)
        try:
            full = [self.session.python, *(a.replace("{scratch}", scratch) for a in argv)]
            env = {"PYTHONPATH": self.suite.pythonpath(root), "PYTEST_ADDOPTS": shlex.join(self.suite.pytest_args())}
            res = self.session.exec(full, cwd=root, env=env, timeout=self.timeout)
            out = self.session.read_file(posixpath.join(scratch, "out.json"))
            if out is None and res.timed_out:
                raise TimeoutError(f"the probe did not finish within {self.timeout:.0f}s")
            if out is None:
                raise SandboxError(f"probe wrote no output (exit {res.exit_code}): {res.tail(5)}")
            return out.decode("utf-8")
        finally:
            self.session.exec(["rm", "-rf", base], timeout=60)

