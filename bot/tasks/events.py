"""ForgeEvent: a webhook delivery turned into the few facts a task needs.

Parsing is pure (headers and decoded JSON in, event or `None` out): `None` means "authentic but not
a trigger", answered 200 `ignored`. Nothing past this module reads raw payload dicts.

Triggers: a label newly added to an issue, a command on the first line of a new comment
(`/implement` `/analyze` on issues, `/review` on changes, `/cancel` on either), and any other new
comment as a `reply` candidate. Whether a reply or a cancel means anything depends on whether a
task is active on that issue; the intake decides that from its store, not this parser.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from bot.tasks.commands import Command, first_line_command
from foundation.forge.models import ForgeKind, RepoRef, item_url
from foundation.settings import Settings, TriggerSettings

__all__ = [
    "Actor", "ForgeEvent", "ForgeKind", "PayloadError", "RepoRef", "adds_labels", "claimed_id", "installation_of",
    "parse_github", "parse_gitlab", "web_link",
]
Mode = Literal["implement", "analyze", "review"]
Trigger = Literal["label", "command", "reply", "cancel"]
Target = Literal["issue", "change"]

# what a hostile or truncated payload raises when a field is missing or of the wrong type
_SHAPE_ERRORS = (LookupError, TypeError, ValueError, AttributeError, ArithmeticError)


class PayloadError(ValueError):
    """The payload is JSON but not the shape its event header promises."""


class Actor(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: int
    username: str


class ForgeEvent(BaseModel):
    """One trigger: who asked for what on which issue or change.

    `mode` is `None` for replies and cancels: they act on the task already active on the item.
    `state` names what the event saw (a comment id, a label with the item's update time), so the
    same event delivered by two hooks has one `semantic_key`.
    """

    model_config = ConfigDict(frozen=True)

    forge: ForgeKind
    delivery_id: str
    repo: RepoRef
    target: Target
    number: int
    actor: Actor
    trigger: Trigger
    mode: Mode | None = None
    title: str = ""
    body: str = ""
    label: str = ""
    comment: str = ""
    comment_id: int | None = None
    discussion_id: str | None = None
    state: str = ""
    installation: int | None = None  # GitHub App deliveries: the installation to mint a token for
    # the forge's numeric id of the repository the payload claims (GitLab project id, GitHub
    # repository id): the only repository fact the worker takes from a payload, to ask the forge about
    repo_id: int = 0

    @property
    def task_key(self) -> str:
        """Identify the issue or change; at most one active task per key.

        The repository is named by the forge's numeric id, never the payload's `full_name`: a hook
        may send any name beside its own id, and a key by name let one repository's deliveries
        squat another's (its genuine command answered `duplicate`). Events queued before ids were
        recorded fall back to the name.
        """
        return f"{self.forge}:{self.repo_id or self.repo.project}:{self.target}:{self.number}"

    @property
    def semantic_key(self) -> str:
        return f"{self.task_key}:{self.trigger}:{self.mode or '-'}:{self.state}"

    @property
    def task_id(self) -> str:
        """Derived from the delivery, so a retried job resumes the same checkpoint thread."""
        return hashlib.sha256(self.delivery_id.encode()).hexdigest()[:16]


def web_link(settings: Settings, event: ForgeEvent) -> str:
    """The web address of the event's issue or change, built from the service's forge URLs; a local
    run's checkout path.

    The receiver stores it with each task (the job replaces it with the forge's own address once it
    resolved the repository); readers build it only for a task stored without one, never from the
    variables of whatever shell runs `forgebot tasks`.
    """
    if event.forge == "local":
        return event.repo.clone_url
    api = settings.github.api_url.rstrip("/")
    web = settings.gitlab.url if event.forge == "gitlab" else (
        "https://github.com" if api == "https://api.github.com" else api.removesuffix("/api/v3"))
    repo = event.repo if event.repo.path else event.repo.model_copy(update={"path": event.repo.project})
    return item_url(repo, event.target, event.number, web)


@dataclass(frozen=True)
class _Item:
    """The facts every event of a delivery shares, read once per forge: the delivery, the repository
    the payload claims, who acted and the issue or change acted on. The two kinds of trigger are
    built here, so each forge's parser says only where the facts are and the events' `state` keys
    have one home."""

    forge: ForgeKind
    delivery_id: str
    repo: RepoRef
    repo_id: int
    number: int
    actor: Actor
    title: str
    body: str
    installation: int | None = None

    def labeled(self, label: str, mode: Mode, updated_at: object) -> ForgeEvent:
        """A trigger label newly added to an issue, keyed by the label and the issue's update time."""
        return self._event("issue", ("label", mode), state=f"label:{label}:{updated_at or ''}", label=label)

    def commented(
        self, target: Target, found: tuple[Trigger, Mode | None], text: str, comment_id: int, *, state: str,
        discussion_id: str | None = None,
    ) -> ForgeEvent:
        """A new comment: a command, a cancel or a reply candidate (`found`, from `_comment_trigger`)."""
        return self._event(target, found, state=state, comment=text, comment_id=comment_id,
                           discussion_id=discussion_id)

    def _event(
        self, target: Target, found: tuple[Trigger, Mode | None], *, state: str, label: str = "",
        comment: str = "", comment_id: int | None = None, discussion_id: str | None = None,
    ) -> ForgeEvent:
        return ForgeEvent(
            forge=self.forge, delivery_id=self.delivery_id, repo=self.repo, repo_id=self.repo_id, target=target,
            number=self.number, actor=self.actor, trigger=found[0], mode=found[1], title=self.title,
            body=self.body, label=label, comment=comment, comment_id=comment_id, discussion_id=discussion_id,
            state=state, installation=self.installation,
        )


def _label_mode(label: str, triggers: TriggerSettings) -> Mode | None:
    if label == triggers.implement_label:
        return "implement"
    if label == triggers.analyze_label:
        return "analyze"
    return None


def _comment_trigger(command: Command | None, target: Target) -> tuple[Trigger, Mode | None] | None:
    """Map a first-line command on an issue or change to a trigger; `None`: not for this target."""
    if command is None:
        return "reply", None
    if command == "cancel":
        return "cancel", None
    if command == "review":
        return ("command", "review") if target == "change" else None
    return ("command", command) if target == "issue" else None


# --- GitLab -------------------------------------------------------------------------------------


def parse_gitlab(
    headers: Mapping[str, str],
    payload: dict[str, Any],
    delivery_id: str,
    triggers: TriggerSettings,
    bot_user_id: int | None = None,
) -> ForgeEvent | None:
    """Turn a GitLab delivery into an event, or `None` when it is not a trigger."""
    kind = headers.get("x-gitlab-event", "")
    try:
        if kind in ("Issue Hook", "Confidential Issue Hook"):
            return _gitlab_issue(payload, delivery_id, triggers, bot_user_id)
        if kind in ("Note Hook", "Confidential Note Hook"):
            return _gitlab_note(payload, delivery_id, triggers, bot_user_id)
    except _SHAPE_ERRORS as exc:
        raise PayloadError(f"malformed {kind} payload: {type(exc).__name__}") from exc
    return None


def _gitlab_repo(payload: dict[str, Any]) -> RepoRef:
    """The project as the payload claims it: id and path only. Its URLs and default branch are not
    read: the worker resolves them through the forge's API (`bot.intake.identity`)."""
    project = payload["project"]
    return RepoRef(
        forge="gitlab", project=str(int(project["id"])), path=str(project["path_with_namespace"]), default_branch=""
    )


def _gitlab_actor(payload: dict[str, Any], bot_user_id: int | None) -> Actor | None:
    """The acting user, or `None` when it is the bot itself (its own events never trigger)."""
    user = payload["user"]
    actor = Actor(id=int(user["id"]), username=str(user["username"]))
    return None if bot_user_id is not None and actor.id == bot_user_id else actor


def _gitlab_issue(
    payload: dict[str, Any], delivery_id: str, triggers: TriggerSettings, bot_user_id: int | None
) -> ForgeEvent | None:
    if payload.get("object_kind", "issue") != "issue":
        return None  # work items other than issues (tasks, epics)
    labels = (payload.get("changes") or {}).get("labels")
    if not labels:
        return None
    before = {str(label["title"]) for label in labels.get("previous") or []}
    added = [str(label["title"]) for label in labels.get("current") or [] if str(label["title"]) not in before]
    found = [(label, mode) for label in added if (mode := _label_mode(label, triggers)) is not None]
    actor = _gitlab_actor(payload, bot_user_id)
    if not found or actor is None:
        return None
    label, mode = found[0]
    attrs = payload["object_attributes"]
    return _gitlab_item(payload, delivery_id, attrs, actor).labeled(label, mode, attrs.get("updated_at"))


def _gitlab_note(
    payload: dict[str, Any], delivery_id: str, triggers: TriggerSettings, bot_user_id: int | None
) -> ForgeEvent | None:
    attrs = payload["object_attributes"]
    if attrs.get("action", "create") != "create":
        return None  # edits (GitLab ≥ 16.11) never re-trigger
    actor = _gitlab_actor(payload, bot_user_id)
    if actor is None or (bot_user_id is not None and attrs.get("author_id") == bot_user_id):
        return None
    noteable = attrs.get("noteable_type")
    if noteable == "Issue":
        target: Target = "issue"
        item = payload["issue"]
    elif noteable == "MergeRequest":
        target, item = "change", payload["merge_request"]
    else:
        return None  # commits and snippets
    text = str(attrs.get("note") or "")
    found = _comment_trigger(first_line_command(text, triggers), target)
    if found is None:
        return None
    if found[0] == "reply" and (attrs.get("internal") or attrs.get("confidential")):
        return None  # an internal note is no answer: what the task writes from it is not internal (`graph.discussion`)
    discussion = attrs.get("discussion_id")
    return _gitlab_item(payload, delivery_id, item, actor).commented(
        target, found, text, int(attrs["id"]), state=f"note:{int(attrs['id'])}",
        discussion_id=str(discussion) if discussion else None,
    )


def _gitlab_item(payload: dict[str, Any], delivery_id: str, item: dict[str, Any], actor: Actor) -> _Item:
    """What a GitLab event says of its issue or merge request (`item`: object attributes or the
    note's `issue` / `merge_request` section, which carry the same fields)."""
    return _Item(
        forge="gitlab", delivery_id=delivery_id, repo=_gitlab_repo(payload), repo_id=int(payload["project"]["id"]),
        number=int(item["iid"]), actor=actor, title=str(item.get("title") or ""),
        body=str(item.get("description") or ""),
    )


# --- GitHub -------------------------------------------------------------------------------------


def parse_github(
    headers: Mapping[str, str],
    payload: dict[str, Any],
    delivery_id: str,
    triggers: TriggerSettings,
    bot_login: str | None = None,
) -> ForgeEvent | None:
    """Turn a GitHub delivery into an event, or `None` when it is not a trigger."""
    kind = headers.get("x-github-event", "")
    action = payload.get("action")
    try:
        if kind == "issues" and action == "labeled":
            return _github_labeled(payload, delivery_id, triggers, bot_login)
        if kind == "issue_comment" and action == "created":
            return _github_comment(payload, delivery_id, triggers, bot_login)
    except _SHAPE_ERRORS as exc:
        raise PayloadError(f"malformed {kind} payload: {type(exc).__name__}") from exc
    return None


def _github_repo(payload: dict[str, Any]) -> RepoRef:
    """The repository as the payload claims it (see `_gitlab_repo`)."""
    repo = payload["repository"]
    return RepoRef(forge="github", project=str(repo["full_name"]), path=str(repo["full_name"]), default_branch="")


def claimed_id(forge: ForgeKind, payload: dict[str, Any]) -> int | None:
    """The numeric repository id a payload names (GitLab `project.id`, GitHub `repository.id`), if any."""
    section = payload.get("project" if forge == "gitlab" else "repository")
    found = section.get("id") if isinstance(section, dict) else None
    return found if isinstance(found, int) and not isinstance(found, bool) else None


def adds_labels(forge: ForgeKind, headers: Mapping[str, str], payload: dict[str, Any]) -> bool:
    """Whether the delivery adds labels to an issue: the only deliveries whose trigger depends on the
    repository's own `.forgebot.yml` (`bot.intake.repolabels`), so the only ones worth asking the forge about."""
    if forge == "github":
        return headers.get("x-github-event") == "issues" and payload.get("action") == "labeled"
    changes = payload.get("changes")
    labels = changes.get("labels") if isinstance(changes, dict) else None
    if headers.get("x-gitlab-event") not in ("Issue Hook", "Confidential Issue Hook") or not isinstance(labels, dict):
        return False
    return len(_titles(labels.get("current")) - _titles(labels.get("previous"))) > 0  # not a removal


def _titles(labels: Any) -> set[str]:
    found = labels if isinstance(labels, list) else []
    return {str(label.get("title")) for label in found if isinstance(label, dict)}


def installation_of(payload: dict[str, Any]) -> int | None:
    """The GitHub App installation a delivery names (its token may act on the repository)."""
    found = payload.get("installation")
    found = found.get("id") if isinstance(found, dict) else None
    return found if isinstance(found, int) and not isinstance(found, bool) else None


def _github_actor(user: dict[str, Any] | None, bot_login: str | None) -> Actor | None:
    """The acting user, or `None` when it is the bot (logins compare case-insensitively on GitHub) or
    a deleted account (GitHub sends `null` for it; there is no one to check or answer)."""
    if user is None:
        return None
    actor = Actor(id=int(user["id"]), username=str(user["login"]))
    return None if bot_login and actor.username.lower() == bot_login.lower() else actor


def _github_labeled(
    payload: dict[str, Any], delivery_id: str, triggers: TriggerSettings, bot_login: str | None
) -> ForgeEvent | None:
    issue = payload["issue"]
    if issue.get("pull_request"):
        return None
    if not isinstance(payload.get("label"), dict):
        return None  # GitHub's schema makes the added label optional: nothing to act on without it
    label = str(payload["label"]["name"])
    mode = _label_mode(label, triggers)
    actor = _github_actor(payload["sender"], bot_login)
    if mode is None or actor is None:
        return None
    return _github_item(payload, delivery_id, issue, actor).labeled(label, mode, issue.get("updated_at"))


def _github_comment(
    payload: dict[str, Any], delivery_id: str, triggers: TriggerSettings, bot_login: str | None
) -> ForgeEvent | None:
    issue, comment = payload["issue"], payload["comment"]
    actor = _github_actor(comment["user"], bot_login)
    if actor is None or _github_actor(payload["sender"], bot_login) is None:
        return None
    target: Target = "change" if issue.get("pull_request") else "issue"
    text = str(comment.get("body") or "")
    found = _comment_trigger(first_line_command(text, triggers), target)
    if found is None:
        return None
    return _github_item(payload, delivery_id, issue, actor).commented(
        target, found, text, int(comment["id"]), state=f"comment:{int(comment['id'])}"
    )


def _github_item(payload: dict[str, Any], delivery_id: str, issue: dict[str, Any], actor: Actor) -> _Item:
    """What a GitHub event says of its issue or pull request (both arrive as `issue`)."""
    return _Item(
        forge="github", delivery_id=delivery_id, repo=_github_repo(payload), repo_id=int(payload["repository"]["id"]),
        number=int(issue["number"]), actor=actor, title=str(issue.get("title") or ""),
        body=str(issue.get("body") or ""), installation=installation_of(payload),
    )
