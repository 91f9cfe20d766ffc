"""Deps: the clients a graph run needs, passed as LangGraph's runtime context (never checkpointed)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel

from foundation.forge import Forge
from foundation.settings import Settings
from graph.runtime.accounting import Ledger
from graph.runtime.journal import JournalStore


@dataclass
class Deps:
    settings: Settings
    forge: Forge
    model_for: Callable[[str], BaseChatModel]  # role name -> chat model
    # where tool-loop sessions are journaled (the checkpointer's database); None: they are not
    journal: JournalStore | None = None
    # the ledgers of roles whose node has not yet returned its state update (`RoleRun`): what a node that
    # fails has spent is in no checkpoint, so the failure's record adds them (`tasklimits.with_limits`)
    unsaved: list[Ledger] = field(default_factory=list)
    # what the task had spent when a node failed: the checkpointed spend and that node's (tokens, models,
    # usage; `tasklimits.spent_with`); empty while no node failed. A failed task's footer and listed tokens
    # said 0 though its roles had spent thousands before the failure. Filled in place: a run's copies of
    # its Deps (`dataclasses.replace`) share it, as they share `unsaved`.
    spent_at_failure: dict[str, Any] = field(default_factory=dict)
