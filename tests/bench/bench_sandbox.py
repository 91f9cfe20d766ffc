"""Sandbox overhead: a trivial command plain, under rlimits only, and in namespaces (one run).

Run from the repository root: PYTHONPATH=. /work/venv/bin/python tests/bench/bench_sandbox.py
Prints the median wall time of each and the ratios to a bare subprocess.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from graph.sandbox import SandboxPolicy, probe_isolation, run_sandboxed

ROUNDS = 20
ENV = {"PATH": "/usr/bin:/bin"}


def _median(run: Callable[[], object]) -> float:
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as work:
        worktree = Path(work)
        bare = _median(lambda: subprocess.run(["/bin/sh", "-c", "true"], check=True))
        limits = _median(lambda: run_sandboxed("true", worktree, SandboxPolicy(isolate=False), ENV))
        lines = [f"bare subprocess      {bare * 1000:7.1f} ms  1.0x"]
        lines.append(f"rlimits + clean env  {limits * 1000:7.1f} ms  {limits / bare:.1f}x")
        if probe_isolation().available:
            isolated = _median(lambda: run_sandboxed("true", worktree, SandboxPolicy(), ENV))
            lines.append(f"namespaces (full)    {isolated * 1000:7.1f} ms  {isolated / bare:.1f}x")
        else:
            lines.append(f"namespaces: unavailable ({probe_isolation().reason})")
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
