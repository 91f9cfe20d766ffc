"""Evidence checking: every `path:line` range a report cites must exist in the current source.

A model can cite a file it never opened or lines past a file's end. Code checks each range against
the checkout before the report is written: a range that exists is kept; one that does not is
dropped from the evidence and listed separately, so the report never presents it as fact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from graph.schemas import Evidence
from graph.tools.paths import PathRejected, resolve_in_worktree


@dataclass
class CheckedEvidence:
    kept: list[Evidence] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # "path:start-end: why"


def line_count(root: Path, path: str) -> int | None:
    """Lines in the repository file `path`, or None when it is not a file inside the checkout."""
    try:
        target = resolve_in_worktree(root, path)
    except PathRejected:
        return None
    if not target.is_file():
        return None
    with target.open("rb") as handle:
        data = handle.read()
    return data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)


def check_evidence(root: Path, evidence: Sequence[Evidence]) -> CheckedEvidence:
    """Keep the ranges that exist in the checkout at `root`; say why each other one was dropped."""
    checked = CheckedEvidence()
    counts: dict[str, int | None] = {}
    for item in evidence:
        if item.path not in counts:
            counts[item.path] = line_count(root, item.path)
        lines = counts[item.path]
        cited = f"{item.path}:{item.start_line}-{item.end_line}"
        if lines is None:
            checked.dropped.append(f"{cited}: no such file")
        elif item.end_line > lines:
            checked.dropped.append(f"{cited}: the file has {lines} lines")
        else:
            checked.kept.append(item)
    return checked


def existing_files(root: Path, paths: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split `paths` into files that exist in the checkout and those that do not."""
    present = [p for p in dict.fromkeys(paths) if line_count(root, p) is not None]
    return present, [p for p in dict.fromkeys(paths) if p not in present]
