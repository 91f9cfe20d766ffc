"""Chat models per role, built from settings through LangChain."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from pydantic import SecretStr

from bot.settings import LLMSettings


class ModelConfigError(RuntimeError):
    """The configured provider cannot be built (missing package or key)."""


def chat_model(settings: LLMSettings, role: str) -> BaseChatModel:
    """Return the chat model for `role`: the default model with the role's overrides applied."""
    override = settings.roles.get(role)
    model = (override.model if override and override.model else None) or settings.model
    base_url = (override.base_url if override and override.base_url else None) or settings.base_url
    key = (override.api_key if override and override.api_key else None) or settings.api_key
    temperature = override.temperature if override and override.temperature is not None else settings.temperature
    if settings.provider != "openai":
        raise ModelConfigError(f"provider {settings.provider!r} is not available in this build")
    if key is None and base_url is None:
        raise ModelConfigError("FORGEBOT_LLM__API_KEY is not set (or set FORGEBOT_LLM__BASE_URL for a local endpoint)")
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=model,
        base_url=base_url,
        # local OpenAI-compatible servers (vLLM, llama.cpp, Ollama) accept any key
        api_key=key if key is not None else SecretStr("unused"),
        temperature=temperature,
        timeout=settings.timeout,
        max_retries=settings.max_retries,
    )
