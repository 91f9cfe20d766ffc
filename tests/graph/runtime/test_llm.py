"""Providers are built from settings with per-role overrides, timeouts and retries; failures are clear."""

from __future__ import annotations

import sys

import pytest
from pydantic import SecretStr

from foundation.llm import ModelConfigError, chat_model, model_name, profile, resolve
from foundation.settings import LLMSettings, RoleModel


def test_role_overrides_apply_over_defaults() -> None:
    settings = LLMSettings(model="base", base_url="http://vllm:8000/v1",
                           roles={"coder": RoleModel(model="big", temperature=0.2)})
    coder, analyzer = resolve(settings, "coder"), resolve(settings, "analyzer")
    assert (coder.model, coder.temperature, coder.base_url) == ("big", 0.2, "http://vllm:8000/v1")
    assert (analyzer.model, analyzer.temperature) == ("base", 0.0)


def test_openai_compatible_endpoint_without_key() -> None:
    model = chat_model(LLMSettings(model="qwen", base_url="http://localhost:8080/v1", timeout=9, max_retries=4), "x")
    assert model_name(model) == "qwen"
    assert getattr(model, "request_timeout", None) == 9
    # the SDK does not retry: foundation.llm.invoke does, with the configured count, for every provider
    assert getattr(model, "max_retries", None) == 0 and profile(model).max_retries == 4
    assert profile(model).role == "x" and profile(model).structured_output == "auto"


def test_hosted_providers_need_a_key() -> None:
    with pytest.raises(ModelConfigError, match="API_KEY"):
        chat_model(LLMSettings(), "analyzer")
    with pytest.raises(ModelConfigError, match="anthropic"):
        chat_model(LLMSettings(provider="anthropic"), "analyzer")


@pytest.mark.slow  # importing the anthropic SDK takes seconds
def test_anthropic_and_ollama_native() -> None:
    claude = chat_model(LLMSettings(provider="anthropic", model="claude-x", api_key=SecretStr("k"), timeout=7), "r")
    assert model_name(claude) == "claude-x" and getattr(claude, "default_request_timeout", None) == 7
    local = chat_model(LLMSettings(provider="ollama", model="llama3", base_url="http://ollama:11434"), "r")
    assert model_name(local) == "llama3" and getattr(local, "base_url", None) == "http://ollama:11434"


@pytest.mark.parametrize("provider", ["anthropic", "ollama"])
def test_a_provider_without_its_extra_names_the_extra(provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # a None entry in sys.modules makes the import fail as it does when the package is not installed
    monkeypatch.setitem(sys.modules, f"langchain_{provider}", None)
    settings = LLMSettings(provider=provider, model="m", api_key=SecretStr("k"), base_url="http://127.0.0.1:9")
    with pytest.raises(ModelConfigError) as caught:
        chat_model(settings, "analyzer")
    assert str(caught.value) == f"provider {provider} needs the {provider} extra: pip install 'forgebot[{provider}]'"
