"""The coder's tools, bound to one session's Checklist: patches, item closing, plan adaptation, finish.

Every decision (plan update, wider scope, blocker, already_done) is appended to the checklist's
decisions, which the route keeps in state and hands to the reviewer and the change description.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from langchain_core.tools import BaseTool, StructuredTool

from graph.coder import patch as patching
from graph.coder.checklist import Checklist, ItemRejected, check_evidence
from graph.schemas import ChecklistItem
from graph.tools.files import file_tools
from graph.tools.functiontool import function_tool
from graph.tools.paths import resolve_in_worktree

FINISH_TOOLS = frozenset({"complete_item", "finish", "report_plan_blocker"})
READS = frozenset({"read_file", "read_file_snippet", "get_file_outline"})


def coder_tools(checklist: Checklist, protected: patching.PatchPolicy,
                read_tools: Mapping[str, BaseTool] | None = None,
                on_patch: Callable[[list[str]], None] | None = None) -> dict[str, BaseTool]:
    """The coder's tool set: file tools (plus `read_tools`: search, code graph) and the write tools.

    `on_patch` runs after every accepted patch with its paths (the task index's delta sync, so a
    search right after a patch finds the new code). Reads are recorded for the progress summary.
    """
    root = checklist.root
    tools = {**file_tools(root), **(read_tools or {})}
    for name in READS & set(tools):
        tools[name] = _recording(tools[name], checklist)

    def apply_patch(patch: str) -> str:
        """Apply a unified diff (--- a/path, +++ b/path) to files in the write scope."""
        paths = patching.apply(root, patch, protected)
        if on_patch is not None:
            on_patch(list(paths))
        return f"Applied to {', '.join(paths)}. The files' current text is in the system message."

    def complete_item(item_id: int, note: str = "", report: str = "", already_done: str = "") -> str:
        """Close a checklist item: checks the change since it began, lints it and commits it."""
        return checklist.complete(item_id, note, report=report, already_done=already_done)

    def finish() -> str:
        """End the session; allowed only when no item is open and the worktree is clean."""
        return checklist.finish()

    def update_plan(action: Literal["add", "drop", "reorder"], reason: str, item_id: int = 0,
                    title: str = "", paths: list[str] | None = None, criteria: list[int] | None = None,
                    order: list[int] | None = None) -> str:
        """Add, drop or reorder open checklist items, with the reason."""
        return _update_plan(checklist, action, reason, item_id, title, paths or [], criteria or [], order or [])

    def request_file(path: str, reason: str) -> str:
        """Ask for a file outside the write scope (an existing file, or a new one) with the reason."""
        resolve_in_worktree(root, path)
        try:
            path = patching.canonical(patching.unquote(path))
        except patching.PatchRefused as exc:
            raise ItemRejected(f"{exc}; not added to the scope") from exc
        problem = patching.check_path(root, path)
        if problem or protected.protected(path):
            raise ItemRejected(f"{path}: {problem or 'a protected path'}; not added to the scope")
        checklist.widen(path)
        checklist.decisions.append({"kind": "request_file", "path": path, "reason": reason})
        return f"{path} is now writable."

    def report_plan_blocker(item_id: int, evidence: str, reason: str) -> str:
        """Report that an item rests on a false premise, with path:line evidence from the source."""
        checklist.item(item_id)
        check_evidence(root, evidence)
        checklist.decisions.append({"kind": "blocker", "item": item_id, "evidence": evidence, "reason": reason})
        checklist.end, checklist.end_reason = "blocked", f"item {item_id}: {reason} ({evidence})"
        return "Blocker recorded; the session ends and the plan is amended."

    for fn in (apply_patch, complete_item, finish, update_plan, request_file, report_plan_blocker):
        tools[fn.__name__] = function_tool(fn)
    return tools


def _recording(tool: BaseTool, checklist: Checklist) -> BaseTool:
    """The same tool, noting each path it read successfully in the checklist's files_read."""

    def run(**kwargs: Any) -> Any:
        result = tool.invoke(kwargs)
        if isinstance(kwargs.get("path"), str):
            checklist.files_read.append(kwargs["path"])
        return result

    return StructuredTool.from_function(func=run, name=tool.name, description=tool.description,
                                        args_schema=tool.args_schema)


def _update_plan(checklist: Checklist, action: str, reason: str, item_id: int, title: str,
                 paths: list[str], criteria: list[int], order: list[int]) -> str:
    if not reason.strip():
        raise ItemRejected("update_plan needs a reason")
    items = checklist.plan.items
    if action == "add":
        outside = [p for p in paths if p not in checklist.writable()]
        if outside:
            raise ItemRejected(f"outside the write scope: {', '.join(outside)}; request_file first")
        items.append(ChecklistItem(id=len(items) + 1, title=title, paths=paths, criteria=criteria,
                                   kind="change" if paths else "report"))
    elif action == "drop":
        item = checklist.item(item_id)
        if item.status != "open":
            raise ItemRejected(f"item {item_id} is {item.status}; only open items can be dropped")
        item.status, item.note = "dropped", reason
    else:
        open_ids = [i.id for i in items if i.status == "open"]
        if sorted(order) != sorted(open_ids):
            raise ItemRejected(f"reorder lists every open item once: {open_ids}")
        closed = [i for i in items if i.status != "open"]
        items[:] = closed + [checklist.item(i) for i in order]
    for number, item in enumerate(items, 1):
        item.id = number
    checklist.decisions.append({"kind": f"plan_{action}", "item": item_id or len(items), "title": title,
                                "reason": reason})
    return checklist.progress()
