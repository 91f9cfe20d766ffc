"""Chat models per role, built from settings through LangChain.

Providers: `openai` — any OpenAI-compatible endpoint through `base_url` (OpenAI, vLLM, llama.cpp,
Ollama's /v1, gateways); `anthropic` (langchain-anthropic); `ollama` — Ollama's native API
(langchain-ollama). Every model gets the configured timeout and retries. A provider whose package
is missing, or a hosted provider without a key, is a `ModelConfigError` that says what to do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import SecretStr

from bot.settings import LLMSettings


class ModelConfigError(RuntimeError):
    """The configured provider cannot be built (missing package or key)."""


@dataclass(frozen=True)
class ResolvedModel:
    """The effective settings of one role after its overrides."""

    provider: str
    model: str
    base_url: str | None
    api_key: SecretStr | None
    temperature: float
    timeout: float
    max_retries: int


def resolve(settings: LLMSettings, role: str) -> ResolvedModel:
    """The default model with the role's overrides applied."""
    override = settings.roles.get(role)

    def pick(name: str) -> Any:
        value = getattr(override, name, None) if override is not None else None
        return value if value is not None and value != "" else getattr(settings, name)

    return ResolvedModel(
        provider=settings.provider, model=pick("model"), base_url=pick("base_url"), api_key=pick("api_key"),
        temperature=pick("temperature"), timeout=settings.timeout, max_retries=settings.max_retries,
    )


def chat_model(settings: LLMSettings, role: str) -> BaseChatModel:
    """Return the chat model for `role`."""
    resolved = resolve(settings, role)
    builder = _BUILDERS.get(resolved.provider)
    if builder is None:
        raise ModelConfigError(f"unknown provider {resolved.provider!r}; use openai, anthropic or ollama")
    return builder(resolved)


def _openai(r: ResolvedModel) -> BaseChatModel:
    if r.api_key is None and r.base_url is None:
        raise ModelConfigError("FORGEBOT_LLM__API_KEY is not set (or set FORGEBOT_LLM__BASE_URL for a local endpoint)")
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=r.model,
        base_url=r.base_url,
        # local OpenAI-compatible servers (vLLM, llama.cpp, Ollama) accept any key
        api_key=r.api_key if r.api_key is not None else SecretStr("unused"),
        temperature=r.temperature,
        timeout=r.timeout,
        max_retries=r.max_retries,
    )


def _anthropic(r: ResolvedModel) -> BaseChatModel:
    if r.api_key is None:
        raise ModelConfigError("provider anthropic needs FORGEBOT_LLM__API_KEY")
    try:
        from langchain_anthropic import ChatAnthropic
    except ImportError as exc:
        raise ModelConfigError("provider anthropic needs `pip install langchain-anthropic`") from exc
    options: dict[str, Any] = {
        "model": r.model, "api_key": r.api_key, "temperature": r.temperature,
        "timeout": r.timeout, "max_retries": r.max_retries,
    }
    if r.base_url:
        options["base_url"] = r.base_url
    return ChatAnthropic(**options)


def _ollama(r: ResolvedModel) -> BaseChatModel:
    try:
        import httpx
        from langchain_ollama import ChatOllama
    except ImportError as exc:
        raise ModelConfigError("provider ollama needs `pip install langchain-ollama`") from exc
    # the ollama client has no retry option; httpx retries failed connections at the transport
    return ChatOllama(
        model=r.model,
        base_url=r.base_url,
        temperature=r.temperature,
        sync_client_kwargs={"timeout": r.timeout, "transport": httpx.HTTPTransport(retries=r.max_retries)},
        async_client_kwargs={"timeout": r.timeout, "transport": httpx.AsyncHTTPTransport(retries=r.max_retries)},
    )


_BUILDERS = {"openai": _openai, "anthropic": _anthropic, "ollama": _ollama}


def model_name(model: BaseChatModel) -> str:
    """The model's name for accounting and footers (the class name when it has none)."""
    for attr in ("model_name", "model"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__
