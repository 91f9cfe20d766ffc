"""Sandbox overhead per check: a trivial command plain, under rlimits only, and in namespaces.

Run from the repository root: PYTHONPATH=. .venv/bin/python tests/bench/bench_sandbox.py
Prints the median wall time of each and the ratios to a bare subprocess, for an empty worktree and
for one of 5,000 files (a PHP project with its vendor directory):

- `rlimits + clean env`: no namespaces (accepted by the policy);
- `namespaces, own run`: one command in a sandbox of its own (the run's layer started and ended);
- `namespaces, next check`: one more command of a run whose sandbox is already open, which is what
  every check after the first costs (install, tests and each lint share one run).

Versions whose sandbox has no runs (`open_sandbox`) measure the next check with a shared
`DiskMeter` instead, so the same script measures main and a branch. Unknown policy fields are ignored
by older versions.
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
from project.sandbox import SandboxPolicy, SandboxResult, probe_isolation

ROUNDS = 20
FILES = 5000
ENV = {"PATH": "/usr/bin:/bin"}
POLICY = SandboxPolicy(allow_root=True)  # the bench may run as root


def run_sandboxed(command: str, worktree: Path, policy: SandboxPolicy, env: dict[str, str]) -> SandboxResult:
    """One command in a sandbox of its own (older versions: their `run_sandboxed`)."""
    opener = getattr(project.sandbox, "open_sandbox", None)
    if opener is None:
        result: SandboxResult = project.sandbox.run_sandboxed(command, worktree, policy, env)  # type: ignore[attr-defined]
        return result
    with opener(worktree, policy, env) as box:
        one: SandboxResult = box.run(command)
        return one


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


def _next_check(worktree: Path) -> float:
    """A command in a run that is already open: the product's second and later checks."""
    opener = getattr(project.sandbox, "open_sandbox", None)
    if opener is not None:
        with opener(worktree, POLICY, ENV) as box:
            box.run("true")
            return _median(lambda: box.run("true"))
    meter = project.sandbox.DiskMeter()
    run = project.sandbox.run_sandboxed  # type: ignore[attr-defined]
    return _median(lambda: run("true", worktree, POLICY, ENV, meter=meter))


def _measure(worktree: Path, bare: float, label: str) -> list[str]:
    unisolated = POLICY.model_copy(update={"isolate": False, "allow_unisolated": True})
    limits = _median(lambda: run_sandboxed("true", worktree, unisolated, ENV))
    lines = [f"{label}: rlimits + clean env      {limits * 1000:7.1f} ms  {limits / bare:5.1f}x"]
    if probe_isolation().available:
        own = _median(lambda: run_sandboxed("true", worktree, POLICY, ENV))
        lines.append(f"{label}: namespaces, own run      {own * 1000:7.1f} ms  {own / bare:5.1f}x")
        shared = _next_check(worktree)
        lines.append(f"{label}: namespaces, next check   {shared * 1000:7.1f} ms  {shared / bare:5.1f}x")
    else:
        lines.append(f"{label}: namespaces unavailable ({probe_isolation().reason})")
    return lines


def main() -> None:
    with tempfile.TemporaryDirectory() as empty, tempfile.TemporaryDirectory() as big:
        bare = _median(lambda: subprocess.run(["/bin/sh", "-c", "true"], check=True))
        lines = [f"bare subprocess                         {bare * 1000:7.1f} ms    1.0x"]
        lines += _measure(Path(empty), bare, "empty worktree ")
        lines += _measure(_project(Path(big)), bare, f"{FILES} files     ")
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
