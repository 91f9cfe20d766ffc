"""finish_exploration validates the declared scope; synthesis sees the handoff, not the tool history."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import HumanMessage

from graph.runtime.accounting import Ledger
from graph.runtime.loop import invoke_llm_with_tools
from graph.runtime.scratchpad import Memory
from graph.runtime.synthesis import Declared, synthesize
from graph.runtime.trace import Trace, read_trace
from graph.schemas import Analysis
from tests.fakes.model_server import answer, scripted
from tests.graph.runtime.conftest import make_session, tools
from tests.graph.runtime.script import call, tool_texts


async def test_investigation_ends_through_finish_exploration_then_synthesis(worktree: Path) -> None:
    memory, declared = Memory(), Declared()
    model = scripted([
        call("read_file", path="src/Large.php", start_line=1, end_line=60),
        call("write_scratchpad", kind="path", text="src/Large.php:6-9 m1 returns 1"),
        call("finish_exploration", files=["src/Nope.php"], reason="found"),
        call("finish_exploration", files=["./src/Large.php"], reason="found m1"),
    ])
    trace = Trace.open(worktree.parent, "t-syn")
    session = make_session(worktree, "analyzer", memory=memory, trace=trace)
    result = await invoke_llm_with_tools(
        model, [*tools(worktree), memory.scratchpad.tool(), declared.tool(worktree)], [HumanMessage("go")], session
    )
    assert result.outcome == "finished" and result.reason == "finish_exploration accepted"
    assert "do not exist: src/Nope.php" in tool_texts(result.messages)[2]
    assert declared.files == ["src/Large.php"]

    synth = scripted([answer(Analysis, Analysis(summary="m1 returns 1", affected_files=["src/Large.php"]))])
    ledger = Ledger(token_budget=10_000)
    report, _ = await synthesize(
        synth, Analysis, role="analyzer", system="You are the analyzer.", criteria=[{"id": 1, "text": "m1"}],
        memory=memory, declared=declared.files, reason=result.reason, ledger=ledger, trace=trace,
    )
    assert report.summary == "m1 returns 1"
    (sent,) = synth.received
    assert len(sent) == 2  # system + handoff, no tool history
    handoff = str(sent[1].content)
    assert "src/Large.php:1-60" in handoff and "path: src/Large.php:6-9 m1 returns 1" in handoff
    assert "return 1;" not in handoff
    assert ledger.roles["analyzer"].calls == 1 and read_trace(trace.path)[-1]["kind"] == "synthesis"
