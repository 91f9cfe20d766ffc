"""Cost of the hardened git runner: plain `git` against `foundation.gitrunner` on a bot task worktree.

Run from the repository root: PYTHONPATH=. .venv/bin/python tests/bench/bench_gitrunner.py
Prints the median wall time of `git rev-parse HEAD` and `git status --porcelain` each way, and of
`git add --all` (which also lists the index for planted repositories), with the ratios to plain git.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from foundation.gitrunner import git
from foundation.settings import WorkspaceSettings
from foundation.workspace import Workspaces

ROUNDS = 30
FILES = 2000
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
       "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@a", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@a"}


def _median(run: Callable[[], object]) -> float:
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _worktree(work: Path) -> Path:
    seed = work / "seed"
    subprocess.run(["git", "init", "-q", "-b", "main", str(seed)], env=ENV, check=True)
    for number in range(FILES):
        (seed / f"f{number}.php").write_text(f"<?php // {number}\n")
    subprocess.run(["git", "add", "-A"], cwd=seed, env=ENV, check=True)
    subprocess.run(["git", "commit", "-qm", "seed"], cwd=seed, env=ENV, check=True)
    spaces = Workspaces(work / "ws", WorkspaceSettings(allowed_protocols=("file",)))

    async def make() -> Path:
        await spaces.mirror("bench-1", str(seed))
        return await spaces.worktree("bench-1", "task1", "forgebot/bench", "origin/main")

    return asyncio.run(make())


def main() -> None:
    with tempfile.TemporaryDirectory() as work:
        root = _worktree(Path(work))
        lines = []
        for args in (["rev-parse", "HEAD"], ["status", "--porcelain"], ["add", "--all"]):
            plain = _median(lambda a=args: subprocess.run(["git", *a], cwd=root, env=ENV, capture_output=True))
            hardened = _median(lambda a=args: git(root, *a))
            name = " ".join(args)
            lines.append(f"{name:18} plain {plain * 1000:6.1f} ms  runner {hardened * 1000:6.1f} ms  "
                         f"{hardened / plain:.1f}x")
    sys.stdout.write(f"bot task worktree, {FILES} files, median of {ROUNDS}\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
