"""The diff a review inspects: `git diff base..HEAD` per file, with size limits applied before budgeting.

Large diffs are where peer bots silently truncate. Here every file is either reviewed whole or
listed as not reviewed with the reason (binary, generated, over the per-file limit, over the
review's token budget), and that list reaches the summary comment. Limits apply per file first,
so one huge lock file cannot push the real changes out of the budget.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path

from foundation.forge.diff import DiffError, FilePatch, parse
from foundation.gitrunner import git, git_bytes
from graph.runtime.budget import estimate_tokens
from project import filetext

GENERATED = ("*.lock", "*.min.js", "*.min.css", "*.map", "vendor/*", "node_modules/*")


@dataclass(frozen=True)
class DiffLimits:
    max_file_lines: int = 1500  # diff lines of one file; more is listed as not reviewed
    budget_tokens: int = 24_000  # the whole diff handed to the reviewer
    generated: tuple[str, ...] = GENERATED


@dataclass
class DiffView:
    """What the reviewer sees and what it does not (with why)."""

    base: str
    head: str
    files: list[FilePatch] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)

    @property
    def text(self) -> str:
        return "".join(f.text for f in self.files)

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self.files]


def collect(root: Path, base: str, limits: DiffLimits | None = None, head: str = "HEAD") -> DiffView:
    """The diff `base..head` of the checkout at `root`, limited per file, then fitted to the budget."""
    limits = limits or DiffLimits()
    for revision in (base, head):
        if revision.startswith("-"):
            raise DiffError(f"revision {revision!r} looks like an option")
    head_sha = git(root, "rev-parse", "--verify", f"{head}^{{commit}}").strip()
    base_sha = git(root, "rev-parse", "--verify", f"{base}^{{commit}}").strip()
    raw = filetext.decode_lines(git_bytes(  # a legacy-encoded file's lines as the reviewer reads its text
        root, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/", "-M",
        base_sha, head_sha, "--"))
    view = DiffView(base=base_sha, head=head_sha)
    used = 0
    for part in parse(raw):
        reason = _skip_reason(part, limits)
        cost = estimate_tokens(part.text)
        if reason is None and used + cost > limits.budget_tokens:
            reason = f"over the review's diff budget ({limits.budget_tokens} tokens)"
        if reason is not None:
            view.skipped.append((part.path, reason))
            continue
        view.files.append(part)
        used += cost
    return view


def _skip_reason(part: FilePatch, limits: DiffLimits) -> str | None:
    if part.binary:
        return "binary file"
    if any(fnmatch.fnmatch(part.path, pattern) for pattern in limits.generated):
        return "generated or vendored file"
    if part.lines > limits.max_file_lines:
        return f"diff of {part.lines} lines is over the per-file limit of {limits.max_file_lines}"
    return None
