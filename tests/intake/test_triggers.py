"""Every trigger on both forges, and every event that must not trigger, from the real payloads."""

from __future__ import annotations

import pytest

from bot.tasks.commands import first_line_command
from bot.tasks.events import ForgeEvent, PayloadError, parse_github, parse_gitlab
from foundation.settings import TriggerSettings
from tests.fakes.samples import sample
from tests.intake.payloads import GITHUB_BOT, GITLAB_BOT_ID, github_comment, gitlab_note

TRIGGERS = TriggerSettings(analyze_label="Platform")
NOTE = {"x-gitlab-event": "Note Hook"}
COMMENT = {"x-github-event": "issue_comment"}


def _gl(payload: dict[str, object], headers: dict[str, str] = NOTE) -> ForgeEvent | None:
    return parse_gitlab(headers, payload, "gitlab:d", TRIGGERS, bot_user_id=GITLAB_BOT_ID)


def _gh(payload: dict[str, object], headers: dict[str, str] = COMMENT) -> ForgeEvent | None:
    return parse_github(headers, payload, "github:d", TRIGGERS, bot_login=GITHUB_BOT)


# --- GitLab -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "mode"), [("/implement", "implement"), ("/analyze please", "analyze")])
def test_gitlab_issue_command(text: str, mode: str) -> None:
    event = _gl(gitlab_note(text))
    assert event is not None
    assert (event.trigger, event.mode, event.target, event.number) == ("command", mode, "issue", 17)
    assert event.repo.project == "5" and event.comment == text and event.comment_id == 1241
    assert event.actor.username == "root"


def test_gitlab_review_on_merge_request() -> None:
    event = _gl(gitlab_note("/review", on="change"))
    assert event is not None
    assert (event.trigger, event.mode, event.target, event.number) == ("command", "review", "change", 1)
    assert event.title == "Tempora et eos debitis quae laborum et."


@pytest.mark.parametrize("on", ["issue", "change"])
def test_gitlab_cancel(on: str) -> None:
    event = _gl(gitlab_note("/cancel", on=on))
    assert event is not None and (event.trigger, event.mode, event.target) == ("cancel", None, on)


def test_gitlab_reply_in_the_bots_discussion_carries_its_id() -> None:
    event = _gl(
        gitlab_note(
            "Use the v2 endpoint.", discussion_id="6a9c1750b37d513a43987b574953fceb50b03ce7", type="DiscussionNote"
        )
    )
    assert event is not None and (event.trigger, event.mode) == ("reply", None)
    assert event.discussion_id == "6a9c1750b37d513a43987b574953fceb50b03ce7"


def test_gitlab_plain_note_is_a_reply_candidate() -> None:
    event = _gl(gitlab_note("Hello world"))
    assert event is not None and event.trigger == "reply" and event.discussion_id is None


def test_gitlab_confidential_note_hook() -> None:
    event = _gl(gitlab_note("/analyze"), {"x-gitlab-event": "Confidential Note Hook"})
    assert event is not None and event.mode == "analyze"


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (gitlab_note("/implement", action="update"), "an edit"),
        (gitlab_note("/review", on="issue"), "/review on an issue"),
        (gitlab_note("/implement", on="change"), "/implement on a merge request"),
        (gitlab_note("/implement", noteable_type="Commit"), "a commit comment"),
        (gitlab_note("/implement", noteable_type="Snippet"), "a snippet comment"),
    ],
)
def test_gitlab_notes_that_never_trigger(payload: dict[str, object], why: str) -> None:
    assert _gl(payload) is None, why


def test_gitlab_bots_own_note_is_ignored_by_user_id() -> None:
    payload = gitlab_note("/implement")
    payload["user"]["id"] = GITLAB_BOT_ID
    assert _gl(payload) is None
    other = gitlab_note("Reply", author_id=GITLAB_BOT_ID)
    assert _gl(other) is None


def test_gitlab_bots_own_label_is_ignored() -> None:
    payload = sample("gitlab/issue.labels-changed.json")
    assert _gl(payload, {"x-gitlab-event": "Issue Hook"}) is not None
    payload["user"]["id"] = GITLAB_BOT_ID
    assert _gl(payload, {"x-gitlab-event": "Issue Hook"}) is None


@pytest.mark.parametrize("name", ["gitlab/merge_request.open.json", "gitlab/issue.labels-changed.json"])
def test_gitlab_other_hooks_are_ignored(name: str) -> None:
    assert _gl(sample(name), {"x-gitlab-event": "Merge Request Hook"}) is None
    assert _gl(sample(name), {"x-gitlab-event": "Push Hook"}) is None


def test_gitlab_work_item_label_is_ignored() -> None:
    payload = sample("gitlab/issue.labels-changed.json")
    payload["object_kind"] = "work_item"
    assert _gl(payload, {"x-gitlab-event": "Issue Hook"}) is None


def test_same_note_through_two_hooks_has_one_semantic_key() -> None:
    first = parse_gitlab(NOTE, gitlab_note("/implement"), "gitlab:a", TRIGGERS)
    second = parse_gitlab(NOTE, gitlab_note("/implement"), "gitlab:b", TRIGGERS)
    assert first is not None and second is not None
    assert first.semantic_key == second.semantic_key and first.task_id != second.task_id


# --- GitHub -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "mode"), [("/implement", "implement"), ("/analyze\nsee above", "analyze")])
def test_github_issue_command(text: str, mode: str) -> None:
    event = _gh(github_comment(text))
    assert event is not None
    assert (event.trigger, event.mode, event.target, event.number) == ("command", mode, "issue", 1)
    assert event.repo.project == "Codertocat/Hello-World" and event.comment_id == 492700400


def test_github_review_on_pull_request_comment() -> None:
    event = _gh(github_comment("/review", on="change"))
    assert event is not None and (event.trigger, event.mode, event.target) == ("command", "review", "change")


@pytest.mark.parametrize("on", ["issue", "change"])
def test_github_cancel(on: str) -> None:
    event = _gh(github_comment("/cancel", on=on))
    assert event is not None and (event.trigger, event.target) == ("cancel", on)


def test_github_sample_comment_is_a_reply_candidate() -> None:
    event = _gh(sample("github/issue_comment.created.json"))
    assert event is not None and event.trigger == "reply"
    assert event.comment == "You are totally right! I'll get this fixed right away."


@pytest.mark.parametrize("login", [GITHUB_BOT, GITHUB_BOT.upper()])
def test_github_bots_own_comment_is_ignored(login: str) -> None:
    payload = github_comment("/implement")
    payload["comment"]["user"]["login"] = login
    payload["sender"]["login"] = login
    assert _gh(payload) is None


def test_github_bots_own_label_is_ignored() -> None:
    payload = sample("github/issues.labeled.json")
    payload["sender"]["login"] = GITHUB_BOT
    labeled = TriggerSettings(analyze_label="bug")
    assert parse_github({"x-github-event": "issues"}, payload, "d", labeled, bot_login=GITHUB_BOT) is None
    assert parse_github({"x-github-event": "issues"}, sample("github/issues.labeled.json"), "d", labeled) is not None


@pytest.mark.parametrize(
    ("event", "name"),
    [
        ("issue_comment", "issue_comment.edited.json"),
        ("issues", "issues.opened.json"),
        ("issues", "issues.unlabeled.json"),
        ("pull_request", "pull_request.opened.json"),
        ("pull_request", "pull_request.synchronize.json"),
        ("pull_request", "pull_request.closed.json"),
        ("pull_request_review", "pull_request_review.submitted.json"),
        ("pull_request_review_comment", "pull_request_review_comment.created.json"),
        ("ping", "ping.json"),
    ],
)
def test_github_events_that_never_trigger(event: str, name: str) -> None:
    assert _gh(sample(f"github/{name}"), {"x-github-event": event}) is None


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (github_comment("/review", on="issue"), "/review on an issue"),
        (github_comment("/implement", on="change"), "/implement on a pull request"),
    ],
)
def test_github_commands_on_the_wrong_item(payload: dict[str, object], why: str) -> None:
    assert _gh(payload) is None, why


def test_github_labeled_pull_request_issue_is_ignored() -> None:
    payload = sample("github/issues.labeled.json")
    payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/o/r/pulls/1"}
    assert parse_github({"x-github-event": "issues"}, payload, "d", TriggerSettings(analyze_label="bug")) is None


@pytest.mark.parametrize("forge", ["gitlab", "github"])
def test_malformed_comment_payload_is_a_payload_error(forge: str) -> None:
    with pytest.raises(PayloadError):
        if forge == "gitlab":
            payload = gitlab_note("/implement")
            payload["issue"] = "17"
            _gl(payload)
        else:
            payload = github_comment("/implement")
            payload["comment"]["id"] = "not a number"
            _gh(payload)


# --- command words ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/implement", "implement"),
        ("/IMPLEMENT now", "implement"),
        ("\n\n/review\r\nthanks", "review"),
        ("  /cancel", "cancel"),
        ("please /implement", None),
        ("Thanks!\n/implement", None),  # commands count on the first line only
        ("> /implement", None),  # quoting the bot's instructions
        ("```\n/implement\n```", None),
        ("~~~\n/analyze\n~~~", None),
        ("    /implement", None),  # indented code block
        ("\t/implement", None),
        ("`/implement`", None),
        ("/implementation", None),
        ("/implement-later", None),
        ("", None),
        ("   \n", None),
    ],
)
def test_first_line_command(text: str, expected: str | None) -> None:
    assert first_line_command(text, TriggerSettings()) == expected


def test_configured_command_words() -> None:
    words = TriggerSettings(implement_command="/build", review_command="/Look")
    assert first_line_command("/build", words) == "implement"
    assert first_line_command("/look", words) == "review"
    assert first_line_command("/implement", words) is None


def test_only_deliveries_adding_a_label_ask_for_the_repository_labels() -> None:
    from bot.tasks.events import adds_labels

    issue = {"x-gitlab-event": "Issue Hook"}
    added = sample("gitlab/issue.labels-changed.json")
    removed = sample("gitlab/issue.labels-changed.json")
    removed["changes"]["labels"] = {"previous": added["changes"]["labels"]["current"], "current": []}
    assert adds_labels("gitlab", issue, added)
    assert not adds_labels("gitlab", issue, removed)
    assert not adds_labels("gitlab", NOTE, gitlab_note("/implement"))
    assert adds_labels("github", {"x-github-event": "issues"}, sample("github/issues.labeled.json"))
    assert not adds_labels("github", {"x-github-event": "issues"}, sample("github/issues.unlabeled.json"))
