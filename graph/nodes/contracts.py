"""Override contracts surfaced to the planner and the architect (a parent method's exits).

For each `Class::method` the analysis names, the task's code index says how control leaves the
ancestor implementation. Without an index the text says the check was not performed, so a model
never reads silence as "no contract".
"""

from __future__ import annotations

from pathlib import Path

from graph.state import TaskState
from project.index.contract import override_contract
from project.index.db import connect
from project.index.taskindex import task_index_path

NOT_CHECKED = "Override contracts were not checked: this task has no code index."


def contracts_text(state: TaskState, data_dir: Path) -> str:
    methods = [s for s in state.get("analysis", {}).get("symbols", []) if "::" in str(s)]
    if not methods:
        return "No method named by the analysis overrides a parent method that needs a contract."
    index = task_index_path(data_dir, state["task_id"])
    if not index.is_file():
        return NOT_CHECKED
    conn = connect(index)
    try:
        lines = []
        for method in methods:
            try:
                result = override_contract(conn, Path(state["workspace"]), str(method))
            except ValueError as exc:
                lines.append(f"- {method}: {exc}")
                continue
            if result.ancestor is None:
                lines.append(f"- {method}: {result.status.note or 'no ancestor implementation'}")
                continue
            exits = "; ".join(f"{e.kind} at line {e.line}: {e.text}" for e in result.exits) or "falls through"
            where = f"{result.ancestor.path}:{result.ancestor.start_line}"
            lines.append(f"- {method} overrides {result.ancestor.fqn} ({where}, {result.status.state}): exits {exits}")
        return "Override contracts:\n" + "\n".join(lines)
    finally:
        conn.close()
