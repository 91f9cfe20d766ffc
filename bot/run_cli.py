"""`forgebot run`: one task on a local checkout, printed for a terminal."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    run = sub.add_parser("run", help="one task on a local checkout, no forge needed")
    run.add_argument("--repo", required=True, help="path of the checkout")
    run.add_argument("--mode", required=True, choices=["analyze", "implement", "review"])
    text = run.add_mutually_exclusive_group(required=True)
    text.add_argument("--task", help="the task text (first line is the title)")
    text.add_argument("--task-file", help="read the task text from a file")
    run.add_argument("--base", help="review: the branch the checked-out branch is compared with; "
                     "analyze/implement: the commit to start from (default HEAD)")
    run.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from bot.local import LocalRunError, ModelProblem, one_line, run_local
    from foundation.gitrunner import GitTampered
    from graph.routing import ModeUnavailable

    task = args.task if args.task is not None else Path(args.task_file).read_text(encoding="utf-8")
    try:
        result = asyncio.run(run_local(args.settings, Path(args.repo), args.mode, task, base=args.base))
    except (ModeUnavailable, FileNotFoundError, LocalRunError, GitTampered, ModelProblem) as exc:
        sys.stderr.write(f"forgebot run: {one_line(exc, args.settings)}\n")
        return 2
    for comment in result.comments:
        sys.stdout.write(comment.rstrip() + "\n")
    if result.branch:
        sys.stdout.write(f"\nBranch {result.branch} in {Path(args.repo).resolve()} holds {result.commits} new "
                         "commit(s); your checkout, branch and HEAD were not touched.\n\n")
        sys.stdout.write(result.patch)
    return 0
