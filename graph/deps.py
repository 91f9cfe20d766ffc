"""Deps: the clients a graph run needs, passed as LangGraph's runtime context (never checkpointed)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel

from foundation.forge import Forge
from foundation.settings import Settings
from graph.runtime.journal import JournalStore


@dataclass
class Deps:
    settings: Settings
    forge: Forge
    model_for: Callable[[str], BaseChatModel]  # role name -> chat model
    # where tool-loop sessions are journaled (the checkpointer's database); None: they are not
    journal: JournalStore | None = None
