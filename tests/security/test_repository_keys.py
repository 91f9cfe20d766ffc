"""Tasks and their dedupe keys name a repository by the forge's id, never by the payload's names.

The receiver checks that a scoped hook's payload names the hook's own repository id, but a payload
is anyone's text beside that id: repository A's hook may send a `full_name` of repository B. Task
and semantic keys used to be built from that name, so A's delivery of a comment with B's name and
comment id made B's genuine command, with the same comment id, a `duplicate`. Through the real
receiver over HTTP (signed with each project's own hook secret, recorded in the real inbox): B's
command is accepted and queued as its own task, and A's stays on A's id.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from bot.web.app import create_app
from foundation.settings import Settings
from tests.fakes.server import ServerThread, serving
from tests.intake import deliveries
from tests.intake.payloads import github_comment

MALLORY, VICTIM = 186853002, 4242  # repository ids: the sample's (Mallory's hook) and the victim's
VICTIM_NAME = "victim-org/payments"


@pytest.fixture
def receiver(settings: Settings, redis_url: str) -> Iterator[ServerThread]:
    settings.redis_url = redis_url
    with serving(create_app(settings)) as server:
        yield server


def _command(repo_id: int, full_name: str) -> dict[str, Any]:
    payload = github_comment("/implement", id=9001)  # the same comment id on both repositories
    payload["repository"].update(id=repo_id, full_name=full_name, name=full_name.split("/")[1])
    return payload


def _deliver(receiver: ServerThread, payload: dict[str, Any]) -> httpx.Response:
    body, headers = deliveries.github(payload, "issue_comment")
    return httpx.post(receiver.url + deliveries.path("github", body), content=body, headers=headers, timeout=10)


def test_another_repositorys_name_in_a_payload_squats_nothing(receiver: ServerThread) -> None:
    squat = _deliver(receiver, _command(MALLORY, VICTIM_NAME))  # Mallory's own hook, the victim's name
    assert squat.status_code == 202, squat.text
    genuine = _deliver(receiver, _command(VICTIM, VICTIM_NAME))
    assert genuine.status_code == 202 and genuine.json()["result"] == "accepted", genuine.text
    assert genuine.json()["task"] != squat.json()["task"]


def test_task_keys_name_the_repository_id() -> None:
    from bot.tasks.events import parse_github
    from foundation.settings import TriggerSettings

    body, headers = deliveries.github(_command(MALLORY, VICTIM_NAME), "issue_comment")
    event = parse_github(headers, json.loads(body), "github:d1", TriggerSettings())
    assert event is not None
    assert event.task_key == f"github:{MALLORY}:issue:{event.number}" and VICTIM_NAME not in event.semantic_key
