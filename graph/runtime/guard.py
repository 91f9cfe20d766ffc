"""ToolLoopGuard: recognises dead ends that a call budget alone would only bound.

Rules: the same tool and arguments again, alternating sequences (A B A B …), the same
tool error again, a read of lines already read, and runs of small adjacent reads. Every rule is
keyed by the disk state the call saw, so a retry after a patch is a new attempt, not a repeat.
The response depends on the cause and the role: a first repeat is refused with the `tool repeated`
fragment; a persistent loop ends the session the way that role should end — investigation
synthesises from its evidence, the reviewer reports an incomplete inspection, the coder stops as
looping (planner_amend takes over); an infrastructure failure is reported as such.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Cause(StrEnum):
    REPEAT = "repeat"
    ALTERNATING = "alternating"
    SAME_ERROR = "same_error"
    REDUNDANT_READ = "redundant_read"
    MICRO_READS = "micro_reads"
    INFRASTRUCTURE = "infrastructure"


class Action(StrEnum):
    REFUSE = "refuse"  # answer the call with an explanation, keep the session going
    SYNTHESIZE = "synthesize"  # stop tools, synthesise from the evidence gathered
    STOP_LOOPING = "stop_looping"  # end the session as looping
    REPORT = "report"  # end and report (incomplete inspection, infrastructure failure)


@dataclass(frozen=True)
class Verdict:
    cause: Cause
    action: Action
    detail: str


@dataclass(frozen=True)
class Read:
    path: str
    start: int
    end: int  # 0 means "to the end of the file"
    sha: str  # the file's content hash when the read was asked for


@dataclass(frozen=True)
class GuardLimits:
    repeats: int = 2  # identical calls allowed against one disk state; the next one fires
    alternating_cycles: int = 2  # A B A B (or A B C A B C) against one disk state
    same_errors: int = 3
    micro_run: int = 4
    micro_lines: int = 25
    strikes: int = 3  # refusals tolerated before the role's terminal action


_TERMINAL = {"analyzer": Action.SYNTHESIZE, "architect": Action.SYNTHESIZE, "reviewer": Action.REPORT,
             "coder": Action.STOP_LOOPING}


def signature(name: str, args: dict[str, Any]) -> str:
    return name + json.dumps(args, sort_keys=True, default=str)


@dataclass
class ToolLoopGuard:
    role: str
    limits: GuardLimits = field(default_factory=GuardLimits)
    history: list[tuple[str, str]] = field(default_factory=list)  # (signature, disk state)
    reads: list[Read] = field(default_factory=list)
    errors: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    strikes: int = 0
    repeat_refused: bool = False

    def __post_init__(self) -> None:
        if self.role not in _TERMINAL:
            raise ValueError(f"role {self.role!r} has no tool loop to guard")

    def check(self, name: str, args: dict[str, Any], disk: str, read: Read | None = None) -> Verdict | None:
        """Before running a call: None to run it, else what to do instead."""
        sig = signature(name, args)
        same_state = [s for s, d in self.history if d == disk]
        if same_state.count(sig) >= self.limits.repeats:
            return self._repeat(Cause.REPEAT, f"{name} with the same arguments {same_state.count(sig) + 1} times")
        if self._alternating([*same_state, sig]):
            return self._repeat(Cause.ALTERNATING, f"{name} is part of a repeating sequence of calls")
        if read is not None:
            if self._covered(read):
                span = f"{read.path}:{read.start}-{read.end or 'end'}"
                return self._refuse(Cause.REDUNDANT_READ, f"{span} was read already")
            if self._micro(read):
                return self._refuse(Cause.MICRO_READS, f"many small adjacent reads of {read.path}")
        return None

    def record(self, name: str, args: dict[str, Any], disk: str, *, read: Read | None = None,
               error: str | None = None, infrastructure: bool = False) -> Verdict | None:
        """After running a call: remember it; a verdict when its error shows a dead end."""
        self.history.append((signature(name, args), disk))
        if read is not None and error is None:
            self.reads.append(read)
        if error is None:
            return None
        if infrastructure:
            return Verdict(Cause.INFRASTRUCTURE, Action.REPORT, f"{name} failed: {error}")
        key = (name, error, disk)
        self.errors[key] += 1
        if self.errors[key] >= self.limits.same_errors:
            return Verdict(Cause.SAME_ERROR, _TERMINAL[self.role], f"{name} failed {self.errors[key]} times: {error}")
        return None

    def strike(self, cause: Cause, detail: str) -> Verdict:
        """A refusal decided outside the guard (a re-read of an injected file) counts as a strike too."""
        return self._refuse(cause, detail)

    def _repeat(self, cause: Cause, detail: str) -> Verdict:
        if self.repeat_refused:
            return Verdict(cause, _TERMINAL[self.role], detail)
        self.repeat_refused = True
        return self._refuse(cause, detail)

    def _refuse(self, cause: Cause, detail: str) -> Verdict:
        self.strikes += 1
        if self.strikes > self.limits.strikes:
            return Verdict(cause, _TERMINAL[self.role], detail + " (after repeated refusals)")
        return Verdict(cause, Action.REFUSE, detail)

    def _alternating(self, seq: list[str]) -> bool:
        cycles = self.limits.alternating_cycles
        for period in (2, 3):
            tail = seq[-period * cycles:]
            if len(tail) == period * cycles and len(set(tail[:period])) == period and tail == tail[:period] * cycles:
                return True
        return False

    def _covered(self, read: Read) -> bool:
        for old in self.reads:
            if old.path != read.path or old.sha != read.sha:
                continue
            if old.end == 0 and old.start <= read.start:
                return True
            if read.end != 0 and old.start <= read.start and read.end <= old.end:
                return True
        return False

    def _micro(self, read: Read) -> bool:
        run = [read]
        for old in reversed(self.reads):
            prev = run[-1]
            small = 0 < old.end - old.start + 1 <= self.limits.micro_lines
            if old.path != read.path or old.sha != read.sha or not small or abs(prev.start - old.end) > 3:
                break
            run.append(old)
        small_now = 0 < read.end - read.start + 1 <= self.limits.micro_lines
        return small_now and len(run) >= self.limits.micro_run
