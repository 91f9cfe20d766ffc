"""How far a long command is, said on stderr: a command that falls silent for minutes reads as a hung one.

A first `forgebot memory` question on a long history reads thousands of commits, and `forgebot index`
with the offline model embeds every chunk of the checkout (14,463 chunks of a 3,400-file PHP project:
about half an hour on two cores). Each says where it is at most every `PROGRESS_SECONDS`, and the
vectors also how fast they go and about how long is left. Standard output keeps its lines for
scripts; these go to stderr.
"""

from __future__ import annotations

import sys
import time

PROGRESS_SECONDS = 10.0
# the exit status of any forgebot command Ctrl-C stopped, as a shell reports one a SIGINT ended (128 + 2)
INTERRUPTED = 130


class Progress:
    """A line on stderr, `label: …`, at most every `PROGRESS_SECONDS` (the first after that long)."""

    def __init__(self, label: str) -> None:
        self._label = label
        self._last = time.monotonic()

    def __call__(self, line: str) -> None:
        now = time.monotonic()
        if now - self._last >= PROGRESS_SECONDS:
            self._last = now
            self.say(line)

    def say(self, line: str) -> None:
        """`line` now, whatever the interval."""
        sys.stderr.write(f"{self._label}: {line}\n")
        sys.stderr.flush()


class Vectors:
    """What a command that embeds chunks says of it: a first line at once (how many, with which model,
    and that an interrupt keeps what is embedded), then the count with its pace; `done` and `total` are
    kept for the line an interrupt ends with (`interrupted`)."""

    def __init__(self, label: str, model: str, again: str) -> None:
        self._progress = Progress(label)
        self._model, self._again = model, again
        self._started = 0.0
        self.done = self.total = -1  # -1: embedding has not started

    def __call__(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        if not self._started:
            self._started = time.monotonic()
            if total:
                self._progress.say(f"embedding {total:,} chunks with {self._model}; Ctrl-C stops and keeps what "
                                   f"is embedded, `{self._again}` goes on from there")
            return
        self._progress(f"vectors: {done:,} of {total:,} chunks{pace(done, total, time.monotonic() - self._started)}")

    def interrupted(self) -> str:
        """What an interrupt leaves: the vectors made so far are kept (each batch is committed)."""
        if self.total < 0:
            return f"interrupted before the vectors; what was complete is kept, `{self._again}` builds the rest"
        return (f"interrupted: {self.done:,} of {self.total:,} chunks embedded, kept; `{self._again}` goes on "
                "from there (search answers meanwhile from its other legs)")

    def stopped(self, why: str) -> str:
        """What a failed embedding endpoint leaves: the graph and full-text tables, and the batches it made."""
        made = f"{max(self.done, 0):,} of {self.total:,} chunks embedded, kept" if self.total >= 0 else "no vectors"
        why = " ".join(why.split())  # an HTTP error's text spans lines
        return (f"the embeddings endpoint failed ({why}): the code graph and full-text tables are built, {made}; "
                f"check FORGEBOT_EMBEDDER__*, then `{self._again}` goes on from there (search answers meanwhile "
                "from its other legs)")


def pace(done: int, total: int, seconds: float) -> str:
    """` (12 a second, about 18 min left)`, ` (12 a second)` when all is done, "" before anything is."""
    if done <= 0 or seconds <= 0:
        return ""
    rate = done / seconds
    each = f"{rate:.1f} a second" if rate < 10 else f"{rate:.0f} a second"
    left = (total - done) / rate
    if left <= 0:
        return f" ({each})"
    if left < 90:
        remaining = f"about {left:.0f} s left"
    elif left < 90 * 60:
        remaining = f"about {left / 60:.0f} min left"
    else:
        remaining = f"about {left // 3600:.0f} h {left % 3600 / 60:.0f} min left"
    return f" ({each}, {remaining})"
