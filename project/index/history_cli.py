"""`forgebot history PATH FQN [--json] [-n N]`: the commits that changed one symbol of a checkout.

The symbol is named as in the code (`App\\Lock\\LockManager::timeoutSeconds`, `LockManager::acquire`,
a class or function name) and followed across edits, moves within its file, renames of the method or
class and moves of its file to another namespace. Each commit comes with its message, the merge
request or issue it belongs to, and the hunks that touched the symbol. The index is brought up to date
first, as for `forgebot memory` (nothing is redone when the checkout has not changed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from foundation.gitrunner import GitTampered
from project.index.db import connect
from project.index.memory_cli import checked_root, fresh_index
from project.index.memory_history import MAX_COMMITS
from project.index.symbol_history import history, render


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("history", help="the commits that changed one symbol, with their hunks")
    parser.add_argument("path", type=Path, help="the checkout (a git worktree)")
    parser.add_argument("fqn", help="the symbol: a fully qualified name, Class::member, or a class or function name")
    parser.add_argument("--json", action="store_true", help="one JSON object: name, names, steps, notes")
    parser.add_argument("-n", type=int, default=20, help="commits (default 20, newest first)")
    parser.add_argument("--max-commits", type=int, default=MAX_COMMITS,
                        help=f"newest commits to remember (default {MAX_COMMITS})")
    parser.set_defaults(handler=run_history)


def run_history(args: argparse.Namespace) -> int:
    if args.n < 1 or args.max_commits < 1 or not args.fqn.strip():
        sys.stderr.write("forgebot history: -n and --max-commits must be at least 1, and FQN not empty\n")
        return 2
    root = checked_root(args, "history")
    if root is None:
        return 2
    try:
        index, refreshed = fresh_index(args, root, None)
    except GitTampered as exc:
        sys.stderr.write(f"forgebot history: {exc}\n")
        return 2
    with connect(index, readonly=True) as conn:
        answer = history(conn, root, args.fqn, limit=args.n)
    if args.json:
        sys.stdout.write(json.dumps({**answer.as_dict(), "notes": [*refreshed, *answer.notes]}) + "\n")
    else:
        sys.stdout.write(render(answer, refreshed))
    return 0 if answer.name else 1
