"""Open a repository (local git repo, plain directory, git URL, GitHub owner/name) and snapshot it at a ref.

Nothing here touches the user's working tree: a snapshot is a fresh directory holding the files of one
commit (`git archive`), or a filtered copy of a plain directory. Remote repos are cloned once into a cache
keyed by URL and fetched again on reuse.
"""

from __future__ import annotations

import hashlib
import io
import re
import shutil
import tarfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.errors import SourceError

SourceKind = Literal["git", "directory", "remote"]
_OWNER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$")
_URLISH = re.compile(r"^(https?|git|ssh|file)://|^[\w.-]+@[\w.-]+:")
# Directories never copied from a plain directory: VCS data, caches and virtual environments.
_COPY_IGNORE = shutil.ignore_patterns(
    ".git", "__pycache__", "*.pyc", ".venv", "venv", ".tox", ".nox", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", "*.egg-info", "build", "dist", ".coverage", ".coverage.*", "node_modules",
)


class RepoSource(BaseModel):
    """A resolved repository: where it lives and how to read it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    spec: str = Field(description="What the user passed to --repo.")
    kind: SourceKind
    path: Path = Field(description="Work tree or bare clone on disk.")
    url: str | None = Field(None, description="Remote URL when cloned.")
    slug: str = Field(description="`owner__name` used in task ids.")

    @property
    def display_name(self) -> str:
        """How tasks name the repo: its URL when cloned, else `owner/name` from the slug (never a host path)."""
        return self.url or self.slug.replace("__", "/")

    @property
    def has_git(self) -> bool:
        return self.kind in ("git", "remote")


def _slug_from(text: str) -> str:
    text = text.rstrip("/")
    if text.endswith(".git"):
        text = text[:-4]
    parts = [p for p in re.split(r"[/:]", text) if p]
    tail = parts[-2:] if len(parts) >= 2 else ["local"] + parts
    return "__".join(re.sub(r"[^A-Za-z0-9_.-]", "-", p) for p in tail).lower()


def source_slug(spec: str) -> str:
    """The slug `resolve_source` gives `spec`, without opening or cloning anything."""
    local = Path(spec).expanduser()
    return _slug_from(str(local.resolve()) if local.exists() else spec)


def default_cache_dir() -> Path:
    import os

    root = os.environ.get("REPO2RLENV_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "repo2rlenv"


def _is_bare_git(root: Path) -> bool:
    """A bare clone (a mirror, `git clone --bare`): its files are git's own, so a copy would hold no code."""
    return (root / "HEAD").is_file() and (root / "objects").is_dir() and (root / "refs").is_dir()


def resolve_source(spec: str, *, cache_dir: Path | None = None) -> RepoSource:
    """Decide what `spec` names and make it readable (cloning remote repos into the cache)."""
    local = Path(spec).expanduser()
    if local.exists():
        if not local.is_dir():
            raise SourceError(f"--repo must be a directory, got a file: {spec}")
        root = local.resolve()
        slug = _slug_from(str(root))
        if (root / ".git").exists() or _is_bare_git(root):
            return RepoSource(spec=spec, kind="git", path=root, slug=slug)
        return RepoSource(spec=spec, kind="directory", path=root, slug=slug)
    if _URLISH.match(spec):
        url = spec
    elif _OWNER_NAME.match(spec) and not spec.startswith((".", "/")):
        url = f"https://github.com/{spec}.git"
    else:
        raise SourceError(f"repository not found: {spec!r} is not an existing directory, a git URL or owner/name")
    return _clone_or_update(spec, url, cache_dir or default_cache_dir())


def _clone_or_update(spec: str, url: str, cache_dir: Path) -> RepoSource:
    import git  # GitPython is only needed for git work; `--help` must not pay for it

    key = hashlib.sha256(url.encode()).hexdigest()[:16]
    dest = cache_dir / "repos" / f"{_slug_from(url)}-{key}.git"
    try:
        if dest.exists():
            repo = git.Repo(dest)
            repo.git.fetch("origin", "+refs/heads/*:refs/heads/*", "--tags", "--prune")
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_name(dest.name + ".partial")
            shutil.rmtree(tmp, ignore_errors=True)
            # Clone into a temp name and rename: a killed clone never looks like a complete cache entry.
            git.Repo.clone_from(url, tmp, bare=True, env={"GIT_TERMINAL_PROMPT": "0"})
            tmp.rename(dest)
    except git.GitCommandError as exc:
        raise SourceError(f"cannot clone {url}: {git_cause(exc.stderr or str(exc))}") from exc
    return RepoSource(spec=spec, kind="remote", path=dest, url=url, slug=_slug_from(url))


def git_cause(stderr: str) -> str:
    """git's own reason in GitPython's stderr text (`  stderr: '…'`, progress lines, then `fatal: …`)."""
    lines = [line.strip().removeprefix("stderr:").strip().strip("'").strip() for line in stderr.splitlines()]
    lines = [line for line in lines if line]
    fatal = [line for line in lines if line.lower().startswith(("fatal:", "error:", "remote:"))]
    # The first fatal line is the cause; later ones are its consequences ("Could not read from remote").
    return fatal[0] if fatal else (lines[-1] if lines else "git failed")


def resolve_commit(source: RepoSource, ref: str | None) -> str | None:
    """The full SHA `ref` names (HEAD when None); None for a plain directory."""
    if not source.has_git:
        if ref:
            raise SourceError(f"--ref {ref!r} needs a git repository, but {source.spec} has no .git")
        return None
    import git

    repo = git.Repo(source.path)
    try:
        return repo.commit(ref or "HEAD").hexsha
    except (git.BadName, ValueError, git.GitCommandError) as exc:
        what = ref or "HEAD"
        raise SourceError(f"ref {what!r} not found in {source.spec}") from exc


def snapshot(source: RepoSource, commit: str | None, dest: Path) -> Path:
    """Write the files of `commit` (or of the plain directory) into `dest`, which must not exist."""
    if dest.exists():
        raise FileExistsError(dest)
    if commit is None:
        shutil.copytree(source.path, dest, ignore=_COPY_IGNORE, symlinks=True)
        return dest
    import git

    repo = git.Repo(source.path)
    data = io.BytesIO()
    try:
        repo.archive(data, commit, format="tar")
    except git.GitCommandError as exc:
        # A partial clone (`--filter=blob:none` without access to its remote) or a damaged one lacks the
        # contents of some files: name the first, and what to do, not git's traceback.
        said = re.findall(r"error: (.*?)'?$", str(exc.stderr or ""), flags=re.MULTILINE)
        raise SourceError(f"git cannot write out commit {commit[:12]} of {source.spec}: "
                          f"{said[0] if said else f'exit code {exc.status}'} (a partial or damaged clone: "
                          f"fetch its missing objects, or clone it again)") from exc
    data.seek(0)
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=data) as tar:
        tar.extractall(dest, filter="data")
    return dest
