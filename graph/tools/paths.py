"""Path arguments checked against the worktree by code, whatever a prompt says.

Every tool that takes a path resolves it here: absolute paths, `..`, anything under `.git/` and
symlinks that lead out of the worktree are rejected with a message the model can act on.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from foundation.forge.diff import too_long


class PathRejected(ValueError):
    """A path argument names something outside the worktree or inside `.git/`."""


def resolve_in_worktree(root: Path, path: str) -> Path:
    """Return the real path of repository-relative `path` under `root`, or raise PathRejected."""
    if not path or "\x00" in path:
        raise PathRejected("path is empty or contains a NUL byte")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        raise PathRejected(f"{path!r}: control characters are not allowed in paths")
    if too_long(path):
        raise PathRejected(f"{path[:80]!r}…: {too_long(path)}")
    posix = PurePosixPath(path.replace("\\", "/"))
    if posix.is_absolute() or path.startswith("~"):
        raise PathRejected(f"{path!r}: use a path relative to the repository root")
    if ".." in posix.parts:
        raise PathRejected(f"{path!r}: '..' is not allowed in paths")
    if posix.parts and posix.parts[0] == ".git":
        raise PathRejected(f"{path!r}: the .git directory is not part of the code")
    real_root = root.resolve()
    target = (real_root / posix).resolve()
    if target != real_root and real_root not in target.parents:
        raise PathRejected(f"{path!r}: resolves outside the repository (symlink)")
    if ".git" in target.relative_to(real_root).parts[:1]:
        raise PathRejected(f"{path!r}: resolves into the .git directory")
    return target


def relative(root: Path, path: str) -> str:
    """The canonical repository-relative spelling of a validated path (for keys and messages)."""
    return resolve_in_worktree(root, path).relative_to(root.resolve()).as_posix() or "."
