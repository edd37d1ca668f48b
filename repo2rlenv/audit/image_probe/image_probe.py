"""Run inside a task's built image (stdlib only): what the agent's container holds of B, the oracle or the
grading, and what its git history holds. Reads a JSON job from argv[1], prints one JSON object.

Job: {"workspace": "/workspace", "names": [...], "needles": [...], "target": "pkg/mod.py",
      "target_sha256": "..."}.
"""

import hashlib
import json
import os
import subprocess
import sys

SKIP = ("/proc", "/sys", "/dev", "/run")
MAX_BYTES = 2_000_000


def git(workspace, *args):
    proc = subprocess.run(["git", "-C", workspace, *args], capture_output=True, text=True)
    return proc.returncode, proc.stdout


def history(workspace):
    out = {}
    code, text = git(workspace, "rev-list", "--all", "--count")
    out["commits"] = int(text.strip()) if code == 0 and text.strip().isdigit() else None
    out["refs"] = git(workspace, "for-each-ref", "--format=%(refname)")[1].split()
    out["reflog"] = len(git(workspace, "reflog", "--all")[1].splitlines())
    out["unreachable"] = [line for line in git(workspace, "fsck", "--unreachable", "--no-reflogs", "--no-progress",
                                               "--no-dangling")[1].splitlines() if line.startswith("unreachable")]
    out["dangling"] = [line for line in git(workspace, "fsck", "--no-reflogs", "--no-progress")[1].splitlines()
                       if line.startswith("dangling")]
    # Every object stored, against the objects the one commit reaches: more stored means other versions.
    reachable = len(git(workspace, "rev-list", "--objects", "--all")[1].splitlines())
    counts = dict(line.split(": ", 1) for line in git(workspace, "count-objects", "-v")[1].splitlines() if ": " in line)
    out["stored_objects"] = int(counts.get("count", 0)) + int(counts.get("in-pack", 0))
    out["reachable_objects"] = reachable
    return out


def walk(names, needles):
    named, holding = [], []
    for root, dirs, files in os.walk("/"):
        if root.startswith(SKIP) and root != "/":
            dirs[:] = []
            continue
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in SKIP]
        for name in files:
            path = os.path.join(root, name)
            if name in names:
                named.append(path)
            if not needles or os.path.islink(path):
                continue
            try:
                if os.path.getsize(path) > MAX_BYTES:
                    continue
                with open(path, "rb") as fh:
                    data = fh.read()
            except OSError:
                continue
            if b"\0" in data[:1024]:
                continue
            text = data.decode("utf-8", "replace")
            holding += [[path, needle] for needle in needles if needle in text]
    return named, holding


def main():
    job = json.loads(sys.argv[1])
    workspace = job["workspace"]
    named, holding = walk(set(job["names"]), job["needles"])
    target = os.path.join(workspace, job["target"])
    try:
        with open(target, "rb") as fh:
            digest = hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        digest = None
    print(json.dumps({"git": history(workspace), "named": named, "holding": holding,
                      "target_is_a": digest == job["target_sha256"]}))


main()
