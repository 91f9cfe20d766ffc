"""Signing of per-task links and operator sessions (the pure part; test_access.py tests them over HTTP)."""

from __future__ import annotations

from pydantic import SecretStr

from bot.console import links
from foundation.settings import ConsoleSettings

STRONG = "operator-token-6d8f0a2c4e6b8d0f2a4c"
LINKED = ConsoleSettings(link_secret=SecretStr("link-secret-3a5c7e9b1d2f4a6c8e0b"), public_url="https://bot.example/")


def _parts(url: str) -> tuple[str, str, str]:
    task = url.split("/console/tasks/")[1].split("?")[0]
    query = dict(p.split("=") for p in url.split("?")[1].split("&"))
    return task, query["expires"], query["sig"]


def test_link_round_trip_and_its_limits() -> None:
    url = links.task_link(LINKED, "abc123", now=1000)
    assert url.startswith("https://bot.example/console/tasks/abc123?expires=")
    task, expires, sig = _parts(url)
    assert links.link_valid(LINKED, task, expires, sig, now=1000)
    assert not links.link_valid(LINKED, "abc124", expires, sig, now=1000)
    assert not links.link_valid(LINKED, task, expires, sig, now=int(expires) + 1)
    assert not links.link_valid(LINKED, task, str(int(expires) + 1), sig, now=1000)
    assert not links.link_valid(LINKED, task, "-1", sig, now=1000)
    assert not links.link_valid(LINKED, task, "9" * 40, sig, now=1000)


def test_no_public_url_or_no_secret_means_no_link() -> None:
    assert links.task_link(ConsoleSettings(link_secret=SecretStr(STRONG)), "abc") == ""
    assert links.task_link(ConsoleSettings(public_url="https://bot.example"), "abc") == ""
    assert not ConsoleSettings(operator_token=SecretStr("  ")).enabled


def test_link_key_is_derived_and_the_operator_token_signs_when_no_link_secret() -> None:
    only_operator = ConsoleSettings(operator_token=SecretStr(STRONG), public_url="https://x")
    task, expires, sig = _parts(links.task_link(only_operator, "t1", now=0))
    assert links.link_valid(only_operator, task, expires, sig, now=0)
    assert not links.link_valid(LINKED, task, expires, sig, now=0)  # another secret, another key


def test_session_cookie_expires_and_is_bound_to_the_token() -> None:
    console = ConsoleSettings(operator_token=SecretStr(STRONG))
    cookie = links.session_cookie(console, now=0)
    assert links.session_valid(console, cookie, now=1)
    assert not links.session_valid(console, cookie, now=links.SESSION_SECONDS + 1)
    rotated = ConsoleSettings(operator_token=SecretStr("rotated-9c8b7a6f5e4d3c2b1a0f9e8d"))
    assert not links.session_valid(rotated, cookie, now=1)
    assert not links.session_valid(console, "garbage", now=1)
