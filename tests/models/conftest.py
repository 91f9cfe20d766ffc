"""A wire-level model server per test, and settings that point a provider's real client at it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from foundation.settings import LLMSettings
from tests.fakes.model_server import ModelServer


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as running:
        yield running


def llm_settings(server: ModelServer, provider: str = "openai", **extra: object) -> LLMSettings:
    """Settings for `provider`'s real LangChain client, talking to `server`."""
    url = server.openai_url if provider == "openai" else server.url
    options: dict[str, object] = {"provider": provider, "model": server.model, "base_url": url, "timeout": 10,
                                  "max_retries": 2}
    if provider == "anthropic":
        options["api_key"] = SecretStr("sk-ant-test-key-do-not-log")
    options.update(extra)
    return LLMSettings.model_validate(options)
