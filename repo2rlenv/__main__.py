"""`python -m repo2rlenv` runs the CLI."""

from repo2rlenv.cli import main

main()
