"""The live lane's oracle: how each run ended, read from its trace and from what its user was shown.

A 135M model solves nothing, so "the task failed" proves nothing either way. What the lane can tell
apart is *who* failed:

- **model incapable**: the model's answers were empty or invalid even after the repair turn, and
  the product recorded that (`empty_answer`, `invalid_answer` in the trace) and still ended honestly: a comment
  with its footer, a closing reason, a settled verdict or a blocked report. The lane passes.
- **product error**: an exception (a traceback, an `error` event that is not the model's invalid
  answer), a request the model server rejected for its size or format (a failure naming an HTTP
  status, or a prompt the server counted past the window), a comment without its footer, an end
  without a reason. The lane fails.

Anything else is **finished**: the run reached an end the product chose (a report, a review, a
delivered change) with every answer usable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FOOTER = "forgebot · task"
# a failure the model server caused by refusing the request: its size, its shape, its fields
_REJECTED = re.compile(r"HTTP (4\d\d|5\d\d)")
_MODEL_EVENTS = ("model", "answer", "synthesis")


@dataclass
class End:
    """One run's classification and the evidence for it."""

    verdict: str  # "finished" | "model incapable" | "product error"
    reasons: list[str] = field(default_factory=list)
    calls: int = 0  # model calls the trace recorded
    largest_prompt: int = 0  # the largest prompt the server reported, in its own tokens
    read: int = 0  # prompt tokens over every call, as the server counted them
    written: int = 0  # answer tokens over every call

    def __str__(self) -> str:
        why = "; ".join(self.reasons) or "every answer usable"
        return (f"{self.verdict} ({why}; {self.calls} model calls, {self.read} prompt tokens read, {self.written} "
                f"written, largest prompt {self.largest_prompt})")


def trace_events(data_dir: Path) -> list[dict[str, Any]]:
    """Every event of every task trace under a data directory (one run, one or two tasks)."""
    events: list[dict[str, Any]] = []
    for path in sorted((data_dir / "traces").glob("*.jsonl")):
        events += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return events


def classify(events: Sequence[dict[str, Any]], comments: Iterable[str], reason: str, *, window: int,
             output: str = "") -> End:
    """The run's end: `comments` are what it posted (or printed), `reason` the line that closed it
    (empty when nothing did), `output` anything else it printed (where a traceback would show)."""
    calls = [e for e in events if e.get("kind") in _MODEL_EVENTS]
    prompts = [int(e.get("input_tokens") or 0) for e in calls]
    figures = (len(calls), max(prompts, default=0), sum(prompts), sum(int(e.get("output_tokens") or 0) for e in calls))
    errors: list[str] = []
    if "Traceback (most recent call last)" in output + reason:
        errors.append("a traceback")
    errors += [f"an exception in {e.get('node')}: {e.get('error')}: {e.get('reason')}"
               for e in events if e.get("kind") == "error" and e.get("model_failure") != "invalid"]
    rejected = _REJECTED.search(reason)
    if rejected:
        errors.append(f"the model server rejected a request ({rejected.group(0)})")
    errors += [f"the model server refused {e.get('role')}'s {e.get('method')} request: {e.get('reason')}"
               for e in events if e.get("kind") == "rejected"]
    for event in calls:
        cap = int(event.get("output_cap") or 0)
        if int(event.get("input_tokens") or 0) + cap > window:
            errors.append(f"a {event.get('role')} prompt of {event.get('input_tokens')} tokens (+{cap} for the "
                          f"answer) past the {window}-token window")
    shown = list(comments)
    if not shown:
        errors.append("nothing posted")
    errors += [f"a comment without its footer: {c[:80]!r}" for c in shown if FOOTER not in c]
    if not reason.strip():
        errors.append("no closing reason")
    if errors:
        return End("product error", errors, *figures)
    invalid = [f"{e.get('role')}'s {e.get('schema')} answer invalid after repair"
               + (", settled" if e.get("settled") else "") for e in events if e.get("kind") == "invalid_answer"]
    invalid += [f"{e.get('role')}'s {e.get('schema')} answer empty: {e.get('problem')}"
                for e in events if e.get("kind") == "empty_answer"]
    return End("model incapable" if invalid else "finished", invalid, *figures)
