"""The command line: one module per command group (`main`: generate, demo, doctor, validate; `solver`:
solve, eval; `hub`: push, pull, export; `upgrade`) and one error guard (`guard`). The only package that knows click."""
