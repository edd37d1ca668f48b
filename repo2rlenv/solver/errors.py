"""The solver's errors: input it cannot work from (a user error, exit 2) and nothing else of its own.

Model-call failures keep their `repo2rlenv.llm.errors` types; the loop turns them into stop reasons
rather than exceptions, so a solve always ends with a result.
"""

from __future__ import annotations

from repo2rlenv.errors import UserError


class SolverInputError(UserError):
    """A task, instruction, diff or setting the solver cannot work from: one line says why."""
