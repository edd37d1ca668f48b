"""What the solver is asked to test: the function, its module, and the test file to write.

In task mode the target comes from `instruction.md` alone — the agent sees what a Harbor agent sees, and
the instruction names the function, its file, its module and the test path (harbor_templates/instruction.md).
In diff mode it comes from the changed functions of a diff.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.pysource.functions import FunctionRecord, extract_functions, module_name_for
from repo2rlenv.solver.errors import SolverInputError

# The sentences of harbor_templates/instruction.md that carry the target; whitespace may be re-wrapped.
_FUNCTION = re.compile(r"contains\s+the\s+function\s+`(?P<qualname>[^`]+)`\s+in\s+`(?P<path>[^`]+)`")
_TEST_PATH = re.compile(r"Write\s+pytest\s+tests\s+in\s+\*\*`(?P<test_path>[^`]+)`\*\*")
_IMPORT = re.compile(r"import\s+`[^`]+`\s+from\s+`(?P<module>[^`]+)`")


class Target(BaseModel):
    """One function to pin down with tests, and where the tests go."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(description="POSIX path of the function's file, relative to the repo root.")
    qualname: str = Field(description="Dotted name inside the module, e.g. 'Stock.reserve'.")
    module: str = Field(description="Importable module name, e.g. 'minicart.inventory'.")
    test_path: str = Field(description="The test file to write, relative to the repo root.")
    import_roots: list[str] = Field(description="Dirs put first on sys.path, e.g. ['src'] or [''].")

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    @property
    def key(self) -> str:
        """`path::qualname`, as `FunctionRecord.key` spells a function."""
        return f"{self.path}::{self.qualname}"


def import_root(path: str, module: str) -> str:
    """The directory under which `module` is `path` ('' for the repo root, 'src' for a src layout)."""
    module_path = module.replace(".", "/")
    for suffix in (f"{module_path}.py", f"{module_path}/__init__.py"):
        if path == suffix:
            return ""
        if path.endswith("/" + suffix):
            return path[: -len(suffix) - 1]
    return ""


def target_from_instruction(text: str) -> Target:
    """Read the target out of a task's instruction; `SolverInputError` when it names none."""
    function, test_path = _FUNCTION.search(text), _TEST_PATH.search(text)
    if function is None or test_path is None:
        raise SolverInputError("the instruction does not name a function and a test file "
                               "(is this a repo2rlenv test_synthesis task?)")
    path = function["path"].strip()
    found = _IMPORT.search(text)
    module = found["module"].strip() if found else module_name_for(path)
    if not module:
        raise SolverInputError(f"cannot tell which module {path} is")
    return Target(path=path, qualname=function["qualname"].strip(), module=module,
                  test_path=test_path["test_path"].strip(), import_roots=[import_root(path, module)])


def locate_function(source: str, target: Target) -> FunctionRecord:
    """The target's record (lines, signature) in its module's source text."""
    try:
        records = extract_functions(source, target.path, target.module)
    except SyntaxError as exc:
        raise SolverInputError(f"{target.path} does not parse: {exc.msg} (line {exc.lineno})") from exc
    for record in records:
        if record.qualname == target.qualname:
            return record
    raise SolverInputError(f"{target.qualname} is not a function of {target.path}")


def is_test_file(path: str) -> bool:
    """`tests/**/test_*.py`: the only files diff mode may create."""
    parts = PurePosixPath(path).parts
    return len(parts) >= 2 and parts[0] == "tests" and parts[-1].startswith("test_") and parts[-1].endswith(".py")
