"""Webhook deliveries as the forges describe them reach the receiver and end well.

GitHub: for each event and action of the events the receiver reads (`issues`, `issue_comment`), the
official example where one exists and payloads generated from the official webhook schema (optional
fields present or absent at random, reproducibly), raw and steered to a trigger (the trigger label,
a command comment). Every one must be accepted as a task or ignored with a reason: never a 5xx, and
never refused as malformed, since each payload is valid by GitHub's own description. GitLab has no
payload schema: its documented examples (and their trigger variants) must be accepted or ignored,
and each of them with any one field removed must still get an answer below 500.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
import referencing
import referencing.jsonschema
from hypothesis import HealthCheck, given, settings
from starlette.testclient import TestClient

from bot.web.app import create_app
from foundation.settings import Settings, TriggerSettings
from tests.fakes.contract import documents
from tests.fakes.contract.generate import strategy
from tests.fakes.contract.ledger import LEDGER
from tests.fakes.samples import sample
from tests.intake import deliveries
from tests.tools import need

GITHUB_EVENTS = {"issues": "issues", "issue-comment": "issue_comment"}  # description prefix → X-GitHub-Event
HANDLED = ("issues-labeled", "issue-comment-created")
GENERATED = 10  # payloads drawn per handled event and action (each sent raw and steered to a trigger)
OTHERS = 1  # per other action of the same events (sent raw: they are read and ignored)


@pytest.fixture
def receiver(settings: Settings, redis_url: str) -> Iterator[TestClient]:
    settings.redis_url = redis_url
    settings.triggers = TriggerSettings(analyze_label="Platform", implement_label="bug")
    settings.gitlab.bot_user_id = 99
    settings.github.bot_login = "forgebot[bot]"
    with TestClient(create_app(settings)) as client:
        yield client


def _outcomes(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [json.loads(r.getMessage().removeprefix("webhook ")) for r in caplog.records
            if r.name == "bot.intake.webhooks" and r.getMessage().startswith("webhook {")]


def _post(client: TestClient, forge: str, payload: dict[str, Any], event: str) -> tuple[int, str]:
    body, headers = deliveries.github(payload, event) if forge == "github" else deliveries.gitlab(payload, event)
    response = client.post(deliveries.path(forge, body), content=body, headers=headers)
    return response.status_code, str(response.json().get("result") or response.json().get("error"))


def _webhook_schemas() -> tuple[dict[str, Any], jsonschema.protocols.Validator]:
    spec = documents.github_webhooks()
    comps = spec["components"]["schemas"]
    registry: referencing.Registry[Any] = referencing.Registry().with_resource(
        "urn:webhooks", referencing.Resource({"components": {"schemas": comps}}, referencing.jsonschema.DRAFT202012))
    return comps, jsonschema.Draft202012Validator({}, registry=registry)


def _generated(name: str, count: int) -> list[dict[str, Any]]:
    comps, base = _webhook_schemas()
    validator = base.evolve(schema={"$ref": f"urn:webhooks#/components/schemas/{name}"})
    drawn: list[dict[str, Any]] = []

    @settings(max_examples=count, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy(comps[name], lambda ref: comps[ref.rsplit("/", 1)[-1]]))
    def draw(payload: dict[str, Any]) -> None:
        drawn.append(payload)

    draw()
    invalid = [p for p in drawn if not validator.is_valid(p)]
    assert not invalid, f"generated {name} payloads the schema rejects: {next(validator.iter_errors(invalid[0]))}"
    return drawn


def _steered(key: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The payload made a trigger: the implement label added, or a command commented."""
    steered = copy.deepcopy(payload)
    if key.startswith("issues-"):  # on an issue (not a pull request), the added label a trigger
        steered["issue"].pop("pull_request", None)
        steered["label"] = {**(steered.get("label") or {"id": 1, "node_id": "LA_1", "url": "https://example.com/l",
                                                         "color": "ffffff", "default": False}), "name": "bug"}
    if key.startswith("issue-comment-"):
        steered["comment"]["body"] = "/analyze"
    return steered


def _github_cases() -> list[tuple[str, str]]:
    spec = documents.github_webhooks()
    return [(key, GITHUB_EVENTS[prefix]) for key in spec["webhooks"] for prefix in GITHUB_EVENTS
            if key.startswith(prefix + "-") and not (prefix == "issues" and key.startswith("issue-comment"))]


def test_github_deliveries_from_the_official_schemas_end_well(
    receiver: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    need(documents.available(), "shared/forge-contract (GitHub's webhooks description)")
    caplog.set_level(logging.INFO, "bot.intake.webhooks")
    spec = documents.github_webhooks()
    cases = _github_cases()
    assert {key for key, _ in cases} >= set(HANDLED)
    samples = {"issues-labeled": ["github/issues.labeled.json"],
               "issue-comment-created": ["github/issue_comment.created.json"],
               "issues-opened": ["github/issues.opened.json"], "issues-unlabeled": ["github/issues.unlabeled.json"],
               "issue-comment-edited": ["github/issue_comment.edited.json"]}
    failures = []
    for key, event in cases:
        name = spec["webhooks"][key]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        # every action is read; the other actions are generated sparingly (each schema costs ~0.5 CPU-s)
        generated = _generated(name.rsplit("/", 1)[-1], GENERATED if key in HANDLED else OTHERS)
        steered = [_steered(key, p) for p in generated] if key in HANDLED else []
        payloads = [sample(s) for s in samples.get(key, [])] + generated + steered
        for payload in payloads:
            status, result = _post(receiver, "github", payload, event)
            LEDGER.webhook(f"github {key}", result)
            if status >= 500 or result not in ("accepted", "ignored", "duplicate"):
                failures.append(f"{key}: {status} {result}")
    outcomes = _outcomes(caplog)
    assert not failures, failures[:10]
    assert all(o["reason"] for o in outcomes if o["result"] != "accepted"), "an ignored delivery without a reason"
    accepted = {o["event"] for o in outcomes if o["result"] == "accepted"}
    assert accepted == {"issues", "issue_comment"}, accepted  # the steered payloads of both handled events ran


GITLAB_EXAMPLES = [
    ("gitlab/issue.labels-changed.json", "Issue Hook"),
    ("gitlab/note.issue.json", "Note Hook"),
    ("gitlab/note.merge_request.json", "Note Hook"),
    ("gitlab/merge_request.open.json", "Merge Request Hook"),
]


def _gitlab_variants(path: str) -> list[dict[str, Any]]:
    """The documented example, and the same made a trigger (a trigger label added, a command noted)."""
    example = sample(path)
    steered = copy.deepcopy(example)
    if "note" in steered.get("object_attributes", {}):
        steered["object_attributes"]["note"] = "/review" if "merge_request" in path else "/analyze"
    labels = (steered.get("changes") or {}).get("labels")
    if labels:
        labels["current"] = [*labels.get("current", []), {"title": "bug", "id": 77}]
    return [example, steered]


def _without(payload: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """`payload` with one key removed, for every key at the top and one level down."""
    for key, value in payload.items():
        yield key, {k: v for k, v in payload.items() if k != key}
        if isinstance(value, dict):
            for inner in value:
                smaller = copy.deepcopy(payload)
                del smaller[key][inner]
                yield f"{key}.{inner}", smaller


def test_gitlab_documented_deliveries_end_well(receiver: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "bot.intake.webhooks")
    failures = []
    for path, event in GITLAB_EXAMPLES:
        for payload in _gitlab_variants(path):
            status, result = _post(receiver, "gitlab", payload, event)
            LEDGER.webhook(f"gitlab {event}", result)
            if status >= 500 or result not in ("accepted", "ignored", "duplicate"):
                failures.append(f"{path}: {status} {result}")
            for removed, smaller in _without(payload):
                status, result = _post(receiver, "gitlab", smaller, event)
                LEDGER.webhook(f"gitlab {event} (one field removed)", result)
                if status >= 500:
                    failures.append(f"{path} without {removed}: {status} {result}")
    assert not failures, failures[:10]
    outcomes = _outcomes(caplog)
    assert all(o["reason"] for o in outcomes if o["result"] not in ("accepted",)), "an answer without a reason"
    assert {o["event"] for o in outcomes if o["result"] == "accepted"} == {"Issue Hook", "Note Hook"}
