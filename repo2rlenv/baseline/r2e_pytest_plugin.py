"""pytest plugin copied into sandboxes (stdlib + pytest + coverage only; never imports repo2rlenv).

- Puts each test's exact node id into the JUnit XML as a `r2e_nodeid` property, so outcomes map to
  selectable node ids without guessing from `classname` (which loses file paths and parametrization).
- Switches coverage.py's context to the node id around each test. coverage's own
  `dynamic_context = test_function` names tests inherited from mixin classes after the mixin, which
  pytest cannot select; the node id is always selectable.
"""

import pytest

try:
    import coverage
except ImportError:  # runs without coverage are fine
    coverage = None


def _cov():
    return coverage.Coverage.current() if coverage is not None else None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.user_properties.append(("r2e_nodeid", item.nodeid))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    cov = _cov()
    if cov is not None:
        cov.switch_context(item.nodeid)
    yield
    if cov is not None:
        cov.switch_context("")
