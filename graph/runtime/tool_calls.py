"""Running one tool call: which calls are reads, and how results and errors reach the model.

Results enter the conversation inside a `<tool_output>` boundary naming the tool, so repository
text and tool output stay marked as data. Errors the model can fix (bad arguments, rejected paths,
missing files) are tool errors; failures of the machinery (I/O, timeouts, a broken index database, a
failing `git grep`) are infrastructure errors, which the guard reports instead of letting the model
"fix" them.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import sqlean
from langchain_core.tools import BaseTool
from pydantic import ValidationError

import prompts
from graph.runtime.guard import Read, Verdict
from graph.runtime.injection import file_sha
from graph.runtime.trace import preview as _preview
from graph.tools.paths import PathRejected, relative

READ_TOOL_NAMES = frozenset({"read_file", "read_file_snippet"})
Status = Literal["ok", "error", "infra", "refused"]


@dataclass(frozen=True)
class ToolOutcome:
    text: str
    status: Status
    read: Read | None
    verdict: Verdict | None

    @property
    def preview(self) -> str:
        return _preview(self.text)


def _line(args: dict[str, Any], *names: str) -> int:
    for name in names:
        value = args.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


def read_of(root: Path, name: str, args: dict[str, Any]) -> Read | None:
    """The file range a read tool asks for, keyed by the file's current hash; None for other tools."""
    if name not in READ_TOOL_NAMES or not isinstance(args.get("path"), str):
        return None
    try:
        path = relative(root, args["path"])
    except PathRejected:
        return None  # the tool itself rejects it, with the reason
    start = max(1, _line(args, "start_line", "start"))
    return Read(path=path, start=start, end=_line(args, "end_line", "end"), sha=file_sha(root, path))


async def run_tool(root: Path, tools: dict[str, BaseTool], name: str, args: dict[str, Any],
                   read: Read | None) -> ToolOutcome:
    tool = tools.get(name)
    if tool is None:
        text = f"Unknown tool {name!r}; available: {', '.join(sorted(tools))}"
        return ToolOutcome(text, "error", read, None)
    try:
        result = await tool.ainvoke(args)
    except (PathRejected, ValueError, ValidationError, LookupError, FileNotFoundError,
            NotADirectoryError, IsADirectoryError, PermissionError) as exc:
        return ToolOutcome(prompts.boundary("tool_error", f"tool:{name}", str(exc)), "error", read, None)
    except (OSError, TimeoutError, RuntimeError, sqlite3.Error, sqlean.Error) as exc:
        return ToolOutcome(prompts.boundary("tool_error", f"tool:{name}", f"{type(exc).__name__}: {exc}"),
                           "infra", read, None)
    return ToolOutcome(prompts.boundary("tool_output", f"tool:{name}", str(result)), "ok", read, None)
