"""Investigation memory: pruning keeps call groups whole, tombstones them, warns on an empty scratchpad."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from graph.runtime.loop import invoke_llm_with_tools
from graph.runtime.scratchpad import Memory, Scratchpad, handoff_summary, prune, tool_groups
from tests.fakes.model_server import scripted
from tests.graph.runtime.conftest import make_session, tools
from tests.graph.runtime.script import call, calls, done, humans


def _history(groups: int) -> list[BaseMessage]:
    messages: list[BaseMessage] = [HumanMessage("task")]
    for g in range(groups):
        ai = calls(("search_code", {"q": f"a{g}"}), ("search_code", {"q": f"b{g}"}))
        messages.append(ai)
        messages += [ToolMessage(f"result {g}-{i} secret-content", tool_call_id=c["id"] or "") for i, c in
                     enumerate(ai.tool_calls)]
    return messages


def _assert_pairs_whole(messages: list[BaseMessage]) -> None:
    """Every tool response follows the AI message that asked for it, and every call has its response."""
    open_ids: set[str] = set()
    for msg in messages:
        if isinstance(msg, AIMessage):
            assert not open_ids, "a call lost its response"
            open_ids = {c["id"] or "" for c in msg.tool_calls}
        elif isinstance(msg, ToolMessage):
            assert msg.tool_call_id in open_ids, "a response lost its call"
            open_ids.discard(msg.tool_call_id)
    assert not open_ids


def test_prune_drops_whole_groups_and_leaves_one_tombstone_without_summary() -> None:
    pruned, removed = prune(_history(5), keep_groups=2)
    assert removed == 6 and len(tool_groups(pruned)) == 2
    _assert_pairs_whole(pruned)
    tombs = [h for h in humans(pruned) if "earlier tool calls" in h]
    assert len(tombs) == 1 and "6 earlier tool calls" in tombs[0] and "write_scratchpad" in tombs[0]
    assert "result 0-0" not in str([m.content for m in pruned])  # no summary of what was removed
    again, removed_again = prune([*pruned, *_history(3)[1:]], keep_groups=2)
    tombs = [h for h in humans(again) if "earlier tool calls" in h]
    assert removed_again == 6 and len(tombs) == 1 and "12 earlier tool calls" in tombs[0]
    _assert_pairs_whole(again)


def test_prune_rejects_keeping_nothing() -> None:
    with pytest.raises(ValueError, match="keep_groups"):
        prune(_history(2), keep_groups=0)


def test_empty_scratchpad_warns_once_before_pruning() -> None:
    memory = Memory(max_groups=3, keep_groups=2)
    warned, event = memory.before_call(_history(4))
    assert event == {"event": "empty_scratchpad_warning", "groups": 4}
    assert len(tool_groups(warned)) == 4 and "scratchpad is empty" in humans(warned)[-1]
    pruned, event = memory.before_call(warned)
    assert event is not None and event["event"] == "pruned" and len(tool_groups(pruned)) == 2


def test_notes_in_scratchpad_mean_no_warning() -> None:
    memory = Memory(max_groups=3, keep_groups=2)
    memory.scratchpad.write("fact", "Repo::find runs one query per id")
    _, event = memory.before_call(_history(4))
    assert event is not None and event["event"] == "pruned"


def test_scratchpad_validates_notes() -> None:
    pad = Scratchpad()
    with pytest.raises(ValueError, match="kind"):
        pad.write("summary", "x")
    with pytest.raises(ValueError, match="characters"):
        pad.write("fact", "   ")
    pad.write("path", "src/Repo.php:10-40")
    pad.write("path", "src/Repo.php:10-40")
    assert pad.as_dict()["path"] == ["src/Repo.php:10-40"]


async def test_loop_prunes_and_handoff_carries_notes_not_history(worktree: Path) -> None:
    memory = Memory(max_groups=2, keep_groups=1)
    script = [call("write_scratchpad", kind="fact", text="Small::one returns 1")]
    script += [call("read_file", path="src/Large.php", start_line=i * 40 + 1, end_line=i * 40 + 40) for i in range(4)]
    model = scripted([*script, done()])
    session = make_session(worktree, "analyzer", memory=memory)
    result = await invoke_llm_with_tools(
        model, [*tools(worktree), memory.scratchpad.tool()], [HumanMessage("go")], session
    )
    assert result.outcome == "finished"
    last = model.received[-1]
    _assert_pairs_whole(last)
    assert any("earlier tool calls" in h for h in humans(last))
    summary = handoff_summary([{"id": 1, "text": "one returns 1"}], memory, ["src/Small.php"], "finished")
    assert "1. one returns 1" in summary and "fact: Small::one returns 1" in summary
    assert "src/Large.php:1-160" in summary and "src/Small.php" in summary
    assert "return 3;" not in summary  # no tool output in the handoff


async def test_session_state_update_carries_memory_and_usage(worktree: Path) -> None:
    from graph.runtime.loop import state_update

    memory = Memory()
    model = scripted([call("write_scratchpad", kind="question", text="Is m1 public API?"), done()])
    session = make_session(worktree, "architect", memory=memory)
    result = await invoke_llm_with_tools(model, [*tools(worktree), memory.scratchpad.tool()], [], session)
    update = state_update(session, result)
    assert update["sessions"] == [{"role": "architect", "outcome": "finished", "calls": 1,
                                   "reason": "the model answered without tools"}]
    assert update["notes"]["question"] == ["Is m1 public API?"] and update["tokens"] == 100
    assert update["usage"]["roles"]["architect"]["calls"] == 2 and update["models"] == [model.model_name]
