"""Bad content in a field is the sender's error (4xx), never the store's (503).

PostgreSQL's TEXT cannot hold U+0000: a signed delivery with a NUL in its label, title, comment
or repository name used to reach the inbox, fail there and be answered 503 "store unavailable",
which the forge retries. The receiver now refuses it with 400 before anything is recorded, on
both inbox backends; the same delivery without the NUL is accepted (the control).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import redis

from bot.web.app import create_app
from foundation.settings import Settings
from tests.fakes.server import serving
from tests.intake import deliveries
from tests.intake.conftest import _fresh_schema, postgres_database  # noqa: F401  (fixture)
from tests.intake.payloads import github_comment, gitlab_note

Edit = Callable[[dict[str, Any], str], None]
CASES: dict[str, tuple[str, Edit]] = {
    "gitlab comment": ("gitlab", lambda p, v: p["object_attributes"].update(note=f"/implement {v}")),
    "gitlab issue title": ("gitlab", lambda p, v: p["issue"].update(title=f"Title{v}")),
    "gitlab username": ("gitlab", lambda p, v: p["user"].update(username=f"root{v}")),
    "gitlab project path": ("gitlab", lambda p, v: p["project"].update(path_with_namespace=f"a/b{v}")),
    "github comment": ("github", lambda p, v: p["comment"].update(body=f"/implement {v}")),
    "github repository": ("github", lambda p, v: p["repository"].update(full_name=f"Codertocat/Hello{v}")),
    "github login": ("github", lambda p, v: p["comment"]["user"].update(login=f"octo{v}")),
}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_settings(request: pytest.FixtureRequest, settings: Settings, redis_url: str) -> Iterator[Settings]:
    settings.redis_url = redis_url
    if request.param == "postgres":
        from pydantic import SecretStr

        settings.database_url = SecretStr(_fresh_schema(request.getfixturevalue("postgres_database")))
    yield settings


def _delivery(case: str, value: str, n: int) -> tuple[str, tuple[bytes, dict[str, str]]]:
    forge, edit = CASES[case]
    payload = gitlab_note("/implement", id=900 + n) if forge == "gitlab" else github_comment("/implement", id=900 + n)
    edit(payload, value)
    return forge, deliveries.gitlab(payload, "Note Hook") if forge == "gitlab" else deliveries.github(
        payload, "issue_comment")


def test_a_nul_in_any_field_is_a_400_and_nothing_is_recorded(store_settings: Settings, redis_url: str) -> None:
    with serving(create_app(store_settings)) as receiver:
        for n, case in enumerate(CASES):
            forge, (body, headers) = _delivery(case, "\x00", n)
            response = httpx.post(receiver.url + deliveries.path(forge, body), content=body, headers=headers)
            assert (response.status_code, response.json()) == (400, {"error": "a field contains a NUL character"}), case
        assert redis.Redis.from_url(redis_url).zcard("arq:queue") == 0
        ready = httpx.get(f"{receiver.url}/readyz")
        assert ready.status_code == 200  # the store is fine: it never saw the bad field
        # the controls: the same deliveries with a harmless character instead are accepted
        accepted = 0
        for n, case in enumerate(CASES):
            forge, (body, headers) = _delivery(case, "-", 100 + n)
            response = httpx.post(receiver.url + deliveries.path(forge, body), content=body, headers=headers)
            assert response.status_code in (200, 202), (case, response.text)
            accepted += response.status_code == 202
    assert accepted >= 2  # one comment per forge at least (others may share its issue: "busy" is later)
