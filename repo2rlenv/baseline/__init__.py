"""Running a repo's own test suite in a sandbox: per-test outcomes (JUnit XML) and per-test coverage."""
