"""The repo's pytest configuration, honoured by our runs and made compatible with them.

Our runs need three things pytest configuration can break: one coverage object with per-test contexts
(ours, started by `coverage run`), one outcome per test from every test selected (our plugin's report
hook), and a session that runs every test it can collect. What the repo configures otherwise (testpaths,
python_files, markers, filterwarnings, doctest options, `-p` plugins, `--import-mode`) is kept.

`read_pytest_config` finds the file pytest itself would read (the first of pytest.ini, .pytest.ini,
pytest.toml, .pytest.toml, pyproject.toml with a pytest table, tox.ini `[pytest]`, setup.cfg
`[tool:pytest]`), reads its `addopts` and the keys below, and `PytestSetup.args()` gives the command-line
options that override them: `-o addopts=<the options kept>` and one `-o key=value` per ini key
neutralised. The flags dropped from `addopts` are the table `ADDOPTS_RULES`, not a chain of ifs.
"""

from __future__ import annotations

import configparser
import re
import shlex
import tomllib
from dataclasses import dataclass
from enum import Enum
from typing import Callable

from pydantic import BaseModel, ConfigDict, Field


class Arity(str, Enum):
    """How many values an option takes on the command line."""

    none = "none"
    one = "one"
    optional = "optional"  # `--cov` alone or `--cov pkg` / `--cov=pkg`


@dataclass(frozen=True, slots=True)
class FlagRule:
    """A flag our runs cannot keep: its spellings, its values, and why it goes."""

    names: tuple[str, ...]
    arity: Arity
    why: str


_COV = "pytest-cov starts a second coverage object: no per-test data reaches ours"
_XDIST = "xdist runs tests in other processes: our plugin sees no reports and coverage no contexts"
_STOP = "stopping early leaves tests without an outcome (gates add -x themselves)"
_CACHE = "our runs switch the cache plugin off (-p no:cacheprovider), and reruns need every test"
ADDOPTS_RULES: tuple[FlagRule, ...] = (
    FlagRule(("--cov",), Arity.optional, _COV),
    FlagRule(("--cov-report", "--cov-config", "--cov-fail-under", "--cov-context"), Arity.one, _COV),
    FlagRule(("--cov-append", "--cov-branch", "--no-cov", "--no-cov-on-fail", "--cov-reset"), Arity.none, _COV),
    FlagRule(("-n", "--numprocesses", "--maxprocesses", "--dist", "--tx", "--rsyncdir", "--max-worker-restart"),
             Arity.one, _XDIST),
    FlagRule(("-f", "--looponfail", "-d", "--distload"), Arity.none, _XDIST),
    FlagRule(("-x", "--exitfirst"), Arity.none, _STOP),
    FlagRule(("--maxfail",), Arity.one, _STOP),
    FlagRule(("--lf", "--last-failed", "--ff", "--failed-first", "--nf", "--new-first", "--sw", "--stepwise",
              "--sw-skip", "--stepwise-skip", "--sw-reset", "--stepwise-reset", "--cache-clear"), Arity.none, _CACHE),
    FlagRule(("--lfnf", "--last-failed-no-failures"), Arity.one, _CACHE),
    FlagRule(("--strict-config",), Arity.none,
             "with plugins switched off (cacheprovider) their ini keys are unknown, which strict config rejects"),
    FlagRule(("--junitxml", "--junit-xml", "--junit-prefix", "--junitprefix"), Arity.one,
             "our runs write their own JUnit report"),
    FlagRule(("--basetemp", "--rootdir"), Arity.one, "our runs choose their own directories"),
    FlagRule(("--reruns", "--reruns-delay", "--only-rerun"), Arity.one,
             "rerunning failures hides flaky tests from the baseline and B's failures from the gates"),
    FlagRule(("--pdb", "--trace"), Arity.none, "a debugger waits for a terminal no sandbox has"),
    FlagRule(("--pdbcls",), Arity.one, "a debugger waits for a terminal no sandbox has"),
)
_RULES = {name: rule for rule in ADDOPTS_RULES for name in rule.names}
# Short options that take a value (attached, as in `-n4` / `-rfE`, or the next word); the others are flags
# that may be clustered (`-vx`).
_SHORT_WITH_VALUE = frozenset("cknmopWr")

# Ini keys whose value breaks our runs → the value our runs give them (`-o key=value`).
INI_OVERRIDES: dict[str, tuple[str, str]] = {
    "strict_config": ("false", "with plugins switched off their ini keys are unknown, which strict config rejects"),
}
# pytest 9's `strict = true` turns strict config on with the rest; our override keeps the rest on.
# Installed plugins our runs never load, whatever the repo configures (`-p no:NAME`; harmless when absent).
# Entry-point name → why. pytest-enabler (the jaraco skeleton's `enabler` extra) adds `--cov`, `--mypy`,
# `--ruff`, `-n auto` to the command line itself when those plugins are installed, so no addopts shows them.
BLOCKED_PLUGINS: dict[str, str] = {
    "enabler": "pytest-enabler turns on pytest-cov (a second coverage object: ours then records nothing), "
               "xdist and lint checks (mypy, ruff) from its own configuration",
    "checkdocs": "pytest-checkdocs adds an item that builds the project's metadata in a fresh environment (pip "
                 "fetching the build requirements): it checks the README, not the code, and fails wherever the "
                 "run has no network",
}
_STRICT_PARTS = ("strict_markers", "strict_xfail", "strict_parametrization_ids")
_INI_KEYS = ("addopts", "testpaths", "python_files", "strict", *INI_OVERRIDES)


class PytestSetup(BaseModel):
    """What the repo's pytest configuration says and what our runs change of it (a plan a user can read)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    config_file: str | None = Field(None, description="The file pytest reads its configuration from.")
    addopts: list[str] = Field(default_factory=list, description="The repo's addopts, as pytest splits them.")
    kept_addopts: list[str] = Field(default_factory=list, description="The addopts our runs keep.")
    dropped: dict[str, str] = Field(default_factory=dict, description="Flag (with its value) → why it is dropped.")
    ini_overrides: dict[str, str] = Field(default_factory=dict, description="Ini key → the value our runs set.")
    testpaths: list[str] = Field(default_factory=list)
    python_files: list[str] = Field(default_factory=list)
    plugins: list[str] = Field(default_factory=list, description="Plugins `-p NAME` in the addopts kept.")

    def args(self) -> list[str]:
        """Options after `python -m pytest` that apply this setup (they override the ini file)."""
        out: list[str] = []
        if self.dropped:
            out += ["-o", "addopts=" + shlex.join(self.kept_addopts)]
        for key, value in sorted(self.ini_overrides.items()):
            out += ["-o", f"{key}={value}"]
        for name in BLOCKED_PLUGINS:
            if name not in self.plugins:
                out += ["-p", f"no:{name}"]
        # Without testpaths pytest walks the whole tree: a file outside the real suite that fails to
        # import must not stop the session (its error is recorded, every other test still runs).
        out.append("--continue-on-collection-errors")
        return out


def sanitize_addopts(tokens: list[str]) -> tuple[list[str], dict[str, str]]:
    """(the tokens kept, dropped flag → why), by `ADDOPTS_RULES`."""
    kept: list[str] = []
    dropped: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        name, eq, value = tok.partition("=") if tok.startswith("--") else (tok, "", "")
        if not tok.startswith("--") and tok.startswith("-") and len(tok) > 2:
            head, rest = tok[:2], tok[2:]
            if tok[1] in _SHORT_WITH_VALUE or head in _RULES and _RULES[head].arity is not Arity.none:
                name, eq, value = head, "=", rest  # `-n4`, `-rfE`: the value attached
            else:  # a cluster of flags, `-vx`: judge each
                sub_kept, sub_dropped = sanitize_addopts([f"-{c}" for c in tok[1:]])
                dropped.update(sub_dropped)
                if sub_kept:
                    kept.append("-" + "".join(t[1:] for t in sub_kept))
                continue
        rule = _RULES.get(name)
        if rule is None:
            kept.append(tok)
            continue
        spelled = tok
        takes_next = not eq and i < len(tokens) and (
            rule.arity is Arity.one or (rule.arity is Arity.optional and not tokens[i].startswith("-")))
        if takes_next:
            spelled = f"{tok} {tokens[i]}"
            i += 1
        dropped[spelled] = rule.why
    return kept, dropped


def _plugins(tokens: list[str]) -> list[str]:
    found = []
    for i, tok in enumerate(tokens):
        if tok == "-p":
            name = tokens[i + 1] if i + 1 < len(tokens) else None
        else:
            name = tok[2:] if tok.startswith("-p") else None  # `-pasyncio`
        if name and not name.startswith("no:"):
            found.append(name)
    return found


def _ini_section(text: str, section: str) -> dict[str, str] | None:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    return dict(parser[section]) if parser.has_section(section) else None


def _toml_table(text: str, tool_keys: tuple[str, ...]) -> dict | None:
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        return None
    table = data
    for key in tool_keys:
        table = table.get(key) if isinstance(table, dict) else None
    return table if isinstance(table, dict) else None


# (file, its section as a label (none in pytest's own files), how to read its pytest table), in pytest's own
# order: the first file that has a table wins (pytest.ini wins even when it has no [pytest] section).
_SOURCES: tuple[tuple[str, str, Callable[[str], dict | None]], ...] = (
    ("pytest.ini", "", lambda t: _ini_section(t, "pytest") or {}),
    (".pytest.ini", "", lambda t: _ini_section(t, "pytest") or {}),
    ("pytest.toml", "", lambda t: _toml_table(t, ("pytest",)) or {}),
    (".pytest.toml", "", lambda t: _toml_table(t, ("pytest",)) or {}),
    ("pyproject.toml", "[tool.pytest.ini_options]",
     lambda t: _toml_table(t, ("tool", "pytest", "ini_options")) or _toml_table(t, ("tool", "pytest"))),
    ("tox.ini", "[pytest]", lambda t: _ini_section(t, "pytest")),
    ("setup.cfg", "[tool:pytest]", lambda t: _ini_section(t, "tool:pytest")),
)


def words(value) -> list[str]:
    """An ini value (a TOML list or a shell-quoted string) as pytest splits it."""
    if isinstance(value, list):
        return [str(v) for v in value]
    try:
        return shlex.split(str(value or ""))
    except ValueError:
        return str(value or "").split()


def _truthy(value) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def pytest_table(read: Callable[[str], str | None]) -> tuple[str, str, dict] | None:
    """(file, section, its whole pytest table) of the file pytest reads; `read(relpath)` gives a repo-root file's text
    or None. The one reader of pytest's configuration: the baseline's setup and plugin discovery use it."""
    for name, section, table_of in _SOURCES:
        text = read(name)
        if text is None:
            continue
        table = table_of(text)
        if table is not None:
            return name, section, table
    return None


def read_pytest_config(read: Callable[[str], str | None]) -> PytestSetup:
    """The repo's pytest setup; `read(relpath)` gives a file of the repo root's text, or None."""
    found = pytest_table(read)
    if found is None:
        return PytestSetup()
    name, _section, table = found
    return _setup(name, {k: v for k, v in table.items() if k in _INI_KEYS})


def _setup(config_file: str, table: dict) -> PytestSetup:
    addopts = words(table.get("addopts"))
    kept, dropped = sanitize_addopts(addopts)
    overrides = {key: value for key, (value, _why) in INI_OVERRIDES.items()
                 if key in table and str(table[key]).strip().lower() != value}
    if _truthy(table.get("strict", "")):
        overrides["strict_config"] = "false"
        overrides.update({key: "true" for key in _STRICT_PARTS})
    return PytestSetup(config_file=config_file, addopts=addopts, kept_addopts=kept, dropped=dropped,
                       ini_overrides=overrides, testpaths=words(table.get("testpaths")),
                       python_files=words(table.get("python_files")), plugins=_plugins(kept))


# --- the suite when no testpaths is set ---------------------------------------------------------------------

# Test modules pytest's default `python_files` (test_*.py, *_test.py) never collects, though older projects keep
# their whole unittest suite in one (`python tests.py`; python-nameparser: "no tests pytest can collect").
ROOT_SUITE_FILES = ("tests.py", "test.py")
_DEFAULT_PYTHON_FILES = "test_*.py *_test.py"


def with_root_suite(setup: PytestSetup, read: Callable[[str], str | None]) -> PytestSetup:
    """`setup` collecting a root `tests.py`/`test.py` that holds tests (a TestCase or a test function) when the
    repo sets no `python_files` of its own; unchanged otherwise."""
    if setup.python_files or "python_files" in setup.ini_overrides:
        return setup
    found = [name for name in ROOT_SUITE_FILES
             if (text := read(name)) is not None and re.search(r"(?m)^\s*(class \w+\(.*TestCase|def test_)", text)]
    if not found:
        return setup
    value = " ".join([_DEFAULT_PYTHON_FILES, *found])
    return setup.model_copy(update={"ini_overrides": {**setup.ini_overrides, "python_files": value},
                                    "python_files": value.split()})


# Directory names that hold a project's suite by convention: tox, nox and CI configs run `pytest tests`.
TEST_DIR_NAMES = ("tests", "test", "testing")
# How deep test directories are looked for (`src/pkg/tests` is three levels down).
TEST_DIR_DEPTH = 3


# Options whose next word is a value, never a path to collect (`--ignore tests/legacy` names no suite).
_VALUE_OPTIONS = frozenset({"-k", "-m", "-p", "-W", "-o", "-c", "-r", "--ignore", "--ignore-glob", "--deselect",
                            "--rootdir", "--confcutdir", "--import-mode", "--tb", "--log-level", "--durations"})


def _positional(tokens: list[str], test_dirs: list[str]) -> bool:
    """Whether the addopts kept name a path to collect (then pytest collects only what they name)."""
    for prev, tok in zip(["", *tokens], tokens):
        path = tok.split("::")[0].rstrip("/")
        if tok.startswith("-") or prev in _VALUE_OPTIONS or not path:
            continue
        if path.endswith(".py") or any(path == d or path.startswith(d + "/") for d in test_dirs):
            return True
    return False


def suite_paths(setup: PytestSetup, test_dirs: list[str]) -> list[str]:
    """What our whole-suite runs collect when the repo sets no `testpaths`: its top-level test directories
    and the test directories inside its packages, so files outside the real suite (`extra/`, `perf/`,
    `examples/`, `scripts/` with test_*.py that fail to import or run for minutes) are not collected.
    Empty (pytest walks the tree, as without us) when testpaths is set, the addopts name paths or run
    doctests in modules and text files, or no top-level test directory exists (the runner lists
    none when test files lie at the root: they are part of the suite).
    `test_dirs`: the repo's directories named in TEST_DIR_NAMES, relative, at most TEST_DIR_DEPTH deep."""
    if setup.testpaths or _positional(setup.kept_addopts, test_dirs):
        return []
    if any(t.startswith("--doctest") for t in setup.kept_addopts):
        return []
    top = [d for d in test_dirs if "/" not in d]
    if not top:
        return []
    nested = [d for d in test_dirs if "/" in d and not any(d.startswith(t + "/") for t in top)]
    return sorted(top) + sorted(nested)


# --- plugins of graded runs -----------------------------------------------------------------------------------

# Installed plugins graded runs never load (the verifier turns autoload off and names the rest with -p):
# each would change how a run executes or what it counts. Entry-point names → why.
GRADED_EXCLUDED_PLUGINS: dict[str, str] = {
    "xdist": "runs cases in other processes, outside the verifier's outcome plugin",
    "xdist.looponfail": "runs cases in other processes, outside the verifier's outcome plugin",
    "pytest_cov": "a second coverage object would replace the verifier's coverage recorder",
    "randomly": "reseeds and reorders; the verifier seeds every run itself (-p no:randomly)",
    "rerunfailures": "a rerun could turn B's failure into a pass",
    "pytest_forked": "runs cases in forked processes the run's guard does not follow",
    # Its signal method installs a SIGALRM handler per test, which a graded run refuses once the session
    # starts (verifier_kernel.seal_signal_handlers); the verifier's own case timeout stands in for it.
    "timeout": "installs a signal handler per test; the verifier times each case itself (case_timeout_sec)",
    **BLOCKED_PLUGINS,
}
_LIST_PLUGINS = ("import importlib.metadata as m, json; "
                 "print(json.dumps(sorted({e.name for e in m.entry_points(group='pytest11')})))")


def graded_plugins(python: str, run: Callable[[list[str]], str | None]) -> list[str]:
    """Entry-point names of the pytest plugins installed in the image, minus `GRADED_EXCLUDED_PLUGINS`:
    what graded runs load with -p. `run(argv)` runs a command in the image and gives its stdout (None on
    failure). Data from the image's install, never from the repo's or the agent's files."""
    import json

    out = run([python, "-c", _LIST_PLUGINS])
    try:
        names = json.loads(out.strip().splitlines()[-1]) if out else []
    except (ValueError, IndexError):
        return []
    return [n for n in names if isinstance(n, str) and n not in GRADED_EXCLUDED_PLUGINS]


def session_graded_plugins(session) -> list[str]:
    """`graded_plugins` of a sandbox session's interpreter (the image the task is built like)."""
    def run(argv: list[str]) -> str | None:
        res = session.exec(argv, timeout=120)
        return res.stdout if res.exit_code == 0 else None

    return graded_plugins(session.python, run)
