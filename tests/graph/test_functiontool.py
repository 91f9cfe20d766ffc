"""`function_tool`: a closure made again per run gets the tool a fresh `from_function` would give,
with its own body and defaults, while the argument schema is derived once."""

from __future__ import annotations

from collections.abc import Callable

from langchain_core.tools import StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from graph.tools.functiontool import function_tool


def _closure(root: str, limit: int = 10) -> Callable[..., str]:
    def search_code(query: str, k: int = limit) -> str:
        """Search the checkout's code for `query`.

        Args:
            query: words or a symbol
        """
        return f"{root}:{query}:{k}"

    return search_code


def test_a_later_closure_reuses_the_schema_and_keeps_its_own_body() -> None:
    first, second = function_tool(_closure("a")), function_tool(_closure("b"))
    assert second.args_schema is first.args_schema  # derived once
    fresh = StructuredTool.from_function(_closure("b"))
    assert convert_to_openai_tool(second) == convert_to_openai_tool(fresh)  # what the model is shown
    assert (first.invoke({"query": "q"}), second.invoke({"query": "q"})) == ("a:q:10", "b:q:10")


def test_other_defaults_get_their_own_schema() -> None:
    tool = function_tool(_closure("a", limit=3))
    assert tool.args["k"]["default"] == 3
    assert tool.invoke({"query": "q"}) == "a:q:3"
    assert function_tool(_closure("a")).args["k"]["default"] == 10
