"""Forge-neutral records: repositories, issues, comments.

Frozen pydantic models: the adapters translate SDK objects into these, and nothing above the
adapters sees an SDK type.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict

ForgeKind = Literal["gitlab", "github", "local"]  # "local": `forgebot run` on a checkout, no forge


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


class AccessLevel(IntEnum):
    """A user's access to a repository, on GitLab's scale; GitHub roles map onto it.

    GitLab: guest 10, reporter 20, developer 30, maintainer 40, owner 50.
    GitHub: read → REPORTER, triage → TRIAGE, write → DEVELOPER, maintain → MAINTAINER, admin → OWNER.
    Triggering needs DEVELOPER (GitLab Developer, GitHub write) or more.
    """

    NONE = 0
    GUEST = 10
    REPORTER = 20
    TRIAGE = 25
    DEVELOPER = 30
    MAINTAINER = 40
    OWNER = 50


class ForgeUser(BaseModel):
    """A user as the forge knows them; `id` is stable, `username` may change."""

    model_config = ConfigDict(frozen=True)

    id: int
    username: str
