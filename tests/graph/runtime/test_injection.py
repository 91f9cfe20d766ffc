"""Live injection: tiers, limits, refusal of re-reads, freshness after a patch, the one reminder."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import HumanMessage

from graph.runtime.injection import InjectionLimits, inject
from graph.runtime.loop import invoke_llm_with_tools
from tests.fakes.model_server import scripted
from tests.graph.runtime.conftest import make_session, tools, write_tool
from tests.graph.runtime.script import call, done, humans, system_text, tool_texts

LIMITS = InjectionLimits(max_files=4, full_max_bytes=1_000, total_max_bytes=8_000)


def test_small_file_in_full_large_as_outline_with_metrics(worktree: Path) -> None:
    injection = inject(worktree, ["src/Small.php", "src/Large.php", "src/New.php", "../etc/passwd"], LIMITS)
    tiers = {f.path: f.tier for f in injection.files}
    assert tiers == {"src/Small.php": "full", "src/Large.php": "outline", "src/New.php": "omitted",
                     "../etc/passwd": "omitted"}
    text = injection.render()
    assert "return 1;" in text  # the small file's body
    assert "public function m79(): int" in text and "return 79;" not in text  # outline: signatures only
    assert "src/New.php (does not exist yet)" in text
    metrics = injection.metrics()
    assert (metrics["full"], metrics["outline"], metrics["omitted"]) == (1, 1, 2)
    assert metrics["tokens"] > 0


def test_file_count_limit_omits_and_says_so(worktree: Path) -> None:
    injection = inject(worktree, ["src/Small.php", "src/Large.php"], InjectionLimits(max_files=1))
    assert [f.tier for f in injection.files] == ["full", "omitted"]
    assert "file-count limit" in injection.render()


async def test_reread_of_fully_injected_file_is_refused_outline_file_is_readable(worktree: Path) -> None:
    model = scripted([
        call("read_file", path="src/Small.php"),
        call("read_file", path="src/Large.php", start_line=20, end_line=24),
        done(),
    ])
    session = make_session(worktree, "analyzer", targets=["src/Small.php", "src/Large.php"])
    result = await invoke_llm_with_tools(model, tools(worktree), [HumanMessage("go")], session)
    refused, body = tool_texts(result.messages)
    assert "already in the system message in full" in refused and 'path="src/Small.php"' in refused
    assert "return 4;" in body  # a method body of the outlined file
    assert result.outcome == "finished"


async def test_one_current_reminder_before_each_call(worktree: Path) -> None:
    model = scripted([call("list_files"), call("list_files", directory="src"), done()])
    session = make_session(worktree, "reviewer", targets=["src/Small.php"])
    await invoke_llm_with_tools(model, tools(worktree), [HumanMessage("go")], session)
    for sent in model.received:
        reminders = [h for h in humans(sent) if h.startswith("Files already in context")]
        assert len(reminders) == 1
        assert isinstance(sent[-1], HumanMessage) and sent[-1].content == reminders[0]  # the last message


async def test_stale_read_after_patch_is_impossible_and_coder_system_refreshes(worktree: Path) -> None:
    patched: list[str] = []
    renders: list[int] = []

    def system() -> str:
        renders.append(1)
        return f"You are the coder. Render {len(renders)}."

    model = scripted([
        call("read_file", path="src/Small.php"),
        call("apply_patch", path="src/Small.php", old="return 1;", new="return 100;"),
        done(),
    ])
    session = make_session(worktree, "coder", targets=lambda: list(patched), system=system)
    patch = write_tool(worktree, on_patch=patched.append)
    await invoke_llm_with_tools(model, tools(worktree, patch), [HumanMessage("go")], session)
    first, second, third = model.received
    assert "Render 1." in system_text(first) and "Render 3." in system_text(third)  # refreshed every call
    assert "return 1;" in tool_texts(second)[0]
    last_read = tool_texts(third)[0]
    assert "return 1;" not in last_read and "changed on disk" in last_read  # the old text is gone
    assert "return 100;" in system_text(third)  # the current file, injected in full
    assert not any(h.startswith("Files already in context") for h in humans(third))  # no coder reminder
    kinds = [type(m).__name__ for m in third]
    assert kinds == ["SystemMessage", "HumanMessage", "AIMessage", "ToolMessage", "AIMessage", "ToolMessage"]


async def test_insisting_on_rereading_an_injected_file_ends_the_session(worktree: Path) -> None:
    model = scripted([call("read_file", path="src/Small.php", start_line=n) for n in range(1, 5)])
    session = make_session(worktree, "analyzer", targets=["src/Small.php"])
    result = await invoke_llm_with_tools(model, tools(worktree), [HumanMessage("go")], session)
    assert result.outcome == "synthesize" and result.calls == 4
    assert result.verdict is not None and "after repeated refusals" in result.verdict.detail
