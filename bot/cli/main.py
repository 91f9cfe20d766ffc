"""The `forgebot` command line.

Parsing needs nothing but argparse: `forgebot --help` lists every command from a table without
importing it, and a command's module (with the agent, the SDKs and the index it may load) is
imported only when the command is named. Settings are read after parsing, so help always works
and a refused variable is reported in one line whatever the command.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import logging
import os
import select
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from foundation.settings import Settings

# Every command of another module: the module whose `register(sub)` adds its parser, and the line
# `forgebot --help` shows. Listing a command needs no import; only the named command's module is
# imported (a test checks that each module registers exactly these names with these help lines).
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("bot.cli.run_cli", "one task on a local checkout, no forge needed"),
    "index": ("project.index.index_cli", "build or refresh the code index of a checkout"),
    "symbols": ("project.index.index_cli", "every definition: kind, fqn, path, start_line, end_line"),
    "callers": ("project.index.index_cli", "call sites of a symbol"),
    "impact": ("project.index.index_cli", "symbols that depend on a symbol, up to --depth hops"),
    "outline": ("project.index.index_cli", "definitions of one file with their signatures"),
    "search": ("project.index.search_cli", "hybrid (full-text, vector, symbol) search of a checkout"),
    "memory": ("project.index.memory_cli", "search a checkout's documents and history (why and where decided)"),
    "history": ("project.index.history_cli", "the commits that changed one symbol, with their hunks"),
    "trace": ("bot.cli.trace_cli", "print one task's trace"),
    "eval": ("bot.cli.eval_cli",
             "run a task set and write a fingerprinted report; `eval compare A B` compares two reports"),
    "tasks": ("bot.cli.tasks_cli", "list tasks: state, mode, duration, tokens, cost, link"),
    "hooks": ("bot.cli.hooks_cli", "each allowed project's webhook URL and secret (--register: save them)"),
    "check": ("bot.cli.check", "verify Redis, the store, the forges, the model, the embedder, the check sandbox and "
                              "the installs' way out"),
}


def _add_server_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="listen address (default: FORGEBOT_HOST, else 127.0.0.1)")
    parser.add_argument("--port", type=int, help="listen port (default: FORGEBOT_PORT, else 8080)")


def _unreachable(command: str, settings: Settings, redis: bool) -> bool:
    """Whether a service the command needs does not answer (said in one line): its Redis (`web`, `worker`;
    `serve` starts its own unless one is configured) and, when FORGEBOT_DATABASE_URL is set, PostgreSQL."""
    from bot.cli.serve import redis_problem, store_problem

    problem = redis_problem(settings.redis_url) if redis and settings.redis_url else ""
    if not problem and settings.database_url is not None:
        problem = store_problem(settings.database_url.get_secret_value())
    if problem:
        sys.stderr.write(f"forgebot {command}: {problem}\n")
    return bool(problem)


def _serve(args: argparse.Namespace) -> int:
    from bot.cli.serve import run_serve

    if _unreachable("serve", args.settings, redis=False):
        return 1
    return run_serve(args.settings, args.host or args.settings.host, args.port or args.settings.port)


def _web(args: argparse.Namespace) -> int:
    from bot.cli.serve import run_web

    if not args.settings.redis_url:
        sys.stderr.write("forgebot web needs FORGEBOT_REDIS_URL (forgebot serve starts its own Redis)\n")
        return 2
    if _unreachable("web", args.settings, redis=True):
        return 1
    run_web(args.settings, args.host or args.settings.host, args.port or args.settings.port)
    return 0


def _worker(args: argparse.Namespace) -> int:
    from bot.cli.serve import run_worker

    if not args.settings.redis_url:
        sys.stderr.write("forgebot worker needs FORGEBOT_REDIS_URL\n")
        return 2
    if _unreachable("worker", args.settings, redis=True):
        return 1
    run_worker(args.settings)
    return 0


def _chosen(argv: Sequence[str]) -> str | None:
    """The command argv names (the top level has no option that takes a value)."""
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command line; given `argv`, only the module of the command it names is imported.

    Without `argv` every command's module registers its parser (tests parse any command line).
    """
    parser = argparse.ArgumentParser(prog="forgebot", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = sub.add_parser("serve", help="receiver and worker process, with a private Redis unless configured")
    _add_server_args(serve)
    serve.set_defaults(handler=_serve)
    web = sub.add_parser("web", help="the webhook receiver only")
    _add_server_args(web)
    web.set_defaults(handler=_web)
    sub.add_parser("worker", help="the worker only").set_defaults(handler=_worker)
    modules = dict.fromkeys(module for module, _ in COMMANDS.values())
    chosen = _chosen(argv) if argv is not None else None
    if argv is None:
        wanted = set(modules)
    else:
        wanted = {COMMANDS[chosen][0]} if chosen in COMMANDS else set()
    for module in modules:
        if module in wanted:
            importlib.import_module(module).register(sub)
    for name, (module, text) in COMMANDS.items():
        if module not in wanted:  # listed in the overview only: naming it loads its real parser
            sub.add_parser(name, help=text, add_help=False)
    return parser


def _load_settings() -> Settings | None:
    """The settings, or None after one line per refused variable; unknown variables are named."""
    from foundation.settings import ConfigError, Settings

    for line in Settings.unknown_variables():
        sys.stderr.write(f"forgebot: {line}\n")
    try:
        return Settings.load()
    except ConfigError as exc:
        for line in exc.lines:
            sys.stderr.write(f"forgebot: {line}\n")
        return None


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(words).parse_args(words)  # `--help` ends here, before any setting is read
    settings = _load_settings()
    if settings is None:
        return 2
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    from foundation import cabundle
    from foundation.redact import install, secrets_of

    install(secrets_of(settings))
    args.settings = settings
    args.data_dir = settings.data_dir
    try:
        cabundle.share(os.environ, settings.data_dir / "tls")  # before any client or child process exists
        return int(args.handler(args))
    except cabundle.BundleError as exc:
        sys.stderr.write(f"forgebot: {exc}\n")
        return 2
    except KeyboardInterrupt:  # Ctrl-C: a line, not a traceback (`index` also says what it kept)
        from project.index.progress import INTERRUPTED  # not at the top: `--help` loads the command line alone

        sys.stderr.write(f"forgebot {args.command}: interrupted\n")
        return INTERRUPTED
    except BrokenPipeError:
        if not _reader_gone():
            raise
        return 141  # what a shell reports for a command its reader stopped (128 + SIGPIPE)
    except OSError as exc:
        said = _data_dir_problem(exc, settings.data_dir)
        if not said:
            raise
        sys.stderr.write(f"forgebot {args.command}: {said}\n")
        return 2


# what a data directory this user cannot use raises: a path with no permission, a read-only or a full disk
_UNUSABLE = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT})


def _data_dir_problem(exc: OSError, data_dir: Path) -> str:
    """One line for an unusable data directory ("" for any other error): a volume owned by another user or
    mounted read-only is a container's first-day mistake, and every command ended in a traceback."""
    if exc.errno not in _UNUSABLE or not isinstance(exc.filename, str | os.PathLike):
        return ""
    path = Path(os.fsdecode(exc.filename)).absolute()
    root = data_dir.absolute()
    if path != root and root not in path.parents:
        return ""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"the data directory {root} is full ({exc.strerror}: {path}): free space or set FORGEBOT_DATA_DIR"
    return (f"the data directory {root} cannot be written ({exc.strerror}: {path}): set FORGEBOT_DATA_DIR to a "
            f"directory this user (uid {os.getuid()}) may write, or fix its owner or mount")


def _reader_gone() -> bool:
    """Whether standard output's reader has gone (`forgebot symbols . | head`): the answer is then cut
    where the user wanted it, not a failure to print a traceback for. A pipe whose reading end is
    closed polls as an error; any other broken pipe (a socket) is a real failure and is raised.
    Standard output is pointed at /dev/null so the interpreter's flush at exit does not fail again."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        gone = any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll (not Linux), or no file behind stdout
        return False
    if gone:
        sink = os.open(os.devnull, os.O_WRONLY)
        os.dup2(sink, sys.stdout.fileno())
        os.close(sink)
    return gone


if __name__ == "__main__":
    raise SystemExit(main())
