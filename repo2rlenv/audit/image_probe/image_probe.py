"""Run inside a task's built image (stdlib only): what the agent's container holds of B, the oracle or the
grading, and what its git history holds. Reads a JSON job from argv[1], prints one JSON object.

Job: {"workspace": "/workspace", "names": [...], "needles": [...], "target": "pkg/mod.py",
      "target_sha256": "..."}.

A needle is evidence only when it is specific to the task. A line that a file the task did not bring also
holds (the stdlib's `inspect.py`, pytest's `raises.py`, any installed library) is text any library may
contain, so finding it says nothing about B or the oracle. "Did not bring" is decided by the image's own
package manifests, never by a list of paths: a file is vouched for when dpkg's md5sums or an installed
distribution's RECORD names it with the hash it has now (an edited file is not vouched for), outside the
workspace, and the distribution is not the task's own project (whose files could be B's). Needles held by
a vouched file are answered as `common` and are not searched for as leaks.
"""

import base64
import glob
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


def _dpkg_sums():
    """Path → md5 hex of files Debian's packages installed (/var/lib/dpkg/info/*.md5sums)."""
    sums = {}
    for listing in glob.glob("/var/lib/dpkg/info/*.md5sums"):
        try:
            with open(listing, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    digest, _, rel = line.rstrip("\n").partition("  ")
                    if rel:
                        sums["/" + rel] = ("md5", digest)
        except OSError:
            continue
    return sums


def _is_own(entries, target):
    """Whether a distribution's RECORD lists the task's target module (so it is the task's project)."""
    return any(target == rel or target.endswith("/" + rel) for rel, _ in entries if rel.endswith(".py"))


def _record_sums(records, target):
    """Path → sha256 (urlsafe base64, RECORD's form) of files installed distributions list, except the
    task's own project's."""
    sums = {}
    for record in records:
        base = os.path.dirname(os.path.dirname(record))
        entries = []
        try:
            with open(record, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    parts = line.rstrip("\n").rsplit(",", 2)
                    if len(parts) == 3 and parts[1].startswith("sha256="):
                        entries.append((parts[0], parts[1][len("sha256="):]))
        except OSError:
            continue
        if _is_own(entries, target):
            continue
        for rel, digest in entries:
            sums[os.path.normpath(os.path.join(base, rel))] = ("sha256", digest)
    return sums


def _digests(data):
    return {"md5": hashlib.md5(data).hexdigest(),
            "sha256": base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()}


def vouched(path, digests, manifests, workspace):
    """Whether a package manifest names `path` with the content it has now (outside the workspace)."""
    if path == workspace or path.startswith(workspace.rstrip("/") + "/"):
        return False
    entry = manifests.get(path) or manifests.get(os.path.realpath(path))
    return entry is not None and digests[entry[0]] == entry[1]


def walk(names, needles):
    """Files with a grading name; per file holding needles, the needles and the file's digests; RECORDs."""
    named, hits, records = [], [], []
    for root, dirs, files in os.walk("/"):
        if root.startswith(SKIP) and root != "/":
            dirs[:] = []
            continue
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in SKIP]
        if root.endswith(".dist-info") and "RECORD" in files:
            records.append(os.path.join(root, "RECORD"))
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
            found = [needle for needle in needles if needle in text]
            if found:
                hits.append((path, found, _digests(data)))
    return named, hits, records


def classify(hits, manifests, workspace):
    """(leaks, common): a needle any vouched file holds is common text, so no hit of it is evidence."""
    common = {}
    for path, found, digests in hits:
        if vouched(path, digests, manifests, workspace):
            for needle in found:
                common.setdefault(needle, path)
    holding = [[path, needle] for path, found, _ in hits for needle in found if needle not in common]
    return holding, sorted([path, needle] for needle, path in common.items())


def main():
    job = json.loads(sys.argv[1])
    workspace = job["workspace"]
    named, hits, records = walk(set(job["names"]), job["needles"])
    manifests = {**_dpkg_sums(), **_record_sums(records, job["target"])}
    holding, common = classify(hits, manifests, workspace)
    target = os.path.join(workspace, job["target"])
    try:
        with open(target, "rb") as fh:
            digest = hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        digest = None
    print(json.dumps({"git": history(workspace), "named": named, "holding": holding, "common": common,
                      "target_is_a": digest == job["target_sha256"]}))


main()
