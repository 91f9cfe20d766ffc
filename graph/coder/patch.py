"""apply_patch's guard: a unified diff is checked path by path before `git apply` may touch disk.

The reference list is git's own escape cases (t4139-apply-escape): `..` and absolute paths, a
symlink created by the patch and then written through, a symlink already in the tree, plus what a
bot must never edit: `.git/` anywhere, CI configuration and hooks (unless `.forgebot.yml` lifts the
protection), and anything outside the task's write scope. Every check runs before the patch is
applied, so a refused patch writes nothing; `git apply --check` then rejects patches that do not
fit the current text, again before any write.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from bot.gitrunner import Completed, Repo, run

# Paths a change may not edit unless the repository configuration allows them explicitly.
DEFAULT_PROTECTED = (
    ".gitlab-ci.yml", ".gitlab-ci/", ".github/", ".githooks/", ".husky/", ".circleci/", "Jenkinsfile",
    ".travis.yml", "azure-pipelines.yml", ".forgebot.yml", ".gitmodules",
)
_HEADER = re.compile(r"^(?:--- |\+\+\+ |rename from |rename to |copy from |copy to )(.*)$")
_QUOTED = r'"(?:[^"\\]|\\.)*"'
_DIFF_GIT = re.compile(rf"^diff --git ({_QUOTED}|\S+) ({_QUOTED}|\S+)$")
_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
_MODE = re.compile(r"^(?:new file mode|new mode|old mode|deleted file mode) (\d+)$")


class PatchRefused(ValueError):
    """The patch names a path it may not write; nothing was written."""


@dataclass(frozen=True)
class PatchPolicy:
    """What the task may write: its scope, and which protected paths the repository allows."""

    writable: Callable[[], Collection[str]]
    protected: Callable[[str], bool]


def patch_paths(patch: str) -> list[str]:
    """Every path a unified diff names (old and new sides), with `a/`/`b/` prefixes removed."""
    paths: list[str] = []
    for line in patch.splitlines():
        if match := _DIFF_GIT.match(line):
            paths += [_strip(match.group(1)), _strip(match.group(2))]
        elif line.startswith("diff --git "):
            raise PatchRefused(f"{line[:200]!r}: unreadable `diff --git` header")
        elif (match := _HEADER.match(line)) is not None:
            raw = match.group(1)
            raw = raw.strip() if raw.startswith('"') else raw.split("\t")[0].strip()
            if raw != "/dev/null":
                prefix = line.startswith(("--- ", "+++ "))
                paths.append(_strip(raw) if prefix else canonical(unquote(raw)))
    return [p for p in dict.fromkeys(paths) if p]


def unquote(raw: str) -> str:
    """git's C-quoted path (`"a/\\056gitlab-ci.yml"`) decoded as git apply reads it; plain paths as is."""
    if not (len(raw) >= 2 and raw.startswith('"') and raw.endswith('"')):
        if raw.startswith('"'):
            raise PatchRefused(f"{raw[:200]!r}: unterminated quoted path")
        return raw
    body, out, i = raw[1:-1], bytearray(), 0
    while i < len(body):
        char = body[i]
        if char != "\\":
            out += char.encode("utf-8")
            i += 1
            continue
        nxt = body[i + 1:i + 2]
        if nxt in _C_ESCAPES:
            out.append(_C_ESCAPES[nxt])
            i += 2
        elif re.fullmatch(r"[0-3][0-7]{2}", body[i + 1:i + 4]):
            out.append(int(body[i + 1:i + 4], 8))
            i += 4
        else:
            raise PatchRefused(f"{raw[:200]!r}: invalid escape in a quoted path")
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PatchRefused(f"{raw[:200]!r}: a quoted path that is not UTF-8") from exc


def canonical(path: str) -> str:
    """The one spelling every check compares: no NUL or control characters, no `.` or empty parts.

    `..` is kept so that check_path refuses it by name; a backslash is refused because git and the
    file tools would read it differently.
    """
    bad = next((c for c in path if ord(c) < 0x20 or ord(c) == 0x7F), None)
    if bad is not None:
        raise PatchRefused(f"{path!r}: NUL or control character {bad!r} in a path")
    if "\\" in path:
        raise PatchRefused(f"{path!r}: backslashes are not allowed in paths")
    if path.startswith("/"):
        return path  # refused as absolute by check_path, with that reason
    return "/".join(part for part in path.split("/") if part not in ("", "."))


def _strip(raw: str) -> str:
    """`a/path` → `path`. git apply strips one component (-p1), so a header without the prefix would
    write somewhere else than it names: refused rather than guessed."""
    raw = unquote(raw)
    canonical(raw)  # control characters are refused before anything else reads the name
    if raw.startswith("/"):
        return raw  # refused as absolute by check_path, with that reason
    if raw[:2] not in ("a/", "b/"):
        raise PatchRefused(f"{raw!r}: file headers must be `--- a/<path>` and `+++ b/<path>`")
    return canonical(raw[2:])


def check_path(root: Path, path: str) -> str:
    """Reason `path` may not be written under `root`, or "" when it may."""
    pure = PurePosixPath(path)
    if pure.is_absolute() or path.startswith("~"):
        return "absolute paths are not allowed"
    if ".." in pure.parts:
        return "'..' is not allowed in paths"
    if ".git" in pure.parts:
        return "the .git directory is not part of the code"
    current = root
    for part in pure.parts:
        current = current / part
        if current.is_symlink():
            return f"{PurePosixPath(*current.relative_to(root).parts)} is a symlink"
    return ""


def check_patch(root: Path, patch: str, policy: PatchPolicy) -> list[str]:
    """Every path the patch would write, after refusing escapes, symlinks, protected and unscoped paths."""
    if not patch.strip():
        raise PatchRefused("the patch is empty")
    if "\x00" in patch:
        raise PatchRefused("the patch contains a NUL byte")
    for line in patch.splitlines():
        mode = _MODE.match(line)
        if mode and mode.group(1) == "120000":
            raise PatchRefused("the patch creates or changes a symlink")
        if line.startswith("GIT binary patch"):
            raise PatchRefused("binary patches are not accepted")
    paths = patch_paths(patch)
    if not paths:
        raise PatchRefused("no file header (--- a/path, +++ b/path) found in the patch")
    scope = set(policy.writable())
    for path in paths:
        reason = check_path(root, path)
        if not reason and policy.protected(path):
            reason = "a protected path (CI configuration, hooks, bot config); .forgebot.yml must allow it"
        if not reason and path not in scope:
            reason = "outside the write scope of the plan; use request_file to ask for it"
        if reason:
            raise PatchRefused(f"{path}: {reason}")
    return paths


def apply(root: Path, patch: str, policy: PatchPolicy) -> list[str]:
    """Check, then apply `patch` in `root`; returns the paths written. Raises PatchRefused."""
    paths = check_patch(root, patch, policy)
    text = patch if patch.endswith("\n") else patch + "\n"
    for extra in ([], ["--recount"]):
        check = _git_apply(root, text, "--check", *extra)
        if check.returncode == 0:
            done = _git_apply(root, text, *extra)
            if done.returncode != 0:
                raise PatchRefused(f"git apply failed: {done.stderr.strip()[-600:]}")
            _no_symlinks(root, paths)
            return paths
    raise PatchRefused(f"the patch does not apply to the current text: {check.stderr.strip()[-600:]}")


def _git_apply(root: Path, patch: str, *args: str) -> Completed:
    # No --unsafe-paths: git itself refuses paths outside the tree, a second line behind ours.
    return run(["apply", "--whitespace=nowarn", *args, "-"], Repo.at(root), input=patch, timeout=60)


def _no_symlinks(root: Path, paths: list[str]) -> None:
    """Belt and braces: a write that left a symlink behind is undone and refused."""
    for path in paths:
        target = root / path
        if target.is_symlink():
            target.unlink()
            raise PatchRefused(f"{path}: the patch left a symlink; it was removed")


def protection(patterns: Collection[str], allowed: Collection[str]) -> Callable[[str], bool]:
    """`protected(path)`: the defaults plus the repository's patterns, minus what it allows."""
    from fnmatch import fnmatchcase

    def matches(path: str, pattern: str) -> bool:
        return path.startswith(pattern) if pattern.endswith("/") else fnmatchcase(path, pattern)

    def protected(path: str) -> bool:
        if any(matches(path, p) for p in allowed):
            return any(matches(path, p) for p in patterns)
        return any(matches(path, p) for p in (*DEFAULT_PROTECTED, *patterns))

    return protected
