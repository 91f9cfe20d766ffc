"""`search_code` kills a git grep that runs past its time limit and answers a tool error."""

from __future__ import annotations

from pathlib import Path

import pytest

from graph.runtime.tool_calls import run_tool
from graph.tools import code_search as search_module
from graph.tools.code import search_tools
from graph.tools.code_search import search_code
from tests.graph.index.searchrepo import make_repo


@pytest.fixture
def big_repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "checkout")
    # ~24 MB of untracked text: git grep needs far longer than the 1 ms limit below to read it.
    (repo / "big.txt").write_text(("a" * 79 + "\n") * 300_000)
    return repo


def test_a_grep_past_the_limit_is_a_tool_error(big_repo: Path) -> None:
    with pytest.raises(ValueError, match="timed out after 0.001s"):
        search_code(big_repo, r"(a|aa)*b", regex=True, timeout=0.001)
    # The same search without the tight limit completes (no match), so the limit is what failed it.
    assert search_code(big_repo, "needle-not-present") == []


async def test_the_agent_sees_an_error_not_a_crash(big_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_module, "GREP_TIMEOUT_SECONDS", 0.001)
    tools = search_tools(big_repo, None)
    outcome = await run_tool(big_repo, tools, "search_code", {"pattern": "aaaa"}, None)
    assert outcome.status == "error"
    assert "timed out" in outcome.text
