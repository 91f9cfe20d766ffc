"""Live injection: the role's target files, read from disk before each model call.

Two tiers: a small file goes into the system context in full, a large one as an
outline. Limits on file count and bytes bound the cost; `Injection.metrics()` reports it. A fully
injected file may not be re-read (the refusal says where its text already is); outline-only files
still allow ranged reads of method bodies. Because every snapshot is taken from disk, a file the
coder just patched is injected as it is now, never as it was.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import prompts
from graph.runtime.budget import estimate_tokens
from graph.tools.files import outline
from graph.tools.paths import PathRejected, resolve_in_worktree
from project import filetext

Tier = Literal["full", "outline", "omitted"]
OutlineFn = Callable[[Path, str], str]


@dataclass(frozen=True)
class InjectionLimits:
    max_files: int = 8
    full_max_bytes: int = 16_000  # larger files are injected as an outline
    total_max_bytes: int = 80_000  # everything injected in one call


@dataclass(frozen=True)
class InjectedFile:
    path: str
    tier: Tier
    sha: str
    size: int
    text: str
    reason: str = ""  # why a file was outlined or omitted


def file_sha(root: Path, path: str) -> str:
    """Content hash of a worktree file; "absent" when it does not exist (yet)."""
    target = resolve_in_worktree(root, path)
    if not target.is_file():
        return "absent"
    return hashlib.sha1(target.read_bytes()).hexdigest()[:16]


@dataclass(frozen=True)
class Injection:
    files: tuple[InjectedFile, ...]

    def get(self, path: str) -> InjectedFile | None:
        return next((f for f in self.files if f.path == path), None)

    def metrics(self) -> dict[str, Any]:
        shown = [f for f in self.files if f.tier != "omitted"]
        return {
            "full": sum(f.tier == "full" for f in self.files),
            "outline": sum(f.tier == "outline" for f in self.files),
            "omitted": sum(f.tier == "omitted" for f in self.files),
            "bytes": sum(len(f.text.encode("utf-8")) for f in shown),
            "tokens": sum(estimate_tokens(f.text) for f in shown),
        }

    def render(self) -> str:
        """The system-message suffix: each file inside a boundary naming path, tier and hash."""
        blocks = [
            prompts.boundary("file", "repository", f.text, path=f.path, tier=f.tier, sha=f.sha)
            for f in self.files
            if f.tier != "omitted"
        ]
        omitted = [f"{f.path} ({f.reason})" for f in self.files if f.tier == "omitted"]
        if omitted:
            blocks.append("Not injected: " + "; ".join(omitted) + ". Read them with tools if needed.")
        return "\n\n".join(blocks)

    def reminder(self) -> str:
        return prompts.render(
            "runtime.files_in_context",
            full=[f.path for f in self.files if f.tier == "full"],
            outlined=[f.path for f in self.files if f.tier == "outline"],
        )

    def refusal(self, path: str) -> str | None:
        """Why a read of `path` is refused, or None when the read may run."""
        entry = self.get(path)
        if entry is None or entry.tier != "full":
            return None
        return (
            f"Not read again: {path} is already in the system message in full, inside "
            f'<file path="{path}" tier="full" sha="{entry.sha}">, current as of this call. Use that text.'
        )


def inject(
    root: Path, paths: Iterable[str], limits: InjectionLimits | None = None, outline_fn: OutlineFn = outline
) -> Injection:
    """Snapshot `paths` from disk now, applying the tiers and limits in the given order."""
    limits = limits or InjectionLimits()
    files: list[InjectedFile] = []
    total = 0
    for path in dict.fromkeys(paths):
        entry = _one(root, path, limits, total, len([f for f in files if f.tier != "omitted"]), outline_fn)
        total += len(entry.text.encode("utf-8")) if entry.tier != "omitted" else 0
        files.append(entry)
    return Injection(files=tuple(files))


def _one(root: Path, path: str, limits: InjectionLimits, total: int, shown: int, outline_fn: OutlineFn) -> InjectedFile:
    try:
        target = resolve_in_worktree(root, path)
    except PathRejected as exc:
        return InjectedFile(path, "omitted", "rejected", 0, "", str(exc))
    if not target.is_file():
        return InjectedFile(path, "omitted", "absent", 0, "", "does not exist yet")
    if shown >= limits.max_files:
        return InjectedFile(path, "omitted", file_sha(root, path), target.stat().st_size, "", "file-count limit")
    data = target.read_bytes()
    sha = hashlib.sha1(data).hexdigest()[:16]
    room = limits.total_max_bytes - total
    if len(data) <= limits.full_max_bytes and len(data) <= room:
        return InjectedFile(path, "full", sha, len(data), filetext.for_model(data))
    text = outline_fn(root, path)
    reason = "large file" if len(data) > limits.full_max_bytes else "total size limit"
    if len(text.encode("utf-8")) > room:
        return InjectedFile(path, "omitted", sha, len(data), "", "total size limit")
    return InjectedFile(path, "outline", sha, len(data), text, reason)
