"""The per-task trace: JSON lines under `<data dir>/traces/<task id>.jsonl`, and a readable printer.

Events: `node` (transition with its reason), `model` (sizes, tokens, hash of the supplied context,
injection metrics), `tool` (call, result size and preview, error), `guard`, `memory`, `budget`,
`session` (how a tool loop ended), `context` (tokens per part), `snapshot` (state keys at a node
boundary), `synthesis` and `answer` (a structured answer after a loop, or a role's only call),
`phase` (a step before the graph: mirror, worktree, index, memory; `graph.runtime.phases`),
`invalid_answer` (an answer still invalid after its repair turn, and whether code settled it),
`empty_answer` (a valid answer with nothing in it the task can go on from),
`rejected` (a structured-output method the server refused, before the next one was tried),
`error` (an exception that ended a node). Model calls carry the request's estimated tokens beside
the tokens the provider reported, the window and the output cap they were fitted to.
`format_trace` turns them into the story of the run.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
PREVIEW_CHARS = 160


def trace_path(data_dir: Path, task_id: str) -> Path:
    """Where a task's trace lives; task ids that could escape the directory are rejected."""
    if not _TASK_ID.match(task_id) or ".." in task_id:
        raise ValueError(f"bad task id {task_id!r}")
    return data_dir / "traces" / f"{task_id}.jsonl"


def content_hash(texts: Iterable[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()[:12]


def preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


@dataclass
class Trace:
    """Appends events to one task's file."""

    path: Path
    task_id: str
    _seq: int = 0

    @classmethod
    def open(cls, data_dir: Path, task_id: str) -> Trace:
        path = trace_path(data_dir, task_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        seq = sum(1 for _ in path.open(encoding="utf-8")) if path.exists() else 0
        return cls(path=path, task_id=task_id, _seq=seq)

    def event(self, kind: str, **fields: Any) -> dict[str, Any]:
        self._seq += 1
        record = {"seq": self._seq, "ts": round(time.time(), 3), "task": self.task_id, "kind": kind, **fields}
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, default=str, ensure_ascii=False) + "\n")
        return record

    def node(self, source: str, target: str, reason: str) -> None:
        self.event("node", source=source, target=target, reason=reason)

    def snapshot(self, node: str, state: Mapping[str, Any], changed: Iterable[str] = ()) -> None:
        """Keys and sizes at a node boundary, and the keys the node wrote (sizes, not contents: issue
        text stays in the forge)."""
        sizes = {k: len(json.dumps(v, default=str)) for k, v in state.items()}
        self.event("snapshot", node=node, keys=sorted(state), sizes=sizes, changed=sorted(changed))


def read_trace(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        raise FileNotFoundError(f"no trace at {path}")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _pick(event: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {k: event[k] for k in keys if k in event}


def _args(args: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={preview(str(v))}" for k, v in args.items())


_FORMATS: dict[str, Callable[[dict[str, Any]], str]] = {
    "node": lambda e: f"→ {e['source']} → {e['target']}: {e['reason']}",
    "model": lambda e: (
        f"  [{e['role']}] model {e['model']} call {e['call']}: {e['messages']} messages, {e['bytes']} bytes, "
        f"context {e['context_hash']}, injected {e['injected'].get('full', 0)} full / "
        f"{e['injected'].get('outline', 0)} outline, tokens in {e['input_tokens']} out {e['output_tokens']}"
        + (f" (estimated {e['estimated_tokens']} of a {e['window']}-token window)" if e.get("window") else "")
        + (f", asks for {', '.join(e['tool_calls'])}" if e.get("tool_calls") else ", answers")
    ),
    "invalid_answer": lambda e: (
        f"  [{e['role']}] {e['schema']} answer invalid {'after its repair turn' if e['repaired'] else ''}: "
        f"{e['problem']}" + ("; settled by code" if e["settled"] else "")
    ),
    "error": lambda e: f"  ✗ {e['node']} raised {e['error']}: {e['reason']}",
    "tool": lambda e: (
        f"    [{e['role']}] {e['name']}({_args(e['args'])}) "
        + (f"✗ {e['status']}: {e['preview']}" if e["status"] != "ok" else f"→ {e['bytes']} bytes: {e['preview']}")
    ),
    "guard": lambda e: f"    [{e['role']}] guard: {e['cause']} → {e['action']} ({e['detail']})",
    "memory": lambda e: f"  [{e['role']}] memory: {e['event']} {_args(_pick(e, 'removed_calls', 'groups_before'))}",
    "budget": lambda e: f"  [{e['role']}] budget exhausted: {e['budget']} {e['used']}/{e['limit']}",
    "session": lambda e: f"  [{e['role']}] session ended: {e['outcome']} after {e['calls']} tool calls ({e['reason']})",
    "context": lambda e: (
        f"  [{e['role']}] context: {e['tokens']} tokens of {e['budget']} ({_args(e['by_kind'])}); "
        f"omitted {e['omitted']}"
    ),
    "snapshot": lambda e: (
        f"  state after {e['node']}: {len(e['keys'])} keys"
        + (f", wrote {', '.join(e['changed'])}" if e.get("changed") else "")
    ),
    "phase": lambda e: f"  step {e['phase']}: {float(e['seconds']):.1f} s, {e['status']}",
    "gates": lambda e: f"  gates: {', '.join(e['results']) or 'none ran'}" + (
        "; ran " + "; ".join(f"{name}: {str(command)[:160]}" for name, command in e["commands"].items())
        if e.get("commands") else ""),
    "profile": lambda e: f"  profile: {e['line']}",
    "synthesis": lambda e: f"  [{e['role']}] synthesis {e['schema']} by {e['model']}: {e['tokens']} tokens",
    "answer": lambda e: (
        f"  [{e['role']}] answer {e['schema']} by {e['model']}: tokens in {e['input_tokens']} "
        f"out {e['output_tokens']}"
    ),
}


def format_event(event: dict[str, Any]) -> str:
    fmt = _FORMATS.get(event.get("kind", ""))
    if fmt is not None:
        return fmt(event)
    rest = {k: v for k, v in event.items() if k not in ("seq", "ts", "task", "kind")}
    return f"  {event.get('kind')}: {_args(rest)}"


def format_trace(events: Iterable[dict[str, Any]]) -> str:
    lines = [f"{e['seq']:>4} {format_event(e)}" for e in events]
    return "\n".join(lines) + "\n"
