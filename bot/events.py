"""ForgeEvent: a webhook delivery turned into the few facts a task needs.

Parsing is pure (headers and decoded JSON in, event or `None` out): `None` means "authentic but not
a trigger", answered 200 `ignored`. Nothing past this module reads raw payload dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from bot.forge.models import ForgeKind, RepoRef
from bot.settings import TriggerSettings

__all__ = ["Actor", "ForgeEvent", "ForgeKind", "PayloadError", "RepoRef", "parse_github", "parse_gitlab"]
Mode = Literal["implement", "analyze", "review"]
Trigger = Literal["label", "command", "reply", "cancel"]


class PayloadError(ValueError):
    """The payload is JSON but not the shape its event header promises."""


class Actor(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: int
    username: str


class ForgeEvent(BaseModel):
    """One trigger: who asked for what on which issue or change."""

    model_config = ConfigDict(frozen=True)

    forge: ForgeKind
    delivery_id: str
    repo: RepoRef
    target: Literal["issue", "change"]
    number: int
    actor: Actor
    trigger: Trigger
    mode: Mode
    title: str = ""
    body: str = ""
    label: str = ""
    comment_id: int | None = None
    discussion_id: str | None = None

    @property
    def task_key(self) -> str:
        """Identify the issue or change; at most one active task per key."""
        return f"{self.forge}:{self.repo.project}:{self.target}:{self.number}"


def _label_mode(label: str, triggers: TriggerSettings) -> Mode | None:
    if label == triggers.implement_label:
        return "implement"
    if label == triggers.analyze_label:
        return "analyze"
    return None


def parse_gitlab(
    headers: Mapping[str, str], payload: dict[str, Any], delivery_id: str, triggers: TriggerSettings
) -> ForgeEvent | None:
    """Turn a GitLab delivery into an event, or `None` when it is not a trigger."""
    kind = headers.get("x-gitlab-event", "")
    try:
        if kind in ("Issue Hook", "Confidential Issue Hook"):
            return _gitlab_issue(payload, delivery_id, triggers)
    except (KeyError, TypeError, ValidationError) as exc:
        raise PayloadError(f"malformed {kind} payload: {exc}") from exc
    return None


def _gitlab_repo(payload: dict[str, Any]) -> RepoRef:
    project = payload["project"]
    return RepoRef(
        forge="gitlab",
        project=str(project["id"]),
        path=str(project["path_with_namespace"]),
        default_branch=str(project.get("default_branch") or "main"),
        clone_url=str(project.get("git_http_url") or ""),
    )


def _gitlab_issue(payload: dict[str, Any], delivery_id: str, triggers: TriggerSettings) -> ForgeEvent | None:
    labels = payload.get("changes", {}).get("labels")
    if not labels:
        return None
    before = {str(label["title"]) for label in labels.get("previous") or []}
    added = [str(label["title"]) for label in labels.get("current") or [] if label["title"] not in before]
    for label in added:
        mode = _label_mode(label, triggers)
        if mode is None:
            continue
        attrs = payload["object_attributes"]
        user = payload["user"]
        return ForgeEvent(
            forge="gitlab",
            delivery_id=delivery_id,
            repo=_gitlab_repo(payload),
            target="issue",
            number=int(attrs["iid"]),
            actor=Actor(id=int(user["id"]), username=str(user["username"])),
            trigger="label",
            mode=mode,
            title=str(attrs.get("title") or ""),
            body=str(attrs.get("description") or ""),
            label=label,
        )
    return None


def parse_github(
    headers: Mapping[str, str], payload: dict[str, Any], delivery_id: str, triggers: TriggerSettings
) -> ForgeEvent | None:
    """Turn a GitHub delivery into an event, or `None` when it is not a trigger."""
    kind = headers.get("x-github-event", "")
    try:
        if kind == "issues" and payload.get("action") == "labeled":
            return _github_labeled(payload, delivery_id, triggers)
    except (KeyError, TypeError, ValidationError) as exc:
        raise PayloadError(f"malformed {kind} payload: {exc}") from exc
    return None


def _github_repo(payload: dict[str, Any]) -> RepoRef:
    repo = payload["repository"]
    return RepoRef(
        forge="github",
        project=str(repo["full_name"]),
        path=str(repo["full_name"]),
        default_branch=str(repo.get("default_branch") or "main"),
        clone_url=str(repo.get("clone_url") or ""),
    )


def _github_labeled(payload: dict[str, Any], delivery_id: str, triggers: TriggerSettings) -> ForgeEvent | None:
    if "pull_request" in payload["issue"]:
        return None
    label = str(payload["label"]["name"])
    mode = _label_mode(label, triggers)
    if mode is None:
        return None
    issue = payload["issue"]
    sender = payload["sender"]
    return ForgeEvent(
        forge="github",
        delivery_id=delivery_id,
        repo=_github_repo(payload),
        target="issue",
        number=int(issue["number"]),
        actor=Actor(id=int(sender["id"]), username=str(sender["login"])),
        trigger="label",
        mode=mode,
        title=str(issue.get("title") or ""),
        body=str(issue.get("body") or ""),
        label=label,
    )
