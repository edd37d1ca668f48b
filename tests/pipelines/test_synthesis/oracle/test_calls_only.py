"""The oracle's bare calls: every check gone, every call kept, on the forms the oracle writers produce."""

from __future__ import annotations

from repo2rlenv.pipelines.test_synthesis.oracle.calls_only import calls_only

ORACLE = '''import pytest

from pkg import Box, f


def test_value():
    assert f(1) == pytest.approx(2.0)


def test_raise():
    with pytest.raises(ValueError, match='neg'):
        f(-1)


def test_state():
    box = Box()
    box.put(3)
    assert box.items == [3]
    assert not box.empty()
'''


def test_checks_go_and_calls_stay():
    out = calls_only(ORACLE)
    assert out is not None and "assert" not in out and "pytest.raises" not in out
    for call in ("f(1)", "f(-1)", "box.put(3)", "box.items", "box.empty()"):
        assert call in out, call
    namespace: dict = {}
    exec(compile(out.replace("from pkg import Box, f", ""), "bare.py", "exec"), namespace)
    namespace["f"] = lambda x: 1 / 0 if x < 0 else x
    namespace["test_raise"]()  # the expected exception is swallowed: a bare call cannot tell raising apart
    assert calls_only("def broken(:\n") is None
