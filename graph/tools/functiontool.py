"""Tools made from functions, each function's argument schema built once per process.

The roles make their tools as closures over the task's checkout, indexes and checklist: a new
function object per run. `StructuredTool.from_function` derives a pydantic model from the
signature and docstring every time, ~1.3 ms a tool (measured), and a task makes hundreds of tools
over its roles and loops. That model depends only on the function's source and defaults, so it is
built once per code object and defaults and given to the later tools as their `args_schema`.
"""

from __future__ import annotations

from collections.abc import Callable
from types import CodeType
from typing import Any

from langchain_core.tools import StructuredTool

_SCHEMAS: dict[tuple[CodeType, str, str], Any] = {}


def function_tool(fn: Callable[..., Any]) -> StructuredTool:
    """`StructuredTool.from_function(fn)`, with the argument schema of an earlier closure of the
    same source and defaults when there was one."""
    key = (fn.__code__, repr(fn.__defaults__), repr(fn.__kwdefaults__))
    schema = _SCHEMAS.get(key)
    if schema is None:
        tool = StructuredTool.from_function(fn)
        _SCHEMAS[key] = tool.args_schema
        return tool
    return StructuredTool.from_function(fn, args_schema=schema)
