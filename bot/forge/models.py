"""Forge-neutral records: repositories, issues, comments.

Frozen pydantic models: the adapters translate SDK objects into these, and nothing above the
adapters sees an SDK type.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

ForgeKind = Literal["gitlab", "github"]


class RepoRef(BaseModel):
    """A repository: GitLab project id (as text) or GitHub `owner/name`."""

    model_config = ConfigDict(frozen=True)

    forge: ForgeKind
    project: str
    path: str
    default_branch: str = "main"
    clone_url: str = ""


class IssueRef(BaseModel):
    """An issue by its per-project number (GitLab `iid`, GitHub `number`)."""

    model_config = ConfigDict(frozen=True)

    repo: RepoRef
    number: int


class Issue(BaseModel):
    model_config = ConfigDict(frozen=True)

    ref: IssueRef
    title: str
    body: str
    labels: tuple[str, ...] = ()
    author: str = ""


class CommentRef(BaseModel):
    """A comment the bot can edit later."""

    model_config = ConfigDict(frozen=True)

    issue: IssueRef
    id: int
    url: str = ""
