"""One command in a check sandbox of its own, as the attack tests run it.

The product runs a whole run of checks in one sandbox (`project.checks.run_checks`); a test of one
attack needs only one command, in a run of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from project.sandbox import SandboxPolicy, SandboxResult, open_sandbox


def run_sandboxed(command: str, worktree: Path, policy: SandboxPolicy, base_env: Mapping[str, str]) -> SandboxResult:
    """Run `command` in `worktree` under `policy`, in a sandbox opened and closed for it."""
    with open_sandbox(worktree, policy, base_env) as box:
        return box.run(command)
