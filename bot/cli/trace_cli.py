"""`forgebot trace TASK`: print one task's trace as a readable story (or raw JSON lines)."""

from __future__ import annotations

import argparse
import sys

from graph.runtime.trace import format_trace, read_trace, trace_path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("trace", help="print one task's trace")
    parser.add_argument("task", metavar="TASK", help="the task id")
    parser.add_argument("--json", action="store_true", help="raw JSON lines instead of the readable form")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        path = trace_path(args.data_dir, args.task)
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
