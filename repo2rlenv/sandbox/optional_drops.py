"""The optional dependencies an environment could not install, read back from inside it.

The install plan installs each declared test/dev dependency the suite does not import on its own, and a
failure writes `{"spec", "reason"}` to `OPTIONAL_DROPS` under the environment's Python prefix instead of
failing the build (`discovery/plan.py`). This reads that record from a session, so a run can list what it
dropped and why; the baseline then shows whether what is left is enough.
"""

from __future__ import annotations

import json

from repo2rlenv.discovery.plan import OPTIONAL_DROPS, InstallPlan
from repo2rlenv.discovery.requirements import Dropped
from repo2rlenv.sandbox.base import Session

_READ = ("import pathlib, sys; p = pathlib.Path(sys.prefix, " + repr(OPTIONAL_DROPS) + "); "
         "print(p.read_text() if p.is_file() else '', end='')")


def optional_drops(session: Session, plan: InstallPlan) -> list[Dropped]:
    """What of `plan.optional_requirements` the environment dropped, each with the plan's source and pip's
    reason (empty when everything installed, or the plan had none)."""
    if not plan.optional_requirements:
        return []
    res = session.exec([session.python, "-c", _READ], timeout=60)
    if res.exit_code != 0:
        return []
    sources = {d.spec: d.source for d in plan.optional_requirements}
    out: list[Dropped] = []
    for line in res.stdout.splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and row.get("spec") in sources:
            out.append(Dropped(spec=row["spec"], source=sources[row["spec"]],
                               reason=f"did not install: {row.get('reason') or 'pip failed'}"))
    return out
