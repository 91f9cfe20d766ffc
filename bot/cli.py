"""The `forgebot` command line."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

from foundation.settings import Settings


def _add_server_args(parser: argparse.ArgumentParser, settings: Settings) -> None:
    parser.add_argument("--host", default=settings.host)
    parser.add_argument("--port", type=int, default=settings.port)


def _know_thyself(settings: Settings, command: str) -> bool:
    """Ask the forge who the bot is before serving (its own events must never trigger it)."""
    import asyncio

    from bot.identity import learn_bot_identity
    from foundation.forge import ForgeError

    try:
        asyncio.run(learn_bot_identity(settings))
    except ForgeError as exc:
        sys.stderr.write(f"forgebot {command}: cannot ask the forge who the bot is: {exc}\n")
        return False
    return True


def _serve(args: argparse.Namespace) -> int:
    from bot.runner import run_serve

    if not _know_thyself(args.settings, "serve"):
        return 2
    return run_serve(args.settings, args.host, args.port)


def _web(args: argparse.Namespace) -> int:
    from bot.runner import run_web

    if not args.settings.redis_url:
        sys.stderr.write("forgebot web needs FORGEBOT_REDIS_URL (forgebot serve starts its own Redis)\n")
        return 2
    if not _know_thyself(args.settings, "web"):
        return 2
    run_web(args.settings, args.host, args.port)
    return 0


def _worker(args: argparse.Namespace) -> int:
    from bot.runner import run_worker

    if not args.settings.redis_url:
        sys.stderr.write("forgebot worker needs FORGEBOT_REDIS_URL\n")
        return 2
    if not _know_thyself(args.settings, "worker"):
        return 2
    run_worker(args.settings)
    return 0


def _run(args: argparse.Namespace) -> int:
    import asyncio
    from pathlib import Path

    from bot.local import LocalRunError, ModelProblem, one_line, run_local
    from foundation.gitrunner import GitTampered

    task = args.task if args.task is not None else Path(args.task_file).read_text(encoding="utf-8")
    from graph.routing import ModeUnavailable

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


def _registrars() -> list[Callable[[Any], None]]:
    """Subcommands owned by other packages; each module adds its parsers and handlers."""
    from bot.check import register as check
    from bot.evaluation.cli import register as evaluation
    from bot.hooks_cli import register as hooks
    from bot.tasks_cli import register as tasks
    from bot.trace_cli import register as trace
    from project.index.cli import register as index
    from project.index.memory_cli import register as memory
    from project.index.search_cli import register as search

    return [index, search, memory, trace, evaluation, tasks, hooks, check]


def build_parser(settings: Settings) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="forgebot", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="receiver and worker process, with a private Redis unless configured")
    _add_server_args(serve, settings)
    serve.set_defaults(handler=_serve)
    web = sub.add_parser("web", help="the webhook receiver only")
    _add_server_args(web, settings)
    web.set_defaults(handler=_web)
    sub.add_parser("worker", help="the worker only").set_defaults(handler=_worker)
    run = sub.add_parser("run", help="one task on a local checkout, no forge needed")
    run.add_argument("--repo", required=True, help="path of the checkout")
    run.add_argument("--mode", required=True, choices=["analyze", "implement", "review"])
    text = run.add_mutually_exclusive_group(required=True)
    text.add_argument("--task", help="the task text (first line is the title)")
    text.add_argument("--task-file", help="read the task text from a file")
    run.add_argument("--base", help="review: the branch the checked-out branch is compared with; "
                     "analyze/implement: the commit to start from (default HEAD)")
    run.set_defaults(handler=_run)
    for register in _registrars():
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    settings = Settings.load()
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    from bot.logredact import install
    from graph.redact import secrets_of

    install(secrets_of(settings))
    args = build_parser(settings).parse_args(argv)
    args.settings = settings
    args.data_dir = settings.data_dir
    return int(args.handler(args))


if __name__ == "__main__":
    raise SystemExit(main())
