"""RoleRun: the one set-up every model-using role goes through, tool loop or single answer.

Each role used to build its own session: its own ledger (some without prices, the reviewer from the
full task budget), its own trace (or none), its own way of adding tokens to the state. Here a node
opens one `RoleRun` for its role and gets, in one place:

* the role's model (`Deps.model_for`);
* a ledger priced from `LLMSettings.prices` and bounded by what the task has *left* of its token
  and cost budgets (`graph.runtime.tasklimits`), so a late role cannot spend the whole budget again;
* the task's trace, which records every model call, tool call, session end and structured answer;
* one state update (`update`) whose `tokens`, `models` and `usage` are all this ledger's figures,
  so the footer's tokens and cost are the per-role sum by construction (`usage` has a reducer);
* the session's journal (`graph.runtime.journal`) when the run has one (`Deps.journal`), so a
  killed worker's session continues at its last completed call.

Tool-loop roles call `session(...)` then `loop(...)` and `conclude(...)` (the code-built handoff
synthesis); single-answer roles call `ask(...)`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.tools import BaseTool
from pydantic import BaseModel

from foundation.settings import LLMSettings
from graph.deps import Deps
from graph.runtime.accounting import Ledger
from graph.runtime.journal import Kept, SessionJournal, journal_here
from graph.runtime.loop import LoopResult, Session, invoke_llm_with_tools, state_update
from graph.runtime.scratchpad import Memory
from graph.runtime.synthesis import record_structured, synthesize
from graph.runtime.tasklimits import limits_of
from graph.runtime.trace import Trace
from graph.runtime.window import Window
from graph.state import CriterionDump, TaskState
from graph.structured import Settle, ask_structured

T = TypeVar("T", bound=BaseModel)


@dataclass
class RoleRun:
    """One role's model use inside one node."""

    role: str
    model: BaseChatModel
    ledger: Ledger
    trace: Trace
    journal: SessionJournal | None = None
    window: Window = field(default_factory=lambda: Window.of(LLMSettings()))
    unsaved: list[Ledger] = field(default_factory=list)  # `Deps.unsaved`: this ledger is in it until `update`
    _session: Session | None = None
    _result: LoopResult | None = None

    @classmethod
    def open(cls, role: str, state: TaskState, deps: Deps) -> RoleRun:
        settings = deps.settings
        limits = limits_of(state, settings)
        tokens_left = max(1, limits.max_tokens - int(state.get("tokens", 0)))
        cost_left = None
        if limits.max_cost_usd is not None:
            cost_left = max(0.0, limits.max_cost_usd - float(state.get("usage", {}).get("cost_usd", 0.0)))
        ledger = Ledger(token_budget=tokens_left, prices=settings.llm.prices, cost_budget=cost_left)
        deps.unsaved.append(ledger)
        return cls(role=role, model=deps.model_for(role), ledger=ledger,
                   trace=Trace.open(settings.data_dir, state["task_id"]), journal=journal_here(deps.journal, role),
                   window=Window.of(settings.llm), unsaved=deps.unsaved)

    def session(
        self, *, root: Path, system: Callable[[], str], targets: Callable[[], Sequence[str]], max_calls: int,
        memory: Memory | None = None, finish_tools: frozenset[str] | None = None, kept: Kept | None = None,
    ) -> Session:
        """The role's tool-loop session, on this run's ledger, trace and journal; `kept` is the role's own
        state its tools change (saved and restored with the session)."""
        extra: dict[str, Any] = {} if finish_tools is None else {"finish_tools": finish_tools}
        self._session = Session(role=self.role, root=root, system=system, targets=targets, max_calls=max_calls,
                                ledger=self.ledger, trace=self.trace, memory=memory, journal=self.journal,
                                kept=kept, window=self.window, **extra)
        return self._session

    async def loop(self, tools: Sequence[BaseTool], messages: Sequence[BaseMessage]) -> LoopResult:
        """One `invoke_llm_with_tools` run of the session (the coder runs several per session)."""
        if self._session is None:
            raise RuntimeError(f"{self.role}: open a session before running the tool loop")
        self._result = await invoke_llm_with_tools(self.model, tools, messages, self._session)
        return self._result

    async def conclude(
        self, schema: type[T], *, system: str, criteria: Sequence[CriterionDump], memory: Memory,
        result: LoopResult, declared: Sequence[str] = (), task: Sequence[BaseMessage] = (),
        settle: Settle[T] | None = None,
    ) -> T:
        """The structured answer after the loop, from the code-built handoff (never the tool history);
        `settle` turns an answer that still breaks a code-checked rule after the repair turn into the
        honest one (see `ask_structured`)."""
        answer, _ = await synthesize(
            self.model, schema, role=self.role, system=system, criteria=criteria, memory=memory,
            declared=declared, reason=result.reason, ledger=self.ledger, trace=self.trace, notice=result.notice,
            task=task, window=self.window, settle=settle,
        )
        return answer

    async def ask(self, schema: type[T], messages: list[BaseMessage], settle: Settle[T] | None = None) -> T:
        """A single structured answer (decomposer, planner), counted and traced like a loop's calls."""
        answer, usage = await ask_structured(self.model, schema, messages, window=self.window, settle=settle,
                                             trace=self.trace)
        name = record_structured(self.ledger, self.role, usage)
        self.trace.event("answer", role=self.role, model=name, schema=schema.__name__,
                         input_tokens=usage.get("input_tokens", 0), output_tokens=usage.get("output_tokens", 0),
                         estimated_tokens=usage.get("estimated_tokens", 0), window=self.window.tokens,
                         output_cap=self.window.output)
        return answer

    def update(self) -> dict[str, Any]:
        """The state update for everything this run spent: tokens, models, usage (and the session's record)."""
        update: dict[str, Any] = {}
        if self._session is not None and self._result is not None:
            update = state_update(self._session, self._result)
        self.unsaved[:] = [ledger for ledger in self.unsaved if ledger is not self.ledger]  # in the state now
        update.update({
            "tokens": self.ledger.tokens,
            "models": list(dict.fromkeys(self.ledger.models)),
            "usage": self.ledger.snapshot(),
        })
        return update
