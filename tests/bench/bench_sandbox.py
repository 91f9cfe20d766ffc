"""Sandbox overhead per check: a trivial command plain, under rlimits only, and in namespaces.

Run from the repository root: PYTHONPATH=. .venv/bin/python tests/bench/bench_sandbox.py
Prints the median wall time of each and the ratios to a bare subprocess, for an empty worktree and
for one of 5,000 files (a PHP project with its vendor directory), where the disk-growth check walks
the worktree before and after the command (after only, for the second and later checks of a run,
which share a `DiskMeter`). Unknown policy fields are ignored by older versions of the sandbox, so
the same script measures main and a branch.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import project.sandbox
from project.sandbox import SandboxPolicy, probe_isolation, run_sandboxed

ROUNDS = 20
FILES = 5000
ENV = {"PATH": "/usr/bin:/bin"}


def _median(run: Callable[[], object]) -> float:
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _project(root: Path) -> Path:
    for n in range(FILES):
        folder = root / "vendor" / f"pkg{n // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"Class{n}.php").write_text("<?php\nfinal class C {}\n")
    return root


def _measure(worktree: Path, bare: float, label: str) -> list[str]:
    unisolated = SandboxPolicy(isolate=False, allow_unisolated=True)  # type: ignore[call-arg]
    limits = _median(lambda: run_sandboxed("true", worktree, unisolated, ENV))
    lines = [f"{label}: rlimits + clean env  {limits * 1000:7.1f} ms  {limits / bare:5.1f}x"]
    if probe_isolation().available:
        isolated = _median(lambda: run_sandboxed("true", worktree, SandboxPolicy(), ENV))
        lines.append(f"{label}: namespaces (full)    {isolated * 1000:7.1f} ms  {isolated / bare:5.1f}x")
        meter_type = getattr(project.sandbox, "DiskMeter", None)
        if meter_type is not None:  # this version measures disk growth: the product shares one meter per run
            meter = meter_type()
            shared = _median(lambda: run_sandboxed("true", worktree, SandboxPolicy(), ENV, meter=meter))
            lines.append(f"{label}: namespaces, next check {shared * 1000:5.1f} ms  {shared / bare:5.1f}x")
    else:
        lines.append(f"{label}: namespaces unavailable ({probe_isolation().reason})")
    return lines


def main() -> None:
    with tempfile.TemporaryDirectory() as empty, tempfile.TemporaryDirectory() as big:
        bare = _median(lambda: subprocess.run(["/bin/sh", "-c", "true"], check=True))
        lines = [f"bare subprocess                     {bare * 1000:7.1f} ms    1.0x"]
        lines += _measure(Path(empty), bare, "empty worktree ")
        lines += _measure(_project(Path(big)), bare, f"{FILES} files     ")
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
