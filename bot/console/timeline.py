"""The phase timeline: a task's checkpoint history turned into bars (one per node run) over time.

LangGraph writes a checkpoint after every step, and each checkpoint names the nodes scheduled next
(its updated `branch:to:<node>` channels). So a node ran from the checkpoint that scheduled it to
the next checkpoint — or, for the last one of a finished or failed task, to the task's last update.
The checkpoints live in the shared store (SQLite or Postgres), so any web process can draw the
picture, whichever worker ran the task.

A bar is *failed* when it is the last node of a failed task or the gates node with a failed gate,
and *warned* when a guard or budget event of the task's trace fell inside it. Trace events are
grouped under the bar whose time span holds them.

The steps before the graph (mirror, worktree, index, memory) write no checkpoint; each writes one
`phase` event to the trace with its start and duration (`graph.runtime.phases`), drawn as a bar
of its own, failed when the step failed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

WIDTH = 760  # px of the drawing area; the template adds a label column
ROW = 22
BRANCH = "branch:to:"


@dataclass(frozen=True)
class Step:
    """One checkpoint: when it was written and the nodes it scheduled."""

    ts: float
    scheduled: tuple[str, ...]


@dataclass(frozen=True)
class Bar:
    node: str
    start: float
    end: float
    status: str  # "ok" | "failed" | "warned" | "running"

    @property
    def seconds(self) -> float:
        return max(self.end - self.start, 0.0)


@dataclass(frozen=True)
class Drawn:
    """A bar placed on the picture: x and width in px, y by row."""

    bar: Bar
    x: float
    width: float
    y: int


def scheduled(updated_channels: Iterable[str] | None) -> tuple[str, ...]:
    return tuple(sorted(c.removeprefix(BRANCH) for c in updated_channels or () if c.startswith(BRANCH)))


def bars(steps: Sequence[Step], end: float, events: Iterable[Mapping[str, Any]] = (), *, state: str = "done",
         gates_failed: bool = False) -> list[Bar]:
    """Bars for `steps` (oldest first); `end` closes the last step's nodes."""
    ordered = sorted(steps, key=lambda s: s.ts)
    events = list(events)
    warnings = [float(e["ts"]) for e in events if e.get("kind") in ("guard", "budget") and "ts" in e]
    out: list[Bar] = [_phase(e) for e in events if e.get("kind") == "phase" and "start" in e and "seconds" in e]
    failed_step = any(bar.status == "failed" for bar in out)
    for index, step in enumerate(ordered):
        last = index == len(ordered) - 1
        stop = ordered[index + 1].ts if not last else max(end, step.ts)
        for node in step.scheduled:
            status = "ok"
            if last and state == "failed" and not failed_step or node == "gates" and gates_failed:
                status = "failed"
            elif last and state in ("running", "queued"):
                status = "running"
            elif any(step.ts <= ts <= stop for ts in warnings):
                status = "warned"
            out.append(Bar(node, step.ts, stop, status))
    return sorted(out, key=lambda bar: bar.start)


def _phase(event: Mapping[str, Any]) -> Bar:
    start = float(event["start"])
    status = "failed" if event.get("status") == "failed" else "ok"
    return Bar(str(event.get("phase", "?")), start, start + float(event["seconds"]), status)


def layout(found: list[Bar]) -> tuple[list[Drawn], float]:
    """Bars scaled to `WIDTH` (each at least 2 px wide, so a quick node stays visible) and the total seconds."""
    if not found:
        return [], 0.0
    t0 = min(b.start for b in found)
    total = max(max(b.end for b in found) - t0, 1e-6)
    scale = WIDTH / total
    drawn = [Drawn(b, round((b.start - t0) * scale, 1), max(round(b.seconds * scale, 1), 2.0), i * ROW)
             for i, b in enumerate(found)]
    return drawn, total


def grouped(found: list[Bar], events: Iterable[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Trace events under the node whose bar holds their time (events outside every bar: "task")."""
    groups: list[tuple[str, list[dict[str, Any]]]] = [(bar.node, []) for bar in found]
    outside: list[dict[str, Any]] = []
    for event in events:
        ts = float(event.get("ts", -1))
        home = next((i for i, bar in enumerate(found) if bar.start <= ts <= bar.end), None)
        (outside if home is None else groups[home][1]).append(event)
    kept = [(node, items) for node, items in groups if items]
    return kept + ([("task", outside)] if outside else [])
