"""How a repo is installed: kept as the sandbox's name for the plan that `repo2rlenv.discovery` makes.

Discovery (backend and version source, test dependencies, plugins, Python) lives in
`repo2rlenv/discovery/`; this module re-exports its plan so existing imports keep working.
"""

from __future__ import annotations

from repo2rlenv.discovery.plan import TOOL_REQUIREMENTS, InstallPlan, detect_import_roots, install_steps, plan_install

__all__ = ["TOOL_REQUIREMENTS", "InstallPlan", "detect_import_roots", "install_steps", "plan_install"]
