"""Investigation memory: the scratchpad, pruning with tombstones, and the code-built handoff.

Tool history grows faster than conclusions. A role saves facts, paths and open questions with
`write_scratchpad`; pruning removes the oldest tool-call/response groups together (a call is never
left without its responses) and leaves one tombstone that says how much was removed and points to
the scratchpad, without summarising it. Before the first prune an empty scratchpad earns a warning
and one more turn. The handoff for structured synthesis is assembled by code from criteria,
notes, read ranges and declared files, so the synthesis call never sees the tool history.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool

import prompts
from graph.runtime.budget import estimate_tokens
from graph.state import CriterionDump
from graph.tools.functiontool import function_tool

NoteKind = Literal["fact", "path", "question"]
_KINDS: dict[str, NoteKind] = {"fact": "fact", "path": "path", "question": "question"}
TOMBSTONE = "forgebot:tombstone"
MAX_NOTE_CHARS = 2_000
END = 10**9  # "to the end of the file" in a read range


@dataclass
class Scratchpad:
    notes: list[tuple[NoteKind, str]] = field(default_factory=list)

    def write(self, kind: str, text: str) -> str:
        checked = _KINDS.get(kind)
        if checked is None:
            raise ValueError("kind must be one of: fact, path, question")
        text = text.strip()
        if not text or len(text) > MAX_NOTE_CHARS:
            raise ValueError(f"a note is 1..{MAX_NOTE_CHARS} characters")
        if (checked, text) not in self.notes:
            self.notes.append((checked, text))
        return f"saved ({len(self.notes)} notes)"

    def tool(self) -> BaseTool:
        def write_scratchpad(kind: str, text: str) -> str:
            """Save a fact, a path (with lines) or an open question; notes survive pruning of old tool calls."""
            return self.write(kind, text)

        return function_tool(write_scratchpad)

    def as_dict(self) -> dict[str, list[str]]:
        return {k: [t for kind, t in self.notes if kind == k] for k in ("fact", "path", "question")}


@dataclass
class ReadLog:
    """Line ranges read per file, merged; a read to the end of the file ends at `END`."""

    ranges: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def add(self, path: str, start: int, end: int) -> None:
        spans = sorted([*self.ranges.get(path, []), (start, end)])
        merged: list[tuple[int, int]] = []
        for s, e in spans:
            if merged and s <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], e))
            else:
                merged.append((s, e))
        self.ranges[path] = merged

    def render(self) -> list[str]:
        return [f"{p}:{s}-{'end' if e >= END else e}" for p, spans in sorted(self.ranges.items()) for s, e in spans]


def tool_groups(messages: Sequence[BaseMessage]) -> list[tuple[int, int]]:
    """Spans [start, end) of each AI message with tool calls plus the tool responses that follow it."""
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(messages):
        msg = messages[i]
        if isinstance(msg, AIMessage) and msg.tool_calls:
            j = i + 1
            while j < len(messages) and isinstance(messages[j], ToolMessage):
                j += 1
            spans.append((i, j))
            i = j
        else:
            i += 1
    return spans


def _calls(msg: BaseMessage) -> list[Any]:
    return list(msg.tool_calls) if isinstance(msg, AIMessage) else []


def _is_tombstone(msg: BaseMessage) -> bool:
    return isinstance(msg, HumanMessage) and msg.additional_kwargs.get(TOMBSTONE) is not None


def prune(messages: Sequence[BaseMessage], keep_groups: int) -> tuple[list[BaseMessage], int]:
    """Drop all but the last `keep_groups` call groups; return the messages and tool calls removed now."""
    if keep_groups < 1:
        raise ValueError("keep_groups must be >= 1")
    groups = tool_groups(messages)
    if len(groups) <= keep_groups:
        return list(messages), 0
    dropped = groups[:-keep_groups]
    drop_idx = {i for s, e in dropped for i in range(s, e)}
    removed_now = sum(len(_calls(messages[s])) for s, _ in dropped)
    before = sum(int(m.additional_kwargs[TOMBSTONE]) for m in messages if _is_tombstone(m))
    total = before + removed_now
    tomb = HumanMessage(prompts.render("runtime.tombstone", removed=total), additional_kwargs={TOMBSTONE: total})
    out: list[BaseMessage] = []
    for i, msg in enumerate(messages):
        if i == dropped[0][0]:
            out.append(tomb)
        if i not in drop_idx and not _is_tombstone(msg):
            out.append(msg)
    return out, removed_now


@dataclass
class Memory:
    """Pruning policy of one tool-loop session."""

    scratchpad: Scratchpad = field(default_factory=Scratchpad)
    reads: ReadLog = field(default_factory=ReadLog)
    max_groups: int = 12  # prune when more call groups than this are in the window
    keep_groups: int = 6
    warned: bool = False

    def before_call(self, messages: list[BaseMessage]) -> tuple[list[BaseMessage], dict[str, Any] | None]:
        """Prune (or warn first, when the scratchpad is empty); returns messages and a trace event."""
        groups = len(tool_groups(messages))
        if groups <= self.max_groups:
            return messages, None
        if not self.scratchpad.notes and not self.warned:
            self.warned = True
            warning = HumanMessage(prompts.render("runtime.empty_scratchpad", keep=self.keep_groups))
            return [*messages, warning], {"event": "empty_scratchpad_warning", "groups": groups}
        pruned, removed = prune(messages, self.keep_groups)
        return pruned, {"event": "pruned", "removed_calls": removed, "groups_before": groups}


def handoff_summary(
    criteria: Sequence[CriterionDump], memory: Memory, declared_files: Sequence[str], reason: str,
    budget_tokens: int | None = None,
) -> str:
    """The code-assembled input of structured synthesis (no tool history, no model summary); with a
    budget, the notes are kept in the order they were written while the whole fits it."""
    notes = list(memory.scratchpad.notes)
    while True:
        text = prompts.render(
            "runtime.handoff",
            criteria=list(criteria),
            notes={k: [t for kind, t in notes if kind == k] for k in ("fact", "path", "question")},
            read_ranges=memory.reads.render(),
            declared_files=list(declared_files),
            reason=reason,
            left_out=len(memory.scratchpad.notes) - len(notes),
        )
        if budget_tokens is None or not notes or estimate_tokens(text) + 4 <= budget_tokens:
            return text
        notes.pop()
