"""Where an index build spends its time: CPU and wall seconds per phase, summed over processes.

A build runs its per-file phases (read, parse, extract, chunk, terms) in parser processes and its
writes in the building process; each process keeps a `Timings` and the parser processes send theirs
back with their rows, so the table `forgebot index --timings` prints covers all of the work. The
parse phase is tree-sitter alone, so every other phase reads as a multiple of it: the build's cost
beyond parsing is what the code around the parser adds.
"""

from __future__ import annotations

import contextlib
import os
import resource
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

# The order a build goes through them; phases not listed here come last, in the order first seen.
ORDER = (
    "start", "file walk", "read and hash", "parse", "extract", "chunking", "FTS terms",
    "graph writes", "search writes", "indexes", "memory", "vectors",
)


@dataclass
class Timings:
    """Seconds of CPU and of wall clock per phase name."""

    cpu: dict[str, float] = field(default_factory=dict)
    wall: dict[str, float] = field(default_factory=dict)
    cpu_elsewhere: float = 0.0  # CPU seconds spent in parser processes (their phases, summed)
    # the largest parser process's peak resident memory (a parser process sets it on its own Timings)
    peak_mb_elsewhere: float = 0.0

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.process_time() - cpu, time.perf_counter() - wall)

    def add(self, name: str, cpu: float, wall: float) -> None:
        self.cpu[name] = self.cpu.get(name, 0.0) + cpu
        self.wall[name] = self.wall.get(name, 0.0) + wall

    def merge(self, other: Timings, *, elsewhere: bool = False) -> None:
        """Add `other`'s phases; `elsewhere`: they ran in another process (a parser process)."""
        for name in other.cpu:
            self.add(name, other.cpu[name], other.wall.get(name, 0.0))
        if elsewhere:
            self.cpu_elsewhere += sum(other.cpu.values())
            self.peak_mb_elsewhere = max(self.peak_mb_elsewhere, other.peak_mb_elsewhere)

    def names(self) -> list[str]:
        known = [name for name in ORDER if name in self.cpu]
        return known + [name for name in self.cpu if name not in ORDER]

    def table(self, *, total_wall: float, total_cpu: float) -> list[str]:
        """Lines of the phase table: each phase's CPU and wall seconds and its CPU as a multiple of parse.

        `total_*` are the whole command's, measured outside; phase wall times of parser processes
        overlap, so only CPU adds up across processes.
        """
        parse = self.cpu.get("parse", 0.0) or float("nan")
        lines = [f"{'phase':16} {'CPU s':>8} {'wall s':>8} {'x parse':>8}"]
        for name in self.names():
            lines.append(f"{name:16} {self.cpu[name]:8.2f} {self.wall[name]:8.2f} {self.cpu[name] / parse:8.2f}")
        lines.append(f"{'total':16} {total_cpu:8.2f} {total_wall:8.2f} {total_cpu / parse:8.2f}")
        memory = f"peak memory {peak_rss_mb():.0f} MB"
        if self.cpu_elsewhere:
            memory += f" in this process, {self.peak_mb_elsewhere:.0f} MB in the largest parser process"
        lines.append(memory)
        return lines


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MB."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    scale = 1 / 1024 / 1024 if sys.platform == "darwin" else 1 / 1024  # bytes on macOS, kB elsewhere
    return usage.ru_maxrss * scale


def process_age() -> float:
    """Wall seconds since this process started (Linux; 0 where /proc is not there)."""
    try:
        with open("/proc/self/stat") as stat:
            started = int(stat.read().rsplit(")", 1)[1].split()[19])  # field 22, in clock ticks
        with open("/proc/uptime") as uptime:
            now = float(uptime.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    return max(0.0, now - started / os.sysconf("SC_CLK_TCK"))
