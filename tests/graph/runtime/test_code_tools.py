"""The index tools (code graph and search) plugged into the loop by name, on a real indexed checkout."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from graph.runtime.loop import invoke_llm_with_tools
from graph.tools import tools_for
from graph.tools.code import graph_tools, search_tools
from graph.tools.files import file_tools
from project.index import taskindex
from project.index.db import Connection, connect
from tests.fakes.embedder import HashingEmbedder
from tests.fakes.model_server import scripted
from tests.graph.index.searchrepo import make_repo
from tests.graph.runtime.conftest import make_session
from tests.graph.runtime.script import call, done, tool_texts

REPO = "src/User/UserRepository.php"


@pytest.fixture
def indexed(tmp_path: Path) -> Iterator[tuple[Path, Connection, HashingEmbedder]]:
    root = make_repo(tmp_path / "checkout")
    embedder = HashingEmbedder(dimension=16)
    taskindex.refresh(tmp_path / "index.db", root, embedder=embedder)
    conn = connect(tmp_path / "index.db")
    yield root, conn, embedder
    conn.close()


async def test_analyzer_uses_search_and_graph_tools(indexed: tuple[Path, Connection, HashingEmbedder]) -> None:
    root, conn, embedder = indexed
    available = {**file_tools(root), **search_tools(root, conn, embedder), **graph_tools(root, conn)}
    tools = tools_for("analyzer", available)
    assert {"semantic_search", "search_code", "read_file_snippet", "find_callers", "override_contract"} <= {
        t.name for t in tools}
    model = scripted([
        call("semantic_search", query="find user by id", k=2),
        call("search_code", pattern="2 ** $attempt"),
        call("find_definition", name="App\\User\\UserRepository::findById"),
        call("read_file_snippet", path=REPO, start_line=8, end_line=11),
        call("read_file_snippet", path="src/Http/RetryPolicy.php", start_line=1, end_line=5),
        done(),
    ])
    session = make_session(root, "analyzer", targets=["src/Http/RetryPolicy.php"])
    result = await invoke_llm_with_tools(model, tools, [HumanMessage("go")], session)
    semantic, grep, definition, snippet, refused = tool_texts(result.messages)
    assert f"{REPO}:" in semantic and "findById" in semantic
    assert "src/Http/RetryPolicy.php:20:" in grep
    payload = json.loads(definition.split("\n", 1)[1].rsplit("\n", 1)[0])  # inside the <tool_output> boundary
    assert payload["status"]["state"] != "missing"
    assert "public function findById" in snippet and f"{REPO}: lines 8-11 of 17" in snippet
    assert "already in the system message in full" in refused  # the injected file, via the snippet tool


def test_without_an_index_only_text_tools_are_offered(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "checkout")
    assert set(search_tools(root, None)) == {"search_code", "read_file_snippet"}


def test_search_memory_is_for_the_deciding_roles_and_says_when_an_index_has_no_memory(
    indexed: tuple[Path, Connection, HashingEmbedder],
) -> None:
    root, conn, embedder = indexed
    available = {**search_tools(root, conn, embedder), **graph_tools(root, conn)}
    for role in ("analyzer", "architect", "reviewer"):
        assert {"search_memory", "symbol_history"} <= {t.name for t in tools_for(role, available)}
    assert not {"search_memory", "symbol_history"} & {t.name for t in tools_for("coder", available)}
    answer = available["search_memory"].invoke({"query": "why retry with backoff"})
    assert answer == "no hits\n\nno project memory in this index (built before memory existed)"
    history = available["symbol_history"].invoke({"symbol": "RetryPolicy::delay"})
    assert history.startswith("# no project memory in this index")
