"""`forgebot trace TASK`: print one task's trace as a readable story (or raw JSON lines)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from graph.runtime.trace import format_trace, read_trace, trace_path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("trace", help="print one task's trace")
    parser.add_argument("task", metavar="TASK", help="the task id")
    parser.add_argument("--json", action="store_true", help="raw JSON lines instead of the readable form")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        path = _found(args.data_dir, args.task)
        if args.json:
            sys.stdout.write(path.read_text(encoding="utf-8") if path.exists() else "")
            if not path.exists():
                raise FileNotFoundError(f"no trace at {path}")
            return 0
        sys.stdout.write(format_trace(read_trace(path)))
    except (ValueError, FileNotFoundError) as exc:
        sys.stderr.write(f"forgebot trace: {exc}\n")
        return 1
    return 0


# the fewest leading characters of a task id taken for it, as git takes a commit's
_PREFIX = 6


def _found(data_dir: Path, task: str) -> Path:
    """The trace of `task`, or of the one task whose id starts with it (`forgebot trace 2205cfae`: the
    short form people copy); an ambiguous prefix names the tasks it could be."""
    path = trace_path(data_dir, task)
    if path.exists() or len(task) < _PREFIX:
        return path
    matches = sorted(found.stem for found in path.parent.glob(f"{task}*.jsonl"))
    if len(matches) == 1:
        return trace_path(data_dir, matches[0])
    if matches:
        raise ValueError(f"{task} is the start of {len(matches)} tasks: {', '.join(matches[:5])}")
    return path
