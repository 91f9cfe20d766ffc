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

from foundation.forge import diff
from foundation.gitrunner import Completed, Repo, run
from project import filetext
from project.repoconfig import CONFIG_PATHS

# Paths a change may not edit unless the repository configuration allows them explicitly.
DEFAULT_PROTECTED = (
    ".gitlab-ci.yml", ".gitlab-ci/", ".github/", ".githooks/", ".husky/", ".circleci/", "Jenkinsfile",
    ".travis.yml", "azure-pipelines.yml", *CONFIG_PATHS, ".gitmodules",
)
_MODE = re.compile(r"^(?:new file mode|new mode|old mode|deleted file mode) (\d+)$")
_NO_NEWLINE_MARK = re.compile(r"^\\ No newline at end of file\n", re.M)


class PatchRefused(ValueError):
    """The patch names a path it may not write; nothing was written."""


@dataclass(frozen=True)
class PatchPolicy:
    """What the task may write: its scope, and which protected paths the repository allows."""

    writable: Callable[[], Collection[str]]
    protected: Callable[[str], bool]


def patch_paths(patch: str) -> list[str]:
    """Every path a unified diff names (old and new sides, renames, copies), canonical, prefixes removed.

    Read through the one diff model (`foundation.forge.diff`, strict: an ambiguous `diff --git` line is
    refused); anything it cannot read is refused, never guessed.
    """
    try:
        files = diff.parse(patch, strict=True)
    except diff.DiffError as exc:
        raise PatchRefused(str(exc)) from exc
    return list(dict.fromkeys(p for file in files for p in file.named))


def unquote(raw: str) -> str:
    """git's C-quoted path (`"a/\\056gitlab-ci.yml"`) decoded as git apply reads it; plain paths as is."""
    try:
        return diff.unquote(raw)
    except diff.DiffError as exc:
        raise PatchRefused(str(exc)) from exc


def canonical(path: str) -> str:
    """The one spelling every check compares (`foundation.forge.diff.canonical`); PatchRefused when refused."""
    try:
        return diff.canonical(path)
    except diff.DiffError as exc:
        raise PatchRefused(str(exc)) from exc


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
    text = patch if patch.endswith("\n") else patch + "\n"
    # the editable view ends a file's last line for git apply and takes that end away after
    # (`project.filetext`), so a marker saying a side has none would no longer fit
    text = _NO_NEWLINE_MARK.sub("", text)
    problem = ""
    # as written, then with its hunk counts recomputed (models miscount): git applies exactly the
    # text the guard read, never `--recount`, so both read the same hunks and the same headers
    for candidate in dict.fromkeys([text, diff.recount(text)]):
        try:
            paths = check_patch(root, candidate, policy)
        except PatchRefused as exc:
            if candidate == text and "not a unified diff" in str(exc):
                problem = str(exc)
                continue  # counts that do not fit their lines: the recounted text may read
            raise
        try:
            # a legacy-encoded or CRLF file is patched as the text the model read (`project.filetext`)
            with filetext.editable_view(root, paths):
                check = _git_apply(root, candidate, "--check")
                if check.returncode == 0:
                    done = _git_apply(root, candidate)
                    if done.returncode != 0:
                        raise PatchRefused(f"git apply failed: {done.stderr.strip()[-600:]}")
                    _no_symlinks(root, paths)
                    return paths
        except filetext.Unencodable as exc:
            raise PatchRefused(str(exc)) from None
        problem = check.stderr.strip()[-600:]
    raise PatchRefused(f"the patch does not apply to the current text: {problem}")


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
