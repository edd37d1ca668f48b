"""The reference solver: an interactive test-writing repair agent (plan → write → run → repair).

Entry points: `loop.Solver` (the library), `task_mode.solve_task` and `diff_mode.solve_diff` (the two
modes of `repo2rlenv solve`), `harbor_agent.R2ESolverAgent` (Harbor's `--agent-import-path`; importable
only where Harbor is installed). Importing this package loads neither litellm nor docker nor harbor.
"""
