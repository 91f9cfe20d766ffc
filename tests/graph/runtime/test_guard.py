"""ToolLoopGuard: each rule fires against an unchanged disk and stays quiet after a disk change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool, StructuredTool

from graph.runtime.guard import Action, Cause, Read, ToolLoopGuard
from graph.runtime.loop import invoke_llm_with_tools
from graph.tools.paths import resolve_in_worktree
from tests.fakes.model_server import scripted
from tests.graph.runtime.conftest import make_session, tools, write_tool
from tests.graph.runtime.script import call, tool_texts

Q = {"query": "retry"}


def _run(guard: ToolLoopGuard, name: str, args: dict[str, Any], disk: str, read: Read | None = None) -> object:
    verdict = guard.check(name, args, disk, read)
    if verdict is None:
        guard.record(name, args, disk, read=read)
    return verdict


@pytest.mark.parametrize(("role", "terminal"), [
    ("analyzer", Action.SYNTHESIZE), ("architect", Action.SYNTHESIZE),
    ("reviewer", Action.REPORT), ("coder", Action.STOP_LOOPING),
])
def test_repeat_is_refused_once_then_ends_the_way_the_role_should(role: str, terminal: Action) -> None:
    guard = ToolLoopGuard(role)
    assert _run(guard, "search_code", Q, "d1") is None
    assert _run(guard, "search_code", Q, "d1") is None
    first = guard.check("search_code", Q, "d1")
    assert first is not None and (first.cause, first.action) == (Cause.REPEAT, Action.REFUSE)
    second = guard.check("search_code", Q, "d1")
    assert second is not None and second.action == terminal


def test_repeat_after_disk_change_is_a_new_attempt() -> None:
    guard = ToolLoopGuard("coder")
    for disk in ("d1", "d1", "d2", "d2", "d3"):
        assert _run(guard, "search_code", Q, disk) is None


def test_alternating_sequence_fires_and_not_across_disk_changes() -> None:
    guard = ToolLoopGuard("analyzer")
    a, b = ("search_code", {"query": "a"}), ("search_code", {"query": "b"})
    c = ("read_file", {"path": "x"})
    for name, args in (a, b, a):
        assert _run(guard, name, args, "d1") is None
    verdict = guard.check(*b, "d1")  # A B A B: two cycles
    assert verdict is not None and (verdict.cause, verdict.action) == (Cause.ALTERNATING, Action.REFUSE)
    triple = ToolLoopGuard("analyzer")
    for name, args in (a, b, c, a, b):
        assert _run(triple, name, args, "d1") is None
    verdict = triple.check(*c, "d1")
    assert verdict is not None and verdict.cause == Cause.ALTERNATING
    fresh = ToolLoopGuard("analyzer")
    for i, (name, args) in enumerate((a, b, a, b, a, b)):
        assert _run(fresh, name, args, f"d{i // 2}") is None


def test_identical_errors_end_the_session_but_not_across_patches() -> None:
    guard = ToolLoopGuard("coder")
    assert guard.record("complete_item", {"id": 1}, "d1", error="lint failed") is None
    assert guard.record("complete_item", {"id": 1}, "d1", error="lint failed") is None
    verdict = guard.record("complete_item", {"id": 1}, "d1", error="lint failed")
    assert verdict is not None and (verdict.cause, verdict.action) == (Cause.SAME_ERROR, Action.STOP_LOOPING)
    other = ToolLoopGuard("coder")
    for disk in ("d1", "d2", "d3", "d4"):
        assert other.record("complete_item", {"id": 1}, disk, error="lint failed") is None


def test_infrastructure_failure_is_reported_not_retried() -> None:
    verdict = ToolLoopGuard("analyzer").record("semantic_search", Q, "d1", error="database locked",
                                               infrastructure=True)
    assert verdict is not None and (verdict.cause, verdict.action) == (Cause.INFRASTRUCTURE, Action.REPORT)


def test_redundant_read_fires_until_the_file_changes() -> None:
    guard = ToolLoopGuard("reviewer")
    assert _run(guard, "read_file", {"p": 1}, "d", Read("a.php", 1, 100, "s1")) is None
    verdict = guard.check("read_file", {"p": 2}, "d", Read("a.php", 10, 20, "s1"))
    assert verdict is not None and (verdict.cause, verdict.action) == (Cause.REDUNDANT_READ, Action.REFUSE)
    assert guard.check("read_file", {"p": 2}, "d", Read("a.php", 10, 20, "s2")) is None
    assert guard.check("read_file", {"p": 3}, "d", Read("a.php", 90, 120, "s1")) is None


def test_sequential_micro_reads_fire_until_the_file_changes() -> None:
    guard = ToolLoopGuard("analyzer")
    for i in range(3):
        assert _run(guard, "read_file", {"s": i}, "d", Read("a.php", i * 10 + 1, i * 10 + 10, "s1")) is None
    verdict = guard.check("read_file", {"s": 3}, "d", Read("a.php", 31, 40, "s1"))
    assert verdict is not None and verdict.cause == Cause.MICRO_READS
    assert guard.check("read_file", {"s": 3}, "d", Read("a.php", 31, 40, "s2")) is None
    assert guard.check("read_file", {"s": 3}, "d", Read("a.php", 31, 100, "s1")) is None


def test_unknown_role_has_no_guard() -> None:
    with pytest.raises(ValueError, match="no tool loop"):
        ToolLoopGuard("publisher")


def _complete_item(root: Path) -> BaseTool:
    def complete_item(id: int, note: str = "") -> str:
        """Close a checklist item (fails until the fix is on disk)."""
        if "return 100;" not in resolve_in_worktree(root, "src/Small.php").read_text():
            raise ValueError("item 1: the test still fails")
        return "closed"

    return StructuredTool.from_function(complete_item)


async def test_coder_same_failure_on_unchanged_disk_stops_as_looping(worktree: Path) -> None:
    model = scripted([call("complete_item", id=1, note=f"attempt {i}") for i in range(3)])
    session = make_session(worktree, "coder")
    result = await invoke_llm_with_tools(model, tools(worktree, _complete_item(worktree)),
                                         [HumanMessage("go")], session)
    assert result.outcome == "looping" and result.verdict is not None
    assert result.verdict.cause == Cause.SAME_ERROR


async def test_coder_retry_after_patch_is_not_a_repeat(worktree: Path) -> None:
    model = scripted([
        call("complete_item", id=1), call("apply_patch", path="src/Small.php", old="return 1;", new="return 2;"),
        call("complete_item", id=1), call("apply_patch", path="src/Small.php", old="return 2;", new="return 3;"),
        call("complete_item", id=1), call("apply_patch", path="src/Small.php", old="return 3;", new="return 100;"),
        call("complete_item", id=1),
    ])
    session = make_session(worktree, "coder")
    session.finish_tools = frozenset({"complete_item"})
    result = await invoke_llm_with_tools(
        model, tools(worktree, write_tool(worktree), _complete_item(worktree)), [HumanMessage("go")], session
    )
    assert result.outcome == "finished", result.reason
    assert "closed" in tool_texts(result.messages)[-1]
