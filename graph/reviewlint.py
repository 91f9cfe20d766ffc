"""What the profile's linters already report on a change: `(path, line)` pairs review findings skip.

A reviewer repeating the linter is noise: the linter's own report is more precise and already in
front of the author. The review route runs the profile's lint commands (through the check sandbox,
as every check does) on the changed files and reads the locations from their output; findings on
those lines are dropped and counted in the summary.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from foundation.settings import Settings
from project.checks import CheckContext, run_lints, sandbox_policy
from project.repoconfig import RepoConfig

# `path:line:col: …` (phpcs --report=emacs, most linters) and `… in path on line N` (php -l).
_COLON = re.compile(r"^(?P<path>[^\s:]+):(?P<line>\d+)(?::\d+)?:", re.MULTILINE)
_PHP = re.compile(r" in (?P<path>\S+) on line (?P<line>\d+)")


def locations(output: str, root: Path, known: Sequence[str]) -> list[tuple[str, int]]:
    """Repository-relative `(path, line)` pairs named in linter output, limited to `known` paths."""
    prefix = str(root.resolve()) + "/"
    found: list[tuple[str, int]] = []
    for match in [*_COLON.finditer(output), *_PHP.finditer(output)]:
        path = match.group("path").removeprefix(prefix).removeprefix("./")
        if path in known:
            found.append((path, int(match.group("line"))))
    return sorted(set(found))


def linted(worktree: Path, settings: Settings, config: RepoConfig, files: Sequence[str]) -> list[tuple[str, int]]:
    """Run the profile's linters on `files` and return where they report problems.

    The sandbox is the gates' one: the whole data directory (mirrors, other worktrees, the task
    store) and the secrets are hidden, the worktree under review stays visible at its own path.
    """
    policy = sandbox_policy(settings, config)
    policy = policy.model_copy(update={"timeout_seconds": min(config.commands.timeout_seconds, 300)})
    ctx = CheckContext(worktree=worktree, profile=config.resolve_profile(), changed_files=tuple(files),
                       policy=policy, base_env={"PATH": "/usr/local/bin:/usr/bin:/bin"})
    found: list[tuple[str, int]] = []
    for result in run_lints(ctx):
        if result.status == "failed":
            found.extend(locations(result.output, worktree, files))
    return sorted(set(found))
