"""The session journal: a tool-loop session's progress, saved after every model reply and tool call.

LangGraph checkpoints a task after each node; the tool loop runs inside one node, so without this a
worker killed mid-session would replay the session from its start and ask the model every completed
call again. The journal keeps, per session, what the loop needs to continue where it stopped: the
history of the current `invoke_llm_with_tools` run, the session's counters, guard, ledger and memory,
the role's own state (the coder's checklist) and the result of every run that already ended.

Identity: the task's thread, the node run's checkpoint namespace (LangGraph derives it from the
checkpoint the node started from, its step and its name, so a resumed run gets the same one and a
later run of the same node a new one) and the role. `graph.resume.run_or_resume` drops a thread's
journal once its graph run returns; retention drops it with the thread's checkpoints.

A resumed node runs its code again and each `invoke_llm_with_tools` call takes, in order: the
recorded result of a run that ended (state restored as it was then, no model call), the open run
(state and history restored, continuing at the next model call or the next unanswered tool call),
or a fresh run. A tool call that was in flight when the worker died has no recorded result and runs
again; a completed one never does. The journal holds model output: it is JSON, stored in the
checkpointer's database (`bot.tasks.checkpoints.SqlJournal`), and restoring it constructs messages of the
four kinds the loop uses and plain counters — nothing is executed or imported by name.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from langchain_core.messages import BaseMessage, messages_from_dict, messages_to_dict
from langgraph.config import get_config

from graph.runtime.accounting import Ledger, RoleUsage
from graph.runtime.guard import Read, ToolLoopGuard
from graph.runtime.scratchpad import Memory

VERSION = 1
_KINDS = frozenset({"human", "ai", "tool", "system"})  # the message kinds a loop's history holds


class JournalStore(Protocol):
    """Where journals live: one JSON document per (thread, session scope)."""

    async def get(self, thread: str, scope: str) -> str | None: ...

    async def put(self, thread: str, scope: str, doc: str) -> None: ...

    async def drop(self, thread: str) -> None: ...


class Kept(Protocol):
    """A role's own session state that tool calls change (the coder's checklist), saved with the session."""

    def snapshot(self) -> dict[str, Any]: ...

    def restore(self, doc: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class Entry:
    """What the next `invoke_llm_with_tools` run of a resumed session takes from the journal."""

    kind: Literal["ended", "open"]
    state: dict[str, Any]  # the session's state (`Session.snapshot`) at that point
    body: dict[str, Any]  # ended: the loop's result; open: its history and the end already decided


@dataclass
class SessionJournal:
    """One session's journal, loaded on its first run and written whole after every step."""

    store: JournalStore
    thread: str
    scope: str
    _doc: dict[str, Any] | None = None
    _runs: int = 0  # `invoke_llm_with_tools` runs of this session in this process
    _ended: list[dict[str, Any]] = field(default_factory=list)

    async def next_run(self) -> Entry | None:
        """The recorded run this run replays or continues; None for a fresh run."""
        if self._doc is None:
            raw = await self.store.get(self.thread, self.scope)
            self._doc = _parse(raw) if raw else {"version": VERSION, "ended": [], "open": None}
        index, self._runs = self._runs, self._runs + 1
        ended = self._doc["ended"]
        if index < len(ended):
            return Entry("ended", ended[index]["state"], ended[index]["result"])
        self._doc["ended"] = ended[:index]  # nothing recorded beyond the run being continued
        opened = self._doc.get("open") if index == len(ended) else None
        self._doc["open"] = None
        return Entry("open", opened["state"], opened) if opened else None

    async def save_open(self, state: dict[str, Any], history: Sequence[BaseMessage], *, shrunk: bool,
                        stop: dict[str, Any] | None) -> None:
        """After a model reply or a tool call: the running loop's history (it ends with that reply and
        the answers to its calls so far), the session's state, and the end a call already decided."""
        doc = self._loaded()
        doc["open"] = {"state": state, "history": dump_messages(history), "shrunk": shrunk, "stop": stop}
        await self.store.put(self.thread, self.scope, json.dumps(doc))

    async def save_ended(self, state: dict[str, Any], result: dict[str, Any]) -> None:
        """The run ended: its result, replayed as it is when the node runs again."""
        doc = self._loaded()
        doc["ended"].append({"state": state, "result": result})
        doc["open"] = None
        await self.store.put(self.thread, self.scope, json.dumps(doc))

    def _loaded(self) -> dict[str, Any]:
        if self._doc is None:
            raise RuntimeError("the journal is written only by a run that read it first")
        return self._doc


def journal_here(store: JournalStore | None, role: str) -> SessionJournal | None:
    """The journal of `role`'s session in the graph node running now; None outside a checkpointed run."""
    if store is None:
        return None
    try:
        configurable = get_config().get("configurable", {})
    except RuntimeError:  # not inside a graph run (a node called directly)
        return None
    thread, namespace = configurable.get("thread_id"), configurable.get("checkpoint_ns")
    if not thread or not namespace:
        return None
    return SessionJournal(store, str(thread), f"{namespace}/{role}")


def _parse(raw: str) -> dict[str, Any]:
    doc = json.loads(raw)
    if not isinstance(doc, dict) or doc.get("version") != VERSION or not isinstance(doc.get("ended"), list):
        raise ValueError("not a session journal this version writes")
    return doc


# --- the pieces of a session's state, as JSON -----------------------------------------------------

def dump_messages(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    return messages_to_dict(list(messages))


def load_messages(raw: Any) -> list[BaseMessage]:
    """Messages of the kinds a loop's history holds; anything else in the journal is refused."""
    if not isinstance(raw, list) or not all(isinstance(m, dict) and m.get("type") in _KINDS for m in raw):
        raise ValueError("a journal's history holds human, ai, tool and system messages only")
    return messages_from_dict(raw)


def dump_ledger(ledger: Ledger) -> dict[str, Any]:
    return {"roles": {r: [u.calls, u.input_tokens, u.output_tokens, u.cost_usd] for r, u in ledger.roles.items()},
            "unpriced": sorted(ledger.unpriced), "models": list(ledger.models)}


def load_ledger(ledger: Ledger, doc: dict[str, Any]) -> None:
    """The ledger's counts as saved; its budgets stay those the node computed from the task's state."""
    roles = doc["roles"].items()
    ledger.roles = {str(r): RoleUsage(int(c), int(i), int(o), float(cost)) for r, (c, i, o, cost) in roles}
    ledger.unpriced = {str(m) for m in doc["unpriced"]}
    ledger.models = [str(m) for m in doc["models"]]


def dump_guard(guard: ToolLoopGuard) -> dict[str, Any]:
    return {"history": [list(h) for h in guard.history],
            "reads": [[r.path, r.start, r.end, r.sha] for r in guard.reads],
            "errors": [[*key, count] for key, count in guard.errors.items()],
            "strikes": guard.strikes, "repeat_refused": guard.repeat_refused}


def load_guard(guard: ToolLoopGuard, doc: dict[str, Any]) -> None:
    guard.history = [(str(s), str(d)) for s, d in doc["history"]]
    guard.reads = [Read(str(p), int(s), int(e), str(sha)) for p, s, e, sha in doc["reads"]]
    guard.errors = Counter({(str(n), str(e), str(d)): int(c) for n, e, d, c in doc["errors"]})
    guard.strikes, guard.repeat_refused = int(doc["strikes"]), bool(doc["repeat_refused"])


def dump_memory(memory: Memory) -> dict[str, Any]:
    return {"notes": [list(n) for n in memory.scratchpad.notes], "warned": memory.warned,
            "reads": {p: [list(s) for s in spans] for p, spans in memory.reads.ranges.items()}}


def load_memory(memory: Memory, doc: dict[str, Any]) -> None:
    """In place: the role's scratchpad tool holds this scratchpad."""
    memory.scratchpad.notes = [(kind, str(text)) for kind, text in doc["notes"] if kind in ("fact", "path", "question")]
    memory.reads.ranges = {str(p): [(int(s), int(e)) for s, e in spans] for p, spans in doc["reads"].items()}
    memory.warned = bool(doc["warned"])
