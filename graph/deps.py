"""Deps: the clients a graph run needs, passed as LangGraph's runtime context (never checkpointed)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel

from bot.forge import Forge
from bot.settings import Settings


@dataclass
class Deps:
    settings: Settings
    forge: Forge
    model_for: Callable[[str], BaseChatModel]  # role name -> chat model
