"""A small Hub-compatible HTTP server for the hub tests: just the endpoints huggingface_hub 2.x calls.

Read from huggingface_hub's source (hf_api.py, _commit_api.py, lfs.py, file_download.py,
_snapshot_download.py). With HF_HUB_DISABLE_XET=1 large files go through the LFS batch protocol:

  POST /api/repos/create                                  create_repo (409 when it exists)
  POST /api/{type}s/{org}/{name}/branch/{branch}          create_branch
  GET  /api/{type}s/{org}/{name}[/revision/{rev}]         dataset_info / repo_info (sha of the revision)
  GET  /api/{type}s/{org}/{name}/tree/{rev}[/{path}]      list_repo_tree (recursive listing, no pagination)
  POST /api/validate-yaml                                 the README front matter check before a commit
  POST /api/{type}s/{org}/{name}/preupload/{rev}          upload mode per file + the branch's oid of it
  POST /{type}s/{org}/{name}.git/info/lfs/objects/batch   LFS batch: where to PUT each new object
  PUT  /lfs-objects/{sha256}                              the object's bytes (checked against the oid)
  POST /api/{type}s/{org}/{name}/commit/{rev}             NDJSON commit: file / lfsFile / deletedFile / deletedFolder
  HEAD|GET /{type}s/{org}/{name}/resolve/{rev}/{path}     file metadata (X-Repo-Commit, ETag) and bytes

The server keeps every commit as a full snapshot and records each commit's operations (`commits`), so a
test can assert what was sent. `fail_commits` makes the n-th commit request (1-based) answer HTTP 500.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml


@dataclass
class Blob:
    data: bytes
    lfs: bool

    @property
    def oid(self) -> str:
        """What the tree listing calls `oid`: the git blob sha1 (of the pointer file, for LFS)."""
        if self.lfs:
            pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{self.sha256}\nsize {len(self.data)}\n"
            return git_sha1(pointer.encode())
        return git_sha1(self.data)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


@dataclass
class Repo:
    private: bool
    branches: dict[str, str] = field(default_factory=dict)
    snapshots: dict[str, dict[str, Blob]] = field(default_factory=dict)

    def files_at(self, rev: str) -> tuple[str, dict[str, Blob]] | None:
        sha = self.branches.get(rev, rev)
        return (sha, self.snapshots[sha]) if sha in self.snapshots else None


@dataclass
class CommitRecord:
    repo_id: str
    branch: str
    added: list[str]
    lfs_added: list[str]
    deleted: list[str]
    summary: str


def git_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class HubState:
    """Everything the fake Hub knows; the handler threads share it under one lock."""

    def __init__(self, token: str):
        self.token = token
        self.lock = threading.Lock()
        self.repos: dict[str, Repo] = {}
        self.lfs_objects: dict[str, bytes] = {}
        self.commits: list[CommitRecord] = []
        self.requests: list[tuple[str, str]] = []
        self.commit_requests = 0
        self.fail_commits: set[int] = set()
        self.counter = 0

    def new_sha(self) -> str:
        self.counter += 1
        return hashlib.sha1(f"commit-{self.counter}".encode()).hexdigest()

    def files(self, repo_id: str, rev: str = "main") -> dict[str, bytes]:
        found = self.repos[repo_id].files_at(rev)
        assert found is not None
        return {path: blob.data for path, blob in found[1].items()}


class HttpError(Exception):
    def __init__(self, status: int, message: str, code: str | None = None, **extra: Any):
        super().__init__(message)
        self.status, self.message, self.code, self.extra = status, message, code, extra


class Handler(BaseHTTPRequestHandler):
    server: "FakeHub"
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # keep pytest output clean
        pass

    # ---- plumbing -------------------------------------------------------------------------------
    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None,
              content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, payload: Any, status: int = 200) -> None:
        self._send(status, json.dumps(payload).encode())

    def _authorized(self) -> bool:
        return self.headers.get("Authorization") == f"Bearer {self.server.state.token}"

    def _require_auth(self) -> None:
        if not self._authorized():
            raise HttpError(401, "Invalid credentials in Authorization header")

    def _dispatch(self) -> None:
        state = self.server.state
        url = urlsplit(self.path)
        segments = [unquote(s) for s in url.path.strip("/").split("/")]
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        with state.lock:
            state.requests.append((self.command, url.path))
        try:
            self._route(segments, query)
        except HttpError as exc:
            headers = {"X-Error-Code": exc.code} if exc.code else {}
            headers["X-Error-Message"] = exc.message
            self._send(exc.status, json.dumps({"error": exc.message, **exc.extra}).encode(), headers)

    do_GET = do_POST = do_PUT = do_HEAD = _dispatch

    # ---- routes ---------------------------------------------------------------------------------
    def _route(self, s: list[str], query: dict[str, str]) -> None:
        cmd = self.command
        if cmd == "POST" and s[:3] == ["api", "repos", "create"]:
            return self._create_repo()
        if cmd == "POST" and s[:2] == ["api", "validate-yaml"]:
            return self._validate_yaml()
        if cmd == "PUT" and s[0] == "lfs-objects":
            return self._lfs_put(s[1])
        if s[0] == "api" and len(s) >= 4 and s[1] in ("datasets", "models", "spaces"):
            repo_id, rest = f"{s[2]}/{s[3]}", s[4:]
            if cmd == "GET" and (not rest or rest[0] == "revision"):
                return self._info(repo_id, rest[1] if rest else "main")
            if cmd == "GET" and rest[0] == "tree":
                return self._tree(repo_id, rest[1], "/".join(rest[2:]), query.get("recursive", "").lower() == "true")
            if cmd == "POST" and rest[0] == "branch":
                return self._create_branch(repo_id, rest[1])
            if cmd == "POST" and rest[0] == "preupload":
                return self._preupload(repo_id, rest[1])
            if cmd == "POST" and rest[0] == "commit":
                return self._commit(repo_id, rest[1])
        if s[0] in ("datasets", "models") and len(s) >= 3:
            if cmd == "POST" and s[2].endswith(".git") and s[3:] == ["info", "lfs", "objects", "batch"]:
                return self._lfs_batch(f"{s[1]}/{s[2][:-4]}")
            if cmd in ("GET", "HEAD") and len(s) >= 6 and s[3] == "resolve":
                return self._resolve(f"{s[1]}/{s[2]}", s[4], "/".join(s[5:]))
        raise HttpError(404, f"no route for {cmd} {self.path}")

    def _repo(self, repo_id: str, *, write: bool = False) -> Repo:
        if write:
            self._require_auth()
        repo = self.server.state.repos.get(repo_id)
        if repo is None or (repo.private and not self._authorized()):
            raise HttpError(404, f"Repository Not Found for {repo_id}", "RepoNotFound")
        return repo

    def _snapshot(self, repo: Repo, rev: str) -> tuple[str, dict[str, Blob]]:
        found = repo.files_at(rev)
        if found is None:
            raise HttpError(404, f"Invalid rev id: {rev}", "RevisionNotFound")
        return found

    def _create_repo(self) -> None:
        self._require_auth()
        body = json.loads(self._body())
        repo_id = f"{body['organization']}/{body['name']}"
        state = self.server.state
        with state.lock:
            if repo_id in state.repos:  # huggingface_hub reads `url` from this answer too (exist_ok=True)
                raise HttpError(409, "You already created this dataset repo",
                                url=f"http://{self.headers['Host']}/datasets/{repo_id}")
            repo = Repo(private=body.get("visibility") == "private")
            sha = state.new_sha()
            # Like the real Hub: a new repo starts with one commit holding .gitattributes.
            repo.snapshots[sha] = {".gitattributes": Blob(b"*.parquet filter=lfs diff=lfs merge=lfs -text\n", False)}
            repo.branches["main"] = sha
            state.repos[repo_id] = repo
        self._json({"url": f"http://{self.headers['Host']}/datasets/{repo_id}", "name": repo_id, "id": repo_id})

    def _create_branch(self, repo_id: str, branch: str) -> None:
        repo = self._repo(repo_id, write=True)
        self._body()
        with self.server.state.lock:
            if branch in repo.branches:
                raise HttpError(409, f"Reference already exists: refs/heads/{branch}")
            repo.branches[branch] = repo.branches["main"]
        self._json({})

    def _info(self, repo_id: str, rev: str) -> None:
        repo = self._repo(repo_id)
        sha, files = self._snapshot(repo, rev)
        self._json({"id": repo_id, "sha": sha, "private": repo.private,
                    "siblings": [{"rfilename": p} for p in sorted(files)]})

    def _tree(self, repo_id: str, rev: str, prefix: str, recursive: bool) -> None:
        _sha, files = self._snapshot(self._repo(repo_id), rev)
        base = f"{prefix}/" if prefix else ""
        entries: dict[str, dict[str, Any]] = {}
        for path, blob in sorted(files.items()):
            if not path.startswith(base):
                continue
            parts = path[len(base):].split("/")
            for depth in range(1, len(parts)):  # the folders on the way
                folder = base + "/".join(parts[:depth])
                if recursive or depth == 1:
                    entries.setdefault(folder, {"type": "directory", "path": folder, "oid": git_sha1(folder.encode())})
            if recursive or len(parts) == 1:
                entry: dict[str, Any] = {"type": "file", "path": path, "size": len(blob.data), "oid": blob.oid}
                if blob.lfs:
                    entry["lfs"] = {"oid": blob.sha256, "size": len(blob.data), "pointerSize": 130}
                entries[path] = entry
        self._json(list(entries.values()))

    def _validate_yaml(self) -> None:
        content = json.loads(self._body())["content"]
        if content.startswith("---\n"):
            try:
                yaml.safe_load(content.split("\n---\n", 1)[0][4:])
            except yaml.YAMLError as exc:
                return self._json({"errors": [{"message": str(exc)}], "warnings": []}, status=400)
        self._json({"errors": [], "warnings": []})

    def _preupload(self, repo_id: str, rev: str) -> None:
        repo = self._repo(repo_id, write=True)
        _sha, files = self._snapshot(repo, rev)
        answer = []
        for item in json.loads(self._body())["files"]:
            sample = base64.b64decode(item["sample"])
            lfs = item["path"].endswith(".parquet") or b"\0" in sample
            entry: dict[str, Any] = {"path": item["path"], "uploadMode": "lfs" if lfs else "regular",
                                     "shouldIgnore": False}
            existing = files.get(item["path"])
            if existing is not None:  # what the client compares its local oid against
                entry["oid"] = existing.sha256 if lfs else git_sha1(existing.data)
            answer.append(entry)
        self._json({"files": answer})

    def _lfs_batch(self, repo_id: str) -> None:
        self._repo(repo_id, write=True)
        body = json.loads(self._body())
        objects = []
        for obj in body["objects"]:
            entry: dict[str, Any] = {"oid": obj["oid"], "size": obj["size"]}
            if obj["oid"] not in self.server.state.lfs_objects:
                entry["actions"] = {"upload": {"href": f"http://{self.headers['Host']}/lfs-objects/{obj['oid']}"}}
            objects.append(entry)
        self._json({"transfer": "basic", "objects": objects})

    def _lfs_put(self, oid: str) -> None:
        data = self._body()
        if hashlib.sha256(data).hexdigest() != oid:
            raise HttpError(400, "object does not match its oid")
        with self.server.state.lock:
            self.server.state.lfs_objects[oid] = data
        self._send(200)

    def _commit(self, repo_id: str, rev: str) -> None:
        repo = self._repo(repo_id, write=True)
        lines = [json.loads(line) for line in self._body().splitlines() if line.strip()]
        state = self.server.state
        with state.lock:
            state.commit_requests += 1
            if state.commit_requests in state.fail_commits:
                raise HttpError(500, "simulated outage while committing")
            parent, files = self._snapshot(repo, rev)
            files = dict(files)
            record = CommitRecord(repo_id, rev, [], [], [], lines[0]["value"]["summary"])
            for line in lines[1:]:
                key, value = line["key"], line["value"]
                if key == "file":
                    files[value["path"]] = Blob(base64.b64decode(value["content"]), False)
                    record.added.append(value["path"])
                elif key == "lfsFile":
                    if value["oid"] not in state.lfs_objects:
                        raise HttpError(400, f"LFS object {value['oid']} was never uploaded")
                    files[value["path"]] = Blob(state.lfs_objects[value["oid"]], True)
                    record.lfs_added.append(value["path"])
                elif key == "deletedFile":
                    if files.pop(value["path"], None) is None:
                        raise HttpError(404, "A file with this name doesn't exist", "EntryNotFound")
                    record.deleted.append(value["path"])
                elif key == "deletedFolder":
                    for path in [p for p in files if p.startswith(value["path"].rstrip("/") + "/")]:
                        del files[path]
                        record.deleted.append(path)
            sha = state.new_sha()
            repo.snapshots[sha] = files
            repo.branches[rev] = sha
            state.commits.append(record)
        self._json({"commitUrl": f"http://{self.headers['Host']}/datasets/{repo_id}/commit/{sha}",
                    "commitOid": sha, "pullRequestUrl": None})

    def _resolve(self, repo_id: str, rev: str, path: str) -> None:
        sha, files = self._snapshot(self._repo(repo_id), rev)
        blob = files.get(path)
        if blob is None:
            raise HttpError(404, f"Entry not found: {path}", "EntryNotFound")
        etag = blob.sha256 if blob.lfs else git_sha1(blob.data)
        self._send(200, blob.data, {"X-Repo-Commit": sha, "ETag": f'"{etag}"'},
                   content_type="application/octet-stream")


class FakeHub(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, token: str):
        super().__init__(("127.0.0.1", 0), Handler)
        self.state = HubState(token)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"
