"""Benchmark: a run's kernel barrier through `_r2e_kernel` against the same barrier through ctypes.

Each round starts two fresh interpreters side by side (alternating which goes first); each imports the
verifier's kernel module, applies Landlock + seccomp to itself and reports the CPU time the barrier took
and whether `_ctypes` ended up loaded. Prints medians and their ratio. The extension is built for this
interpreter into a temp dir first (it needs a C compiler and Python's headers).

    python3 scripts/bench_kernel_door.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from repo2rlenv.sandbox import kernel_ext  # noqa: E402

VERIFIER = ROOT / "repo2rlenv" / "verifiers" / "test_synthesis"
CHILD = """\
import json, sys, time
if sys.argv[1]:
    sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
start = time.process_time()
import verifier_kernel
result = verifier_kernel.apply(verifier_kernel.readable_roots(["/proc", "/sys"], []), [])
print(json.dumps({"cpu": time.process_time() - start, "ffi": result["ffi"], "ctypes": "_ctypes" in sys.modules}))
"""


def one(ext_dir: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, ext_dir, str(VERIFIER)], capture_output=True, text=True,
                         timeout=60, check=True)
    return json.loads(out.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as ext_dir:
        kernel_ext.build(sys.executable, Path(ext_dir))
        runs: dict[str, list[dict]] = {"r2e_kernel": [], "ctypes": []}
        for i in range(args.rounds):
            order = [("r2e_kernel", ext_dir), ("ctypes", "")]
            for name, path in order if i % 2 == 0 else order[::-1]:
                runs[name].append(one(path))
    for name, got in runs.items():
        assert all(g["ffi"] == name for g in got), got
        cpu = statistics.median(g["cpu"] for g in got) * 1000
        print(f"{name:10}: barrier {cpu:6.1f} ms CPU (median of {len(got)}), _ctypes loaded: {got[0]['ctypes']}")
    ext = statistics.median(g["cpu"] for g in runs["r2e_kernel"])
    ffi = statistics.median(g["cpu"] for g in runs["ctypes"])
    print(f"ratio r2e_kernel / ctypes: {ext / ffi:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
