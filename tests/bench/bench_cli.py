"""Start-up time of the `forgebot` command line beside a bare interpreter.

Run from the repository root: .venv/bin/python tests/bench/bench_cli.py [--rounds N]
Each command runs as its user runs it (the installed console script, a fresh process, an empty data
directory, no `FORGEBOT_*` but that one) with bytecode caches written and warmed first, as an
installed package has them. The rounds interleave the commands, so a burst of load on the shared
machine lands on all of them alike. Prints each command's median wall time and its ratio to
`python -c pass`, and the load average while it ran.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FORGEBOT = Path(sys.executable).parent / "forgebot"


def commands() -> dict[str, list[str]]:
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "forgebot --help": [str(FORGEBOT), "--help"],
        "forgebot run --help": [str(FORGEBOT), "run", "--help"],
        "forgebot trace TASK (none)": [str(FORGEBOT), "trace", "0123456789abcdef"],
        "forgebot tasks (empty store)": [str(FORGEBOT), "tasks"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=21)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory() as data:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FORGEBOT_") and k != "PYTHONDONTWRITEBYTECODE"}
        env["FORGEBOT_DATA_DIR"] = data
        runs = commands()
        for argv in runs.values():  # write and warm the bytecode caches
            subprocess.run(argv, env=env, capture_output=True, check=False)
        times: dict[str, list[float]] = {name: [] for name in runs}
        load = os.getloadavg()[0]
        for _ in range(rounds):
            for name, argv in runs.items():
                started = time.perf_counter()
                subprocess.run(argv, env=env, capture_output=True, check=False)
                times[name].append(time.perf_counter() - started)
        load = (load + os.getloadavg()[0]) / 2
    base = statistics.median(times["python -c pass"])
    print(f"{rounds} rounds, load average ~{load:.1f} on {os.cpu_count()} CPUs")  # noqa: T201
    for name, measured in times.items():
        median = statistics.median(measured)
        print(f"{name:30} median {median * 1000:7.0f} ms  ({median / base:5.1f}x python -c pass)")  # noqa: T201


if __name__ == "__main__":
    main()
