"""repo2rlenv test_synthesis: mine behaviour changes a repo's tests miss, and turn them into RL tasks."""

__version__ = "0.1.0"
