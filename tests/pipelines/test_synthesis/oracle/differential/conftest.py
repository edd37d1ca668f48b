"""Fixtures for the differential oracle: tiny A/B repo pairs and a runner that executes the probe for real.

The runner does what the sandbox runners do (a fresh copy of the variant per call, the repo root as
working directory, the import root on PYTHONPATH, a scratch dir for the probe's files), with plain
subprocesses instead of a container.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import textwrap
import types
from collections.abc import Callable
from pathlib import Path

import pytest

from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import PROBE_PATH

RepoPair = tuple[Path, Path]

# The probe's files import each other by plain name, as they do in the sandbox's scratch dir: tests that use
# them in-process (`import probe_values`) find them the same way.
if str(PROBE_PATH.parent) not in sys.path:
    sys.path.append(str(PROBE_PATH.parent))


def clean_env(import_root: Path) -> dict[str, str]:
    """The host's environment without pytest/Python/coverage settings; the repo's import root on PYTHONPATH.

    Third-party pytest plugins installed on the host are not loaded: a sandbox holds only the repo's
    own dependencies, and loading the host's takes longer than the probe itself.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "PYTHON", "COV"))}
    env.update(PYTHONPATH=str(import_root), PYTHONDONTWRITEBYTECODE="1", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    return env


class LocalRunner:
    """Runs ``python <argv>`` in a fresh copy of repo A or B and returns ``{scratch}/out.json``."""

    def __init__(self, repos: dict[str, Path], work: Path, import_root: str = ".") -> None:
        self.repos = repos
        self.work = work
        self.import_root = import_root
        self.calls: list[tuple[str, list[str]]] = []

    def __call__(self, variant: str, argv: list[str], files: dict[str, str]) -> str:
        run_dir = self.work / f"run{len(self.calls)}"
        repo, scratch = run_dir / "repo", run_dir / "scratch"
        shutil.copytree(self.repos[variant], repo)
        scratch.mkdir()
        for name, text in files.items():
            (scratch / name).write_text(text)
        argv = [a.replace("{scratch}", str(scratch)) for a in argv]
        self.calls.append((variant, argv))
        env = clean_env(repo / self.import_root)
        proc = subprocess.run([sys.executable, *argv], cwd=repo, env=env, capture_output=True, text=True, timeout=120)
        out = scratch / "out.json"
        if not out.exists():
            raise RuntimeError(f"probe wrote nothing (exit {proc.returncode}): {proc.stderr[-2000:]}")
        return out.read_text()


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


@pytest.fixture
def import_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], types.ModuleType]:
    """Write ``source`` as module ``name`` in a temp dir on sys.path and import it (fresh each test)."""

    def load(name: str, source: str) -> types.ModuleType:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.delitem(sys.modules, name, raising=False)
        return importlib.import_module(name)

    return load


@pytest.fixture
def make_pair(tmp_path: Path) -> Callable[[dict[str, str], str, str, str], RepoPair]:
    """Build repo A from ``files`` and repo B with one textual replacement in ``target``."""

    counter = iter(range(10_000))

    def build(files: dict[str, str], target: str, old: str, new: str) -> RepoPair:
        root = tmp_path / f"pair{next(counter)}"
        a = write_tree(root / "A", files)
        b = write_tree(root / "B", files)
        text = (b / target).read_text()
        assert text.count(old) == 1, f"{old!r} must occur once in {target}"
        (b / target).write_text(text.replace(old, new))
        return a, b

    return build


@pytest.fixture
def runner_for(tmp_path: Path) -> Callable[..., LocalRunner]:
    counter = iter(range(10_000))

    def make(pair: RepoPair, import_root: str = ".") -> LocalRunner:
        work = tmp_path / f"runs{next(counter)}"
        work.mkdir()
        return LocalRunner({"A": pair[0], "B": pair[1]}, work, import_root)

    return make


@pytest.fixture
def run_test_file(tmp_path: Path) -> Callable[[Path, str, str], subprocess.CompletedProcess]:
    """Run a test file placed at ``test_path`` in a fresh copy of ``repo`` with a real pytest process."""
    counter = iter(range(10_000))

    def run(repo: Path, test_path: str, source: str, import_root: str = ".") -> subprocess.CompletedProcess:
        copy = tmp_path / f"check{next(counter)}"
        shutil.copytree(repo, copy)
        (copy / test_path).parent.mkdir(parents=True, exist_ok=True)
        (copy / test_path).write_text(source)
        env = clean_env(copy / import_root)
        return subprocess.run(
            [sys.executable, "-m", "pytest", test_path, "-q", "-p", "no:cacheprovider"],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run


# A small library for the probe and the oracle on iterators, callables, private helpers and stateful objects;
# `tests/helpers.py` is a helper of its test suite (a clock the tests tick), not a test module.
SEQ_LIB = {
    "lib/__init__.py": "",
    "lib/seq.py": '''
        import random
        from itertools import islice


        def window_sums(iterable, n):
            return list(_sums(iter(iterable), n))


        def _sums(it, n):
            window = []
            for x in it:
                window.append(x)
                if len(window) > n:
                    window.pop(0)
                if len(window) == n:
                    yield sum(window)


        def apply_all(fn, items):
            return [fn(x) for x in items]


        def take(n, iterable):
            return list(islice(iterable, n))


        def evens():
            n = 0
            while True:
                yield n
                n += 2


        def multiples(k):
            n = 0
            while True:
                yield n
                n += k


        def split_parity(items):
            return (x for x in items if x % 2 == 0), (x for x in items if x % 2)


        def double(x):
            return x * 2


        def pick(items, k):
            return random.sample(items, k)


        def groups(items, n):
            if n < 1:
                raise ValueError("n must be positive")
            for i in range(0, len(items), n):
                yield items[i:i + n]


        class Counter:
            def __init__(self, clock, step=1):
                self.clock = clock
                self.step = step
                self._seen = {}

            def hit(self, key):
                self._bump(key)
                return self._seen[key]

            def _bump(self, key):
                self._seen[key] = self._seen.get(key, 0) + self.step

            def __len__(self):
                return len(self._seen)

            def __iter__(self):
                return iter(sorted(self._seen))

            def __getitem__(self, key):
                return self._seen[key]


        class Meter:
            def __init__(self, clock, limit=2):
                self.clock = clock
                self.limit = limit
                self._start = {}

            def start(self, key):
                self._start[key] = self.clock.now

            def expired(self, key):
                return self.clock.now - self._start[key] >= self.limit


        class _Base:
            def size(self):
                return len(self.items)


        class Box(_Base):
            def __init__(self, items):
                self.items = list(items)


        class _Tally:
            def __init__(self):
                self.total = 0

            def feed(self, x):
                self.total += self._weight(x)

            def _weight(self, x):
                return x * 3 if x > 3 else x


        def tally(items):
            handler = _Tally()
            sink = handler.feed  # a callback, as a parser's handler is registered
            for x in items:
                sink(x)
            return handler.total
    ''',
    "tests/__init__.py": "",
    "tests/helpers.py": '''
        class Clock:
            def __init__(self):
                self.now = 0

            def tick(self):
                self.now += 1
    ''',
    "tests/test_seq.py": '''
        import operator

        import lib.seq as ls
        from lib.seq import Box, Counter, Meter, apply_all, double, groups, multiples, pick, take, window_sums
        from tests.helpers import Clock


        def test_window():
            assert window_sums([1, 2, 3, 4], 2) == [3, 5, 7]


        def test_tally():
            assert ls.tally([1, 3, 5]) == 19


        def test_apply():
            assert apply_all(operator.neg, [1]) == [-1]
            assert apply_all(str.upper, ["a"]) == ["A"]
            assert apply_all(lambda x: ls.take(1, [x]), [5]) == [[5]]
            k = 2
            assert apply_all(lambda x: x * k, [1]) == [2]  # a closure: not re-creatable


        def test_take():
            assert take(2, iter([7, 8, 9])) == [7, 8]
            assert take(1, range(3)) == [0]


        def test_many_calls():
            for i in range(500):
                take(1, [i])


        def test_unwritable_calls():
            for _ in range(500):
                take(1, bytearray(b"x"))


        def test_counter():
            clock = Clock()
            counter = Counter(clock, step=2)
            counter.hit("a")
            clock.tick()
            assert counter.hit("a") == 4
            assert len(counter) == 1
            assert counter["a"] == 4


        def test_counter_on_a_closure():
            k = 1
            counter = Counter(lambda: k)  # a closure: the counter cannot be re-created
            assert counter.hit("a") == 1


        def test_private_poke():
            counter = Counter(Clock())
            counter._bump("z")
            assert counter.hit("z") == 2


        def test_meter():
            clock = Clock()
            meter = Meter(clock)
            meter.start("a")
            clock.tick()
            assert meter.expired("a") is False


        def test_box():
            assert Box([1, 2]).size() == 2


        def test_multiples():
            assert next(multiples(3)) == 0


        def test_double():
            assert double(4) == 8


        def test_pick():
            assert len(pick([1, 2, 3, 4, 5], 2)) == 2


        def test_groups():
            assert list(groups([1, 2, 3], 2)) == [[1, 2], [3]]
    ''',
}


@pytest.fixture
def seq_lib() -> dict[str, str]:
    return dict(SEQ_LIB)


@pytest.fixture
def separates(run_test_file) -> Callable[..., None]:
    """Assert an oracle passes on A and each of its tests fails on B, with pytest in a fresh copy of each."""

    def check(result, pair: RepoPair, test_path: str) -> None:
        assert result.found, (result.reason, result.detail)
        assert result.test_source is not None
        compile(result.test_source, test_path, "exec")
        on_a = run_test_file(pair[0], test_path, result.test_source)
        on_b = run_test_file(pair[1], test_path, result.test_source)
        assert on_a.returncode == 0 and f"{result.n_tests} passed" in on_a.stdout, on_a.stdout
        assert on_b.returncode == 1 and f"{result.n_tests} failed" in on_b.stdout, on_b.stdout
        assert "mutant" not in result.test_source.lower()

    return check


@pytest.fixture
def separating_oracle(runner_for, separates) -> Callable[..., str]:
    """The differential oracle of `qualname` in `target_file` of a pair, from the given covering tests,
    checked to pass on A and fail on B; returns its source."""

    def make(pair: RepoPair, target_file: str, module: str, qualname: str, tests: list[str], test_path: str) -> str:
        from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import synthesize_differential

        result = synthesize_differential(
            runner=runner_for(pair), target_file=target_file, module=module, qualname=qualname,
            function_source_a=(pair[0] / target_file).read_text(), covering_tests=tests, test_path=test_path,
        )
        separates(result, pair, test_path)
        return result.test_source

    return make
