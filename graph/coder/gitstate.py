"""What git says about a task worktree: snapshots of its whole state, diffs between them, commits.

A snapshot is the tree id of the worktree *including* uncommitted and untracked files, written
through a throwaway index, so "did anything change since this item began" has one exact answer
whether or not step commits are on.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from graph.coder.patch import GIT_ENV


class GitFailed(RuntimeError):
    """A git command on the worktree failed: an infrastructure problem, not the model's."""


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), "-c", "core.hooksPath=/dev/null", *args],
        capture_output=True, text=True, timeout=120, check=False, env={**GIT_ENV, **(env or {})},
    )
    if done.returncode != 0:
        raise GitFailed(f"git {args[0]} failed: {done.stderr.strip()[-400:]}")
    return done.stdout


def snapshot(root: Path) -> str:
    """The tree id of everything in the worktree now (tracked, modified and untracked, not ignored)."""
    with tempfile.TemporaryDirectory(prefix="forgebot-index-") as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        git(root, "read-tree", "HEAD", env=env)
        git(root, "add", "--all", env=env)
        return git(root, "write-tree", env=env).strip()


def changed_files(root: Path, old: str, new: str) -> list[str]:
    return [p for p in git(root, "diff", "--name-only", "--no-renames", old, new).splitlines() if p]


def diff(root: Path, old: str, new: str) -> str:
    return git(root, "diff", "--no-renames", old, new)


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def is_clean(root: Path) -> bool:
    return not git(root, "status", "--porcelain").strip()


def commit_all(root: Path, message: str, author: tuple[str, str]) -> str | None:
    """Commit every change as the bot; None when there was nothing to commit."""
    git(root, "add", "--all")
    if not git(root, "status", "--porcelain").strip():
        return None
    name, email = author
    ident = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name,
             "GIT_COMMITTER_EMAIL": email}
    git(root, "commit", "--quiet", "--no-verify", "-m", message, env=ident)
    return head(root)


def commits_touching(root: Path, base: str, path: str) -> list[str]:
    """This task's commits (after `base`) that changed `path`, newest first."""
    return git(root, "rev-list", f"{base}..HEAD", "--", path).split()


def exists_at(root: Path, revision: str, path: str) -> bool:
    return bool(git(root, "ls-tree", "--name-only", revision, "--", path).strip())


def reset_to(root: Path, base: str) -> None:
    """FULL_RESET: the worktree back to `base`, untracked files removed."""
    git(root, "reset", "--hard", "--quiet", base)
    git(root, "clean", "-fdq")
