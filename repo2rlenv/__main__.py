"""`python -m repo2rlenv` runs the CLI."""

from repo2rlenv.cli.main import main

main()
