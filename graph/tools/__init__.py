"""Tool sets by role: which tool names each role may be given, enforced when tools are bound.

Investigation roles (analyzer, architect, reviewer) never get a write tool; the coder gets patch
tools and never a shell. Tools are plugged in by name (the code graph, search and the coder's patch
tools come from other modules); `tools_for` picks the allowed ones and `check_role_tools` refuses a
list that breaks the split, so a wiring mistake fails closed instead of handing out authority.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from langchain_core.tools import BaseTool

READ_TOOLS = frozenset({
    "read_file", "read_file_snippet", "get_file_outline", "list_files", "search_code", "semantic_search",
    "find_definition", "find_callers", "find_callees", "impact", "explore", "override_contract",
    "list_database_tables", "get_table_schema", "run_readonly_sql",
})
MEMORY_TOOLS = frozenset({"write_scratchpad", "finish_exploration"})
# project memory (the memory of intent beside the code graph): for the roles that decide what to do, not the coder
RECALL_TOOLS = frozenset({"search_memory", "symbol_history"})
WRITE_TOOLS = frozenset({
    "apply_patch", "write_file", "complete_item", "update_plan", "request_file", "report_plan_blocker", "finish",
})
FORBIDDEN_TOOLS = frozenset({"run_shell", "shell", "bash", "exec", "terminal"})

INVESTIGATION_ROLES = frozenset({"analyzer", "architect", "reviewer"})
ROLE_GROUPS: dict[str, frozenset[str]] = {
    "investigation": INVESTIGATION_ROLES,
    "research": frozenset({"analyzer", "architect"}),
    "tool_loop": INVESTIGATION_ROLES | {"coder"},
}
ROLE_TOOLS: dict[str, frozenset[str]] = {
    "analyzer": READ_TOOLS | MEMORY_TOOLS | RECALL_TOOLS,
    "architect": READ_TOOLS | MEMORY_TOOLS | RECALL_TOOLS,
    "reviewer": READ_TOOLS | MEMORY_TOOLS | RECALL_TOOLS,
    "coder": (READ_TOOLS - {"run_readonly_sql"}) | WRITE_TOOLS,
}


class ToolNotAllowed(PermissionError):
    """A tool was offered to a role that must not have it."""


def roles_of(role_or_group: str) -> frozenset[str]:
    """A role name, or a group name from ROLE_GROUPS, as a set of roles."""
    if role_or_group in ROLE_GROUPS:
        return ROLE_GROUPS[role_or_group]
    if role_or_group not in ROLE_TOOLS:
        raise KeyError(f"role {role_or_group!r} has no tool set")
    return frozenset({role_or_group})


def check_role_tools(role: str, names: Iterable[str]) -> None:
    """Raise ToolNotAllowed unless every name is allowed for `role`."""
    allowed = ROLE_TOOLS.get(role)
    if allowed is None:
        raise ToolNotAllowed(f"role {role!r} runs without tools")
    bad = sorted(set(names) - allowed)
    if bad:
        raise ToolNotAllowed(f"role {role!r} may not use {', '.join(bad)}")


def tools_for(role: str, available: Mapping[str, BaseTool]) -> list[BaseTool]:
    """The subset of `available` that `role` may use, in a stable order; missing ones are skipped."""
    for name, tool in available.items():
        if tool.name != name:
            raise ValueError(f"tool registered as {name!r} is named {tool.name!r}")
    allowed = ROLE_TOOLS.get(role)
    if allowed is None:
        raise ToolNotAllowed(f"role {role!r} runs without tools")
    return [available[n] for n in sorted(available) if n in allowed]


__all__ = [
    "FORBIDDEN_TOOLS", "INVESTIGATION_ROLES", "MEMORY_TOOLS", "READ_TOOLS", "RECALL_TOOLS", "ROLE_GROUPS", "ROLE_TOOLS",
    "WRITE_TOOLS", "ToolNotAllowed", "check_role_tools", "roles_of", "tools_for",
]
