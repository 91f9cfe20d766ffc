"""Findings across rounds: noise control, identity, line mapping, reconciliation and lack of progress.

Pure functions over `Finding`s, shared by the review publisher (re-review on a change) and the
implement route (fix rounds). Identity is by place and subject, not by wording: two findings are
the same when they sit on overlapping lines of the same file (after mapping the older one through
the diff between the two heads) and name the same criterion or concern — a model rephrasing a
finding must not make it new, and closing one finding must not count as progress on another.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

from foundation.forge.models import Hunk, LineKind
from graph.schemas import SEVERITY_RANK, Finding

SLACK = 3  # lines apart that still count as the same place (a rewording often moves the anchor)


class Tracked(BaseModel):
    """A finding posted on a change, remembered until it is fixed."""

    key: str
    finding: Finding
    comment_id: int | None = None  # the inline comment opening its thread; None when only in the summary
    thread: str = ""
    review: bool = False
    status: Literal["open", "fixed", "answered"] = "open"


class ReviewRecord(BaseModel):
    """What a published review leaves for the next one on the same change (kept by the review store)."""

    head: str
    tracked: list[Tracked] = Field(default_factory=list)
    summary_comment_id: int | None = None

    @property
    def open(self) -> list[Tracked]:
        return [t for t in self.tracked if t.status != "fixed"]


def finding_key(finding: Finding) -> str:
    """A short stable id for a finding's first sighting (used in markers and the store)."""
    text = f"{finding.path}\0{finding.line}\0{finding.criteria}\0{finding.concern}\0{finding.message}"
    return hashlib.sha1(text.encode()).hexdigest()[:10]


def _span(finding: Finding) -> tuple[int, int] | None:
    if finding.line is None:
        return None
    return finding.line, finding.end_line or finding.line


def same_finding(a: Finding, b: Finding) -> bool:
    """Same file, overlapping lines (within SLACK) and the same criterion or concern."""
    if a.path != b.path or a.side != b.side:
        return False
    subject = bool(set(a.criteria) & set(b.criteria)) or (
        a.concern.strip().lower() == b.concern.strip().lower() and not (a.criteria or b.criteria))
    sa, sb = _span(a), _span(b)
    if sa is None or sb is None:
        return subject and sa == sb and (a.path is not None or a.message.lower() == b.message.lower())
    return subject and sa[0] <= sb[1] + SLACK and sb[0] <= sa[1] + SLACK


@dataclass
class Noise:
    """What noise control dropped, counted for the summary."""

    below_threshold: int = 0
    linter: int = 0
    over_cap: int = 0


def filter_noise(findings: Sequence[Finding], threshold: str, cap: int,
                 linted: Iterable[tuple[str, int]] = ()) -> tuple[list[Finding], Noise]:
    """Drop findings below `threshold`, those a profile linter already reports, then keep the worst `cap`."""
    if threshold not in SEVERITY_RANK or cap < 0:
        raise ValueError(f"bad noise settings: threshold {threshold!r}, cap {cap}")
    lint = set(linted)
    noise = Noise()
    kept: list[Finding] = []
    for f in findings:
        if SEVERITY_RANK[f.severity] < SEVERITY_RANK[threshold]:
            noise.below_threshold += 1
        elif _linted(f, lint):
            noise.linter += 1
        else:
            kept.append(f)
    kept.sort(key=lambda f: -SEVERITY_RANK[f.severity])  # stable: the model's order within a severity
    noise.over_cap = max(0, len(kept) - cap)
    return kept[:cap], noise


def _linted(finding: Finding, lint: set[tuple[str, int]]) -> bool:
    span = _span(finding)
    if finding.path is None or span is None:
        return False
    return any((finding.path, n) in lint for n in range(span[0], span[1] + 1))


def map_line(hunks: Sequence[Hunk], line: int) -> int | None:
    """Where old line `line` is after the diff `hunks`; None when the diff changed or removed it."""
    shift = 0
    for hunk in hunks:
        if line < hunk.old_start:
            break
        for row in hunk.lines:
            if row.kind is not LineKind.ADDED and row.old_pos == line:
                return row.new_pos if row.kind is LineKind.CONTEXT else None
        if hunk.old_count == 0 and line == hunk.old_start:
            return None  # insertion right after this line: the neighbourhood changed
        shift = hunk.new_start + hunk.new_count - (hunk.old_start + hunk.old_count)
    return line + shift


def moved(finding: Finding, delta: Mapping[str, Sequence[Hunk]], renames: Mapping[str, str]) -> Finding | None:
    """The finding carried through the delta, or None when the code at its lines changed (or is gone)."""
    path = renames.get(finding.path or "", finding.path)
    span = _span(finding)
    if finding.path is None or span is None or finding.side == "old":
        return finding.model_copy(update={"path": path})
    hunks = delta.get(finding.path)
    if hunks is None:
        return finding.model_copy(update={"path": path})
    lines = [map_line(hunks, n) for n in range(span[0], span[1] + 1)]
    if any(n is None for n in lines):
        return None
    first, last = lines[0], lines[-1]
    return finding.model_copy(update={"path": path, "line": first, "end_line": last if finding.end_line else None})


@dataclass
class Reconciled:
    """A re-review's outcome against what was open before."""

    carried: list[Tracked] = field(default_factory=list)  # still open, lines moved to the new head
    fixed: list[Tracked] = field(default_factory=list)  # the code changed and the finding was not raised again
    new: list[Finding] = field(default_factory=list)  # to post
    again: list[tuple[Tracked, Finding]] = field(default_factory=list)  # raised again after the code changed
    suppressed: list[Finding] = field(default_factory=list)  # answered by the author, code unchanged


def reconcile(previous: Sequence[Tracked], current: Sequence[Finding], delta: Mapping[str, Sequence[Hunk]],
              renames: Mapping[str, str], deleted: Iterable[str] = ()) -> Reconciled:
    """Match this round's findings with the open ones: carry, fix, suppress, or post as new."""
    gone = set(deleted)
    out = Reconciled()
    claimed: set[int] = set()
    for old in previous:
        if old.status == "fixed":
            continue
        carried = None if old.finding.path in gone else moved(old.finding, delta, renames)
        match = next((i for i, f in enumerate(current) if i not in claimed
                      and same_finding(carried or _renamed(old.finding, renames), f)), None)
        if match is not None:
            claimed.add(match)
        if carried is not None:  # code unchanged: a repeat is a duplicate (or answered: not raised again)
            if match is not None and old.status == "answered":
                out.suppressed.append(current[match])
            out.carried.append(old.model_copy(update={"finding": carried}))
        elif match is not None:  # the code changed and the problem is still there
            out.again.append((old.model_copy(update={"finding": current[match], "status": "open"}), current[match]))
        else:
            out.fixed.append(old.model_copy(update={"status": "fixed"}))
    out.new = [f for i, f in enumerate(current) if i not in claimed]
    return out


def _renamed(finding: Finding, renames: Mapping[str, str]) -> Finding:
    return finding.model_copy(update={"path": renames.get(finding.path or "", finding.path)})


def stalled(rounds: Sequence[Sequence[Finding]], patience: int = 2) -> list[Finding]:
    """Findings of the last round already raised in each of the `patience` rounds before it.

    The implement route calls this after each fix round: a stalled finding is a dead end for that
    finding only — other findings closing meanwhile is progress elsewhere, not on this one.
    """
    if patience < 1:
        raise ValueError("patience must be >= 1")
    if len(rounds) <= patience:
        return []
    earlier = rounds[-patience - 1:-1]
    return [f for f in rounds[-1] if all(any(same_finding(f, g) for g in past) for past in earlier)]
