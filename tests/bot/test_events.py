"""Label triggers parsed from the real payloads in shared/forge-samples (copied verbatim)."""

from __future__ import annotations

import pytest

from bot.tasks.events import PayloadError, parse_github, parse_gitlab
from foundation.settings import TriggerSettings
from tests.fakes.samples import sample

GITLAB_HEADERS = {"x-gitlab-event": "Issue Hook"}
GITHUB_HEADERS = {"x-github-event": "issues"}


def test_gitlab_label_added_triggers_analyze() -> None:
    # the sample's labels change from [API] to [Platform]: "Platform" is newly added
    event = parse_gitlab(
        GITLAB_HEADERS, sample("gitlab/issue.labels-changed.json"), "d1", TriggerSettings(analyze_label="Platform")
    )
    assert event is not None
    assert (event.forge, event.mode, event.trigger, event.number) == ("gitlab", "analyze", "label", 23)
    assert event.repo.project == "1" and event.repo.path == "gitlabhq/gitlab-test"
    assert event.actor.username == "root" and event.label == "Platform"
    assert event.title == "New API: create/update/delete file"


def test_gitlab_label_that_was_already_present_does_not_trigger() -> None:
    # "API" is in `previous`: an edit that keeps a label must not re-trigger
    payload = sample("gitlab/issue.labels-changed.json")
    assert parse_gitlab(GITLAB_HEADERS, payload, "d1", TriggerSettings(analyze_label="API")) is None


def test_gitlab_label_kept_across_edit_does_not_trigger() -> None:
    # derived variant: Platform in both previous and current
    payload = sample("gitlab/issue.labels-changed.json")
    payload["changes"]["labels"]["previous"] = payload["changes"]["labels"]["current"]
    assert parse_gitlab(GITLAB_HEADERS, payload, "d1", TriggerSettings(analyze_label="Platform")) is None


def test_gitlab_implement_label() -> None:
    event = parse_gitlab(
        GITLAB_HEADERS, sample("gitlab/issue.labels-changed.json"), "d1", TriggerSettings(implement_label="Platform")
    )
    assert event is not None and event.mode == "implement"


def test_gitlab_confidential_issue_hook_is_handled() -> None:
    event = parse_gitlab(
        {"x-gitlab-event": "Confidential Issue Hook"},
        sample("gitlab/issue.labels-changed.json"),
        "d1",
        TriggerSettings(analyze_label="Platform"),
    )
    assert event is not None


def test_gitlab_malformed_issue_payload_is_an_error() -> None:
    payload = sample("gitlab/issue.labels-changed.json")
    del payload["object_attributes"]
    with pytest.raises(PayloadError):
        parse_gitlab(GITLAB_HEADERS, payload, "d1", TriggerSettings(analyze_label="Platform"))


def test_github_labeled_triggers_analyze() -> None:
    event = parse_github(
        GITHUB_HEADERS, sample("github/issues.labeled.json"), "d2", TriggerSettings(analyze_label="bug")
    )
    assert event is not None
    assert (event.forge, event.mode, event.number, event.repo.project) == (
        "github",
        "analyze",
        1,
        "Codertocat/Hello-World",
    )
    assert event.actor.username == "Codertocat"


def test_github_other_label_is_ignored() -> None:
    assert parse_github(GITHUB_HEADERS, sample("github/issues.labeled.json"), "d2", TriggerSettings()) is None


@pytest.mark.parametrize("name", ["issues.unlabeled.json", "issues.opened.json"])
def test_github_non_label_actions_are_ignored(name: str) -> None:
    assert parse_github(GITHUB_HEADERS, sample(f"github/{name}"), "d", TriggerSettings(analyze_label="bug")) is None


def test_github_ping_is_ignored() -> None:
    assert parse_github({"x-github-event": "ping"}, sample("github/ping.json"), "d", TriggerSettings()) is None


def test_github_app_delivery_carries_its_installation() -> None:
    # derived variant: GitHub App deliveries add `installation.id` (HEADERS.md §1.2)
    payload = sample("github/issues.labeled.json")
    payload["installation"] = {"id": 4242, "node_id": "MDIz"}
    event = parse_github(GITHUB_HEADERS, payload, "d2", TriggerSettings(analyze_label="bug"))
    assert event is not None and event.installation == 4242
    plain = parse_github(
        GITHUB_HEADERS, sample("github/issues.labeled.json"), "d2", TriggerSettings(analyze_label="bug")
    )
    assert plain is not None and plain.installation is None
