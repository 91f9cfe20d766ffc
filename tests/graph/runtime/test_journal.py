"""The session journal on the real SQLite checkpointer: a session killed mid-run continues at its next
call, a run that ended is replayed without a model call, a completed tool call never runs again, the
journal's identity is the node run (a later run of the node does not see it), it is JSON only, and
`run_or_resume` drops it once the graph run returns.

A worker's death is a `Killed` raised by the model or a tool (neither the model's retry policy nor
the tool runner knows it, so it ends the run): what the journal saved before stays, nothing after.
"""

from __future__ import annotations

import contextlib
import json
import pickle
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import StateGraph

from bot.tasks.checkpoints import SqlJournal, delete_checkpoints, open_checkpointer
from foundation.settings import Settings
from graph.deps import Deps
from graph.resume import run_or_resume
from graph.runtime.journal import SessionJournal, journal_here, load_messages
from graph.runtime.loop import Session, invoke_llm_with_tools
from graph.runtime.scratchpad import Memory
from tests.fakes.model_server import ScriptedModel, scripted
from tests.graph.runtime.conftest import make_session, tools

TASK = [HumanMessage("Which classes exist in src/?")]
USAGE = {"input_tokens": 40, "output_tokens": 10, "total_tokens": 50}


class Killed(Exception):
    """The worker dies here."""


class DyingModel(ScriptedModel):
    """Answers `lives` calls from the script, then the worker dies inside the next one (its request
    went out: the server saw it, past the end of the script)."""

    lives: int = 1_000

    async def _agenerate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        if len(self.received) >= self.lives:
            with contextlib.suppress(Exception):
                await super()._agenerate(messages, *args, **kwargs)
            raise Killed
        return await super()._agenerate(messages, *args, **kwargs)


def model(*replies: AIMessage, lives: int = 1_000) -> DyingModel:
    return scripted(list(replies), cls=DyingModel, lives=lives)


def calls(*named: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(content="", usage_metadata=USAGE,
                     tool_calls=[{"name": n, "args": a, "id": f"c{i}-{n}"} for i, (n, a) in enumerate(named)])


def done(text: str = "Small and Large.") -> AIMessage:
    return AIMessage(content=text, usage_metadata=USAGE)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqlJournal]:
    settings = Settings(_env_file=None, data_dir=tmp_path / "data")  # type: ignore[call-arg]
    async with open_checkpointer(settings) as saver:
        yield SqlJournal(saver)


def session(root: Path, store: SqlJournal, scope: str = "analyzer:1/analyzer") -> Session:
    made = make_session(root, "analyzer", memory=Memory())
    made.journal = SessionJournal(store, "task-1", scope)
    return made


def read(path: str) -> tuple[str, dict[str, Any]]:
    return "read_file", {"path": path}


async def test_a_killed_session_continues_at_its_next_call(worktree: Path, store: SqlJournal) -> None:
    first = model(calls(read("src/Small.php")), calls(read("src/Large.php")), lives=2)
    with pytest.raises(Killed):
        await invoke_llm_with_tools(first, tools(worktree), TASK, session(worktree, store))
    again = model(done())
    resumed = session(worktree, store)
    result = await invoke_llm_with_tools(again, tools(worktree), TASK, resumed)
    assert result.outcome == "finished" and result.final is not None and result.final.content == "Small and Large."
    (sent,) = again.received  # one model call: the two completed ones are not asked again
    assert sent == first.received[2]  # the same request the dead worker made
    assert [m.tool_call_id for m in sent if isinstance(m, ToolMessage)] == ["c0-read_file", "c0-read_file"]
    # the counters continue: two tool calls, three model calls (two before the kill, one after)
    assert resumed.calls == 2 and resumed.ledger.roles["analyzer"].calls == 3
    assert len(resumed.guard.history) == 2 and resumed.memory is not None
    assert sorted(resumed.memory.reads.ranges) == ["src/Large.php", "src/Small.php"]


async def test_a_run_that_ended_is_replayed_without_a_model_call(worktree: Path, store: SqlJournal) -> None:
    note = ("write_scratchpad", {"kind": "fact", "text": "Small::one returns 1"})
    first = session(worktree, store)
    assert first.memory is not None
    ended = await invoke_llm_with_tools(model(calls(note), done()), [*tools(worktree), first.memory.scratchpad.tool()],
                                        TASK, first)
    replay = session(worktree, store)
    assert replay.memory is not None
    silent = model()  # no script: any model call would fail
    result = await invoke_llm_with_tools(silent, [*tools(worktree), replay.memory.scratchpad.tool()], TASK, replay)
    assert silent.received == []
    assert (result.outcome, result.reason, result.calls) == (ended.outcome, ended.reason, ended.calls)
    assert result.final is not None and result.final.content == "Small and Large."
    assert replay.memory.scratchpad.notes == [("fact", "Small::one returns 1")]
    # the session's next run is a fresh one: it asks the model
    following = model(done("again"))
    after = await invoke_llm_with_tools(following, tools(worktree), TASK, replay)
    assert after.final is not None and after.final.content == "again" and len(following.received) == 1


async def test_a_completed_tool_call_never_runs_again(worktree: Path, store: SqlJournal) -> None:
    ran: list[str] = []

    def write_scratchpad(kind: str, text: str) -> str:
        """Record a note (the analyzer's tool by name: this one counts its runs)."""
        ran.append(text)
        if text == "second" and ran.count("second") == 1:
            raise Killed  # the worker dies while the reply's second call runs
        return "noted"

    tool: BaseTool = StructuredTool.from_function(write_scratchpad)
    reply = calls(*(("write_scratchpad", {"kind": "fact", "text": t}) for t in ("first", "second")))
    with pytest.raises(Killed):
        await invoke_llm_with_tools(model(reply), [*tools(worktree), tool], TASK, session(worktree, store))
    again = model(done())
    result = await invoke_llm_with_tools(again, [*tools(worktree), tool], TASK, session(worktree, store))
    assert result.outcome == "finished"
    assert ran == ["first", "second", "second"]  # the first call once; the one in flight ran again
    answers = [m.tool_call_id for m in again.received[0] if isinstance(m, ToolMessage)]
    assert answers == ["c0-write_scratchpad", "c1-write_scratchpad"]  # each call id answered exactly once


class _State(TypedDict, total=False):
    n: int
    scopes: list[str]


async def test_the_journal_belongs_to_one_run_of_its_node_and_is_dropped_once_the_graph_returns(
    tmp_path: Path,
) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path / "data")  # type: ignore[call-arg]
    seen: list[str] = []
    fail = [True]

    async def work(state: _State) -> dict[str, Any]:
        journal = journal_here(journal_store, "coder")
        assert journal is not None
        seen.append(journal.scope)
        await journal_store.put(journal.thread, journal.scope, json.dumps({"n": state.get("n")}))
        if fail[0]:
            fail[0] = False
            raise RuntimeError("the worker dies inside the node")
        return {"n": int(state.get("n") or 0) + 1}

    builder = StateGraph(_State)
    builder.add_node("work", work)
    builder.set_entry_point("work")
    builder.set_finish_point("work")
    config: RunnableConfig = {"configurable": {"thread_id": "t1"}}
    async with open_checkpointer(settings) as saver:
        journal_store = SqlJournal(saver)
        compiled: Any = builder.compile(checkpointer=saver)
        deps = Deps(settings=settings, forge=None, model_for=lambda role: None, journal=journal_store)  # type: ignore[arg-type,return-value]

        async def start() -> Any:
            return {"n": 0}

        with pytest.raises(RuntimeError):
            await run_or_resume(compiled, config, start, deps)
        assert await journal_store.get("t1", seen[0]) is not None  # kept for the resumed run
        assert dict(await run_or_resume(compiled, config, start, deps))["n"] == 1  # the retried job
        assert seen[1] == seen[0]  # the same node run, so the same journal
        assert await journal_store.get("t1", seen[0]) is None  # the run returned: dropped
        await compiled.ainvoke({"n": 5}, config)  # a later run of the node: a journal of its own
        assert seen[2] != seen[0] and seen[2].startswith("work:")


async def test_the_journal_is_json_and_restores_nothing_else(worktree: Path, store: SqlJournal) -> None:
    first = session(worktree, store)
    with pytest.raises(Killed):
        await invoke_llm_with_tools(model(calls(read("src/Small.php")), lives=1), tools(worktree), TASK, first)
    raw = await store.get("task-1", "analyzer:1/analyzer")
    assert raw is not None and json.loads(raw)["open"]["history"][-1]["type"] == "tool"
    # a message of another kind (LangChain would build it) is refused, as is a pickle in the row
    with pytest.raises(ValueError, match="human, ai, tool and system"):
        load_messages([{"type": "remove", "data": {"id": "x"}}])
    await store.put("task-1", "analyzer:1/analyzer", pickle.dumps({"version": 1}).decode("latin-1"))
    with pytest.raises(ValueError):
        await invoke_llm_with_tools(model(done()), tools(worktree), TASK, session(worktree, store))


async def test_retention_drops_a_failed_tasks_journal(tmp_path: Path, worktree: Path) -> None:
    """A task whose run never returned keeps its journal until retention deletes the thread."""
    settings = Settings(_env_file=None, data_dir=tmp_path / "data")  # type: ignore[call-arg]
    async with open_checkpointer(settings) as saver:
        await saver.setup()  # type: ignore[attr-defined]  # the checkpoint tables (the task's run made them)
        with pytest.raises(Killed):
            await invoke_llm_with_tools(model(lives=0), tools(worktree), TASK, session(worktree, SqlJournal(saver)))
        await SqlJournal(saver).put("other-task", "n:1/coder", "{}")
    assert await delete_checkpoints(settings, ["task-1"]) == 1
    async with open_checkpointer(settings) as saver:
        kept = SqlJournal(saver)
        assert await kept.get("task-1", "analyzer:1/analyzer") is None
        assert await kept.get("other-task", "n:1/coder") == "{}"
