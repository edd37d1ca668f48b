"""Errors of publishing: each is a `UserError`, so the CLI prints one line and exits with code 2."""

from __future__ import annotations

from repo2rlenv.errors import UserError


class NotADataset(UserError):
    """The directory is not a dataset written by `repo2rlenv generate`."""


class UnvalidatedTasks(UserError):
    """Some tasks failed validation, were never validated, or changed since; pushing them needs consent."""


class HubError(UserError):
    """The Hub (or the way to reach it) refused or failed an operation."""


class MissingToken(HubError):
    """No Hugging Face token was found for an operation that writes."""


class BadRepoId(HubError):
    """The repo id is not of the form `org/name` with the Hub's allowed characters."""


class PushFailed(HubError):
    """An upload stopped part-way; the message says which commits landed and what was not published."""


class PullFailed(HubError):
    """A download failed or the repo does not hold a repo2rlenv dataset."""
