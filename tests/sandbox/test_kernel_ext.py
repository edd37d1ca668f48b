"""The kernel extension's builder (the local sandbox and the test interpreter use it; the base images
compile the same file in a build stage)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from repo2rlenv.sandbox import kernel_ext

CHECK = """\
import json, sys
sys.path.insert(0, sys.argv[1])
import _r2e_kernel as k
abi = k.create_ruleset(None, 1)
try:
    k.seccomp(b"\\x00" * 7)
    short = "accepted"
except ValueError as exc:
    short = str(exc)
print(json.dumps({"name": k.name, "abi": abi, "short": short, "ctypes": "_ctypes" in sys.modules,
                  "calls": sorted(n for n in dir(k) if not n.startswith("_"))}))
"""


def test_it_builds_for_this_interpreter_and_offers_only_confining_calls(tmp_path):
    built = kernel_ext.build(sys.executable, tmp_path)
    assert built.parent == tmp_path and built.name.startswith("_r2e_kernel")
    out = subprocess.run([sys.executable, "-c", CHECK, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["name"] == "r2e_kernel" and isinstance(got["abi"], int) and got["ctypes"] is False
    assert "8-byte instructions" in got["short"]
    # Nothing that hands out an address or calls an arbitrary function (the audit hook is installed once,
    # by the verifier, before any test runs, as is the line recorder; trace_here only installs that
    # recorder, settrace only switches tracing off; after lock() no set-up call is taken:
    # tests/sandbox/test_kernel_hook.py).
    assert got["calls"] == ["HOOK_API", "add_rule", "arm", "audit_hook", "create_ruleset", "frame_argument", "guard_imports",
                            "harden_array", "harden_streams", "harden_type", "hold_items", "hold_streams", "lock",
                            "map_library", "name", "no_new_privs", "one_time_heap", "record_lines", "refuse_instances",
                            "restrict_self",
                            "seccomp",
                            "set_dumpable", "set_pdeathsig", "settrace", "trace_here"]


def test_a_missing_compiler_is_named(tmp_path):
    with pytest.raises(kernel_ext.KernelExtError, match="no C compiler"):
        kernel_ext.build(sys.executable, tmp_path, compiler="no-such-cc-r2e")
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_a_broken_interpreter_is_named(tmp_path):
    built, why = kernel_ext.try_build(str(tmp_path / "no-python"), tmp_path)
    assert built is None and "cannot ask" in why


def test_a_local_venv_gets_the_extension_again_when_its_source_changed(tmp_path):
    from repo2rlenv.sandbox.local import LocalSandbox

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    venv = tmp_path / "venv"
    LocalSandbox._kernel_ext(tmp_path, venv)
    built = sorted(venv.rglob("_r2e_kernel*.so"))
    assert len(built) == 1 and (tmp_path / ".kernel-ext").read_text() == kernel_ext.source_stamp()
    first = built[0].stat().st_mtime_ns
    LocalSandbox._kernel_ext(tmp_path, venv)  # the same source: kept
    assert built[0].stat().st_mtime_ns == first
    (tmp_path / ".kernel-ext").write_text("an older source")
    LocalSandbox._kernel_ext(tmp_path, venv)  # a venv kept from an older checkout: built again
    assert built[0].stat().st_mtime_ns != first and (tmp_path / ".kernel-ext").read_text() == kernel_ext.source_stamp()
