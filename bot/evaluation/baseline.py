"""The synthetic baseline's answers: what an LLM-free stand-in says to each role, derived by code.

Everything here is mechanical and deliberately unclever, so a synthetic run proves the machinery
(workspaces, routes, gates, checks, reports) without ever passing a task by construction:

- decomposer: one criterion, the task's title;
- analyzer: the PHP declarations whose names the task text mentions (a plain scan of the workspace);
- planner: one `change` item covering every criterion, whose paths are the files of those
  declarations; the architect approves it;
- coder: writes nothing. On a `change` item it reports a plan blocker (evidence: the first named
  declaration); planner_amend then asks only for a `report` item saying the change was not made,
  which the coder closes with that report and `finish` — so the route goes on through gates, its
  reviewer and `decide` to the failure report, and the hidden tests decide the outcome;
- reviewer: one `info` finding per changed hunk of the diff it was shown, and the verdict
  `incomplete` with every criterion unverified: it inspected nothing, and says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from foundation.forge.diff import parse

_CLASS_METHOD = re.compile(r"\b([A-Z][A-Za-z0-9_]*)::([A-Za-z_]\w*)")
_WORD = re.compile(r"`([A-Za-z_]\w*)`|\b([A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+|[a-z]+(?:[A-Z][a-z0-9]*)+)\b")
_DECL = re.compile(r"^\s*(?:(?:abstract|final)\s+)*(class|interface|trait)\s+(\w+)|\bfunction\s+&?(\w+)\s*\(")
_CRITERIA = re.compile(r"<criteria origin=[^>]*>\n(.*?)</criteria>", re.S)
_CRITERION = re.compile(r"^(\d+)\. ", re.M)
_DIFF = re.compile(r"<diff origin=[^>]*>\n(.*?)</diff>", re.S)
_ITEM = re.compile(r"Work on item (\d+)\.")
NO_ITEM = "No item is open: call `finish`."
REPORT_TITLE = "Report that the change was not made"


class ScriptedModelError(RuntimeError):
    """The synthetic model was asked for an answer it has no script for."""


def mentioned_names(text: str) -> tuple[set[tuple[str, str]], set[str]]:
    """`Class::method` pairs and bare identifiers (CamelCase, camelCase, `backticked`) in the text."""
    pairs = {(m.group(1), m.group(2)) for m in _CLASS_METHOD.finditer(text)}
    words = {m.group(1) or m.group(2) for m in _WORD.finditer(text)}
    return pairs, words | {c for c, _ in pairs}


def find_declarations(root: Path, text: str, limit: int = 8) -> list[tuple[str, str, int]]:
    """(path, symbol, line) of declarations the text names, in file order; at most `limit`."""
    pairs, words = mentioned_names(text)
    found: list[tuple[str, str, int]] = []
    for path in sorted(root.rglob("*.php")):
        if path.name == "autoload.php" or ".git" in path.parts:
            continue
        current = ""
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            m = _DECL.search(line)
            if m is None:
                continue
            rel = path.relative_to(root).as_posix()
            if m.group(2):
                current = m.group(2)
                if current in words and not any(c == current for c, _ in pairs):
                    found.append((rel, current, number))
            elif (current, m.group(3)) in pairs or (m.group(3) in words and current in words):
                found.append((rel, f"{current}::{m.group(3)}", number))
            if len(found) >= limit:
                return found
    return found


def _texts(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in messages)


def criteria_ids(messages: Sequence[BaseMessage]) -> list[int]:
    """The criterion numbers of the first `<criteria>` block the role was shown (none: [1])."""
    block = _CRITERIA.search(_texts(messages))
    ids = [int(n) for n in _CRITERION.findall(block.group(1))] if block else []
    return ids or [1]


def diff_hunks(messages: Sequence[BaseMessage]) -> list[tuple[str, str, int, int]]:
    """(path, side, start, end) of every hunk of the `<diff>` the reviewer was shown."""
    block = _DIFF.search(_texts(messages))
    hunks: list[tuple[str, str, int, int]] = []
    for file in parse(block.group(1)) if block else []:
        for hunk in file.hunks:
            if hunk.new_count:
                hunks.append((file.path, "new", hunk.new_start, hunk.new_start + hunk.new_count - 1))
            else:  # a pure deletion has no new-side line: anchor on the removed ones
                hunks.append((file.path, "old", hunk.old_start, hunk.old_start + max(hunk.old_count, 1) - 1))
    return hunks


@dataclass
class Baseline:
    """The answers for one task: structured answers by schema name, tool-loop turns by role."""

    task_text: str
    workspace: Path
    _hits: list[tuple[str, str, int]] | None = field(default=None, init=False)

    @property
    def title(self) -> str:
        return self.task_text.strip().splitlines()[0][:200]

    def hits(self) -> list[tuple[str, str, int]]:
        """The name scan, done once: the coder's resets never change what the start commit declares."""
        if self._hits is None:
            self._hits = find_declarations(self.workspace, self.task_text)
        return self._hits

    def structured(self, schema: str, messages: Sequence[BaseMessage], role: str = "") -> dict[str, Any]:
        """The arguments of the schema's tool call; unknown schemas raise ScriptedModelError."""
        if schema == "Decomposition":
            return {"criteria": [{"id": 1, "text": self.title}], "assumptions": [], "questions": []}
        if schema == "Analysis":
            return self._analysis()
        if schema == "PlanProposal":
            return self._plan(messages, "report" if role == "planner_amend" else "change")
        if schema == "ArchitectVerdict":
            return {"approved": True, "feedback": []}
        if schema == "Review":
            return self._review(messages)
        raise ScriptedModelError(f"the synthetic model has no script for {schema}")

    def turn(self, role: str, tools: Sequence[str], messages: Sequence[BaseMessage]) -> AIMessage:
        """One tool-loop turn: the coder gives up on its item; every other role ends without tools."""
        if role == "coder" and "report_plan_blocker" in tools:
            call = self._coder_call(messages)
            if call is not None:
                return AIMessage(content="", tool_calls=[call])
            return AIMessage(content="synthetic model: it cannot implement anything and stops")
        return AIMessage(content=f"synthetic model: no {role} investigation")

    def _analysis(self) -> dict[str, Any]:
        hits = self.hits()
        return {
            "summary": f"Declarations named in the task: {len(hits)} found by a name scan (synthetic).",
            "affected_files": sorted({path for path, _, _ in hits}),
            "symbols": [symbol for _, symbol, _ in hits],
            "evidence": [{"path": p, "start_line": n, "end_line": n, "note": s} for p, s, n in self.hits()],
        }

    def _plan(self, messages: Sequence[BaseMessage], kind: str) -> dict[str, Any]:
        paths = list(dict.fromkeys(path for path, _, _ in self.hits()))
        kind = kind if paths else "report"  # a change item must name a file; with none found, only a report
        title = self.title if kind == "change" else REPORT_TITLE
        item: dict[str, Any] = {"id": 1, "title": title, "criteria": criteria_ids(messages), "paths": paths,
                                "kind": kind}
        return {"plan": {"items": [item], "scope": {"writable": paths, "context_only": []}}, "new_files": []}

    def _review(self, messages: Sequence[BaseMessage]) -> dict[str, Any]:
        findings = [
            {"severity": "info", "path": path, "line": start, "end_line": end, "side": side,
             "concern": "changed code", "message": f"Changed hunk {path}:{start}-{end} (synthetic: not inspected)"}
            for path, side, start, end in diff_hunks(messages)
        ]
        return {"verdict": "incomplete", "findings": findings, "verified_criteria": [],
                "unverified_criteria": criteria_ids(messages),
                "summary": f"Synthetic review: {len(findings)} changed hunks listed, nothing inspected."}

    def _coder_call(self, messages: Sequence[BaseMessage]) -> dict[str, Any] | None:
        """finish when nothing is open; a report item closed with its report; a blocker for a change item."""
        asked = [str(m.content) for m in messages if isinstance(m, HumanMessage)]
        last = asked[-1] if asked else ""
        if NO_ITEM in last:
            return {"name": "finish", "args": {}, "id": "synthetic-finish"}
        item = _ITEM.search(last)
        if item is None:
            return None
        number = int(item.group(1))
        if re.search(rf"^\[ \] {number}\. .*\(report;", _texts(messages), re.M):
            report = f"The synthetic model cannot implement: {self.title}. Nothing was changed."
            args: dict[str, Any] = {"item_id": number, "note": "not implemented (synthetic)", "report": report}
            return {"name": "complete_item", "args": args, "id": f"synthetic-report-{number}"}
        if not self.hits():
            return None
        path, symbol, line = self.hits()[0]
        args = {"item_id": number, "evidence": f"{path}:{line}",
                "reason": f"the synthetic model does not write code ({symbol} is left as it is)"}
        return {"name": "report_plan_blocker", "args": args, "id": f"synthetic-blocker-{number}"}
