"""A trace of a scripted run reads as the story of the run; `forgebot trace` prints it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from bot.cli import trace_cli
from graph.runtime.loop import invoke_llm_with_tools
from graph.runtime.scratchpad import Memory
from graph.runtime.trace import Trace, format_trace, read_trace, trace_path
from tests.fakes.model_server import scripted
from tests.graph.runtime.conftest import make_session, tools
from tests.graph.runtime.script import call, done


async def _scripted_run(data_dir: Path, worktree: Path) -> tuple[Trace, str]:
    trace = Trace.open(data_dir, "task-42")
    trace.node("decomposer", "analyzer", "2 acceptance criteria")
    memory = Memory()
    model = scripted([
        call("read_file", path="src/Small.php"),
        call("write_scratchpad", kind="fact", text="Large::m4 returns 4"),
        call("read_file", path="src/Large.php", start_line=20, end_line=60),
        call("read_file", path="src/Large.php", start_line=30, end_line=40),
        done("found it"),
    ])
    session = make_session(worktree, "analyzer", targets=["src/Small.php", "src/Large.php"], trace=trace,
                           memory=memory)
    await invoke_llm_with_tools(model, [*tools(worktree), memory.scratchpad.tool()], [HumanMessage("go")], session)
    trace.snapshot("analyzer", {"criteria": [1, 2], "analysis": {"summary": "x"}}, changed=["analysis"])
    trace.node("analyzer", "publisher", "analysis complete")
    return trace, model.model_name


async def test_trace_tells_the_story_in_order(tmp_path: Path, worktree: Path) -> None:
    trace, name = await _scripted_run(tmp_path, worktree)
    events = read_trace(trace.path)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "node" and kinds[-1] == "node" and "snapshot" in kinds
    model = next(e for e in events if e["kind"] == "model")
    assert model["injected"]["full"] == 1 and model["injected"]["outline"] == 1 and len(model["context_hash"]) == 12
    story = format_trace(events)
    expected = [
        "decomposer → analyzer: 2 acceptance criteria",
        f"[analyzer] model {name} call 1",
        "asks for read_file",
        "read_file(path=src/Small.php) ✗ refused: Not read again",
        "write_scratchpad(kind=fact, text=Large::m4 returns 4) → ",
        "read_file(path=src/Large.php, start_line=20, end_line=60) → ",
        "guard: redundant_read → refuse",
        "session ended: finished after 4 tool calls",
        "state after analyzer: 2 keys, wrote analysis",
        "analyzer → publisher: analysis complete",
    ]
    positions = [story.find(line) for line in expected]
    assert -1 not in positions, [line for line, p in zip(expected, positions, strict=True) if p == -1]
    assert positions == sorted(positions)


async def test_cli_prints_the_trace(tmp_path: Path, worktree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    await _scripted_run(tmp_path, worktree)
    parser = argparse.ArgumentParser()
    trace_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["trace", "task-42"])
    args.data_dir = tmp_path
    assert args.handler(args) == 0
    assert "analyzer → publisher: analysis complete" in capsys.readouterr().out
    raw = parser.parse_args(["trace", "task-42", "--json"])
    raw.data_dir = tmp_path
    assert raw.handler(raw) == 0
    assert all(json.loads(line)["task"] == "task-42" for line in capsys.readouterr().out.splitlines())
    missing = parser.parse_args(["trace", "nope"])
    missing.data_dir = tmp_path
    assert missing.handler(missing) == 1 and "no trace" in capsys.readouterr().err


def test_task_ids_cannot_escape_the_trace_directory(tmp_path: Path) -> None:
    for bad in ("../x", "a/b", "", ".hidden"):
        with pytest.raises(ValueError):
            trace_path(tmp_path, bad)


def test_the_start_of_an_id_names_its_one_task_or_the_several(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "traces").mkdir()
    for task in ("2205cfae097d68ef", "2205cf11aa22bb33", "35416f24bede440e"):
        (tmp_path / "traces" / f"{task}.jsonl").write_text("")
    parser = argparse.ArgumentParser()
    trace_cli.register(parser.add_subparsers(dest="command"))

    def trace(task: str) -> int:
        args = parser.parse_args(["trace", task])
        args.data_dir = tmp_path
        return int(args.handler(args))

    assert trace("35416f") == 0 and capsys.readouterr().err == ""
    assert trace("2205cf") == 1
    assert capsys.readouterr().err == ("forgebot trace: 2205cf is the start of 2 tasks: 2205cf11aa22bb33, "
                                       "2205cfae097d68ef\n")
    assert trace("35416") == 1 and "no trace" in capsys.readouterr().err  # five characters name nothing
