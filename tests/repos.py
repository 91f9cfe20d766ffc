"""The fixture projects under `tests/fixtures/` as real git repositories.

Kept free of pytest: the durability tests' worker processes import it (through
`tests.fakes.checkout`) and start faster without loading the test runner.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` and return its output; a failure fails the test."""
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout


def init_repo(path: Path) -> Path:
    """Make `path` a git repository with everything in it committed on `main`."""
    git(path, "init", "-q", "-b", "main")
    git(path, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "add", "-A")
    git(path, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "-m", "initial")
    return path
