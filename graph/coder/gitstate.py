"""What git says about a task worktree: snapshots of its whole state, diffs between them, commits.

A snapshot is the tree id of the worktree *including* uncommitted and untracked files, written
through a throwaway index, so "did anything change since this item began" has one exact answer
whether or not step commits are on.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from foundation.gitrunner import GitError, git
from foundation.signing import Committer, SigningError


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
    return git(root, "diff", "--no-ext-diff", "--no-textconv", "--no-renames", old, new)


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def is_clean(root: Path) -> bool:
    return not git(root, "status", "--porcelain").strip()


Guard = Callable[[str], str]  # repository-relative path -> reason it may not be committed ("" when it may)


def staged(root: Path) -> list[str]:
    """Every path in the index that differs from HEAD (NUL-separated, so no quoting to undo)."""
    return [p for p in git(root, "diff", "--cached", "--name-only", "--no-renames", "-z").split("\0") if p]


def drop_refused(root: Path, guard: Guard) -> list[tuple[str, str]]:
    """Unstage and restore to HEAD every staged path `guard` refuses; returns (path, reason) pairs.

    A refused file that HEAD has is put back as HEAD has it; one HEAD lacks is removed from the
    index and the disk, so nothing a check or a tool wrote outside the scope survives to a commit.
    """
    refused = [(p, reason) for p in staged(root) if (reason := guard(p))]
    for path, _ in refused:
        if exists_at(root, "HEAD", path):
            git(root, "reset", "--quiet", "HEAD", "--", path)
            git(root, "checkout", "HEAD", "--", path)
        else:
            git(root, "rm", "--cached", "--quiet", "--force", "--", path)
            target = root / path
            if target.is_file() or target.is_symlink():
                target.unlink()
    return refused


def commit_all(root: Path, message: str, committer: Committer, guard: Guard | None = None,
               refused: list[tuple[str, str]] | None = None) -> str | None:
    """Commit every change as the bot, signed when it has a signing key; None when there was nothing to commit.

    With `guard`, the staged set is checked path by path before the commit: refused paths are
    unstaged and restored (and appended to `refused`), never committed.
    """
    git(root, "add", "--all")
    if guard is not None:
        dropped = drop_refused(root, guard)
        if refused is not None:
            refused += dropped
        if staged(root) and any(guard(p) for p in staged(root)):
            raise GitError("refused paths are still staged; not committing")
    if not git(root, "status", "--porcelain").strip():
        return None
    try:
        with committer.signing() as (signed, config):
            git(root, "commit", "--quiet", "--no-verify", *signed, "-m", message, env=committer.env(), config=config)
    except (GitError, SigningError) as exc:
        if committer.signing_key is None:
            raise
        raise GitError(f"signing the commit with FORGEBOT_WORKSPACE__SIGNING_KEY failed: {exc}") from exc
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
