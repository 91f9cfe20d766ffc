"""Speed of the code index build, end to end, against raw tree-sitter parsing; and one-file re-sync.

Any language the graph reads: each file is parsed by its own grammar (a corpus of Python files
measures Python). All figures come from one run on the same copy of each corpus (best of --repeat
interleaved runs):
  raw        tree-sitter parse of every file (already in memory), one process
  index xN   `forgebot index DIR --no-embeddings --workers N --timings` as a user runs it (its modules
             byte-compiled, as an install leaves them), from the command's start to its exit:
             interpreter start, file walk, read, parse, extract, chunking, full-text terms, writes,
             indexes (the graph and search tables a task's base holds)
  x1 query   (--query) index x1 with the C walk turned off (FORGEBOT_NO_TREEWALK=1): what it saves
  re-sync    edit the median-size file and `sync_files` it (the edit itself is not timed)

    python tests/bench/bench_codegraph_speed.py            # Symfony (4,471 files) and Laravel
    python tests/bench/bench_codegraph_speed.py --corpus monolog=/usr/share/php/Monolog
    python tests/bench/bench_codegraph_speed.py --corpus sympy=/path/to/sympy --rounds 50

Goals: index x1 <= 2.0x raw, index x2 <= 1.5x raw (wall clock), re-sync p50 <= 2 ms, p99 <= 25 ms.
The machine is shared: the load average is printed with each round, and the phase table of the last
one-worker run gives CPU seconds per phase and the whole command's CPU as a multiple of its own parse.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from project.index.db import connect
from project.index.extractors import Parsers, extractor_for
from project.index.generated import left_out, too_deep
from project.index.store import build, sync_files


def say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


DEFAULT_CORPORA = {"symfony": "/usr/share/php/Symfony", "laravel": "/usr/share/php/Illuminate"}


Timing = tuple[float, float]  # wall seconds, CPU seconds of this process
REPOSITORY = Path(__file__).resolve().parents[2]
# A build runs as `pip install` leaves forgebot: every module byte-compiled (`_byte_compiled`). Where the
# shell sets PYTHONDONTWRITEBYTECODE (this workplace's does), each timed build otherwise compiled the
# project's modules again: 0.05-0.06 s of its start that no installed forgebot pays (bench_cli.py too).
_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def _byte_compiled() -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", "bot", "foundation", "graph", "project"],
                   env=_ENV, cwd=REPOSITORY, check=True, stdout=subprocess.DEVNULL)


def _raw_parse(root: Path, files: list[str]) -> Timing:
    parsers = Parsers()
    sources = []
    for rel in files:
        extractor = extractor_for(rel)
        assert extractor is not None
        sources.append((parsers.get(extractor), (root / rel).read_bytes()))
    start, cpu = time.perf_counter(), time.process_time()
    for parser, source in sources:
        parser.parse(source)
    return time.perf_counter() - start, time.process_time() - cpu


def _source_files(root: Path, listed: list[str]) -> list[str]:
    """`listed` without what the index leaves out as not hand-written (`project.index.generated`)."""
    parsers = Parsers()
    kept = []
    for rel in listed:
        source = (root / rel).read_bytes()
        extractor = extractor_for(rel)
        assert extractor is not None
        if not left_out(len(source), source) and not too_deep(parsers.get(extractor).parse(source)):
            kept.append(rel)
    return kept


def _index(root: Path, data: Path, workers: int, walk: bool = True) -> tuple[float, str]:
    """Wall seconds of one `forgebot index` into an empty data directory, and what it printed; without
    `walk`, with the C walk turned off (the extractors' queries find the nodes)."""
    shutil.rmtree(data, ignore_errors=True)
    command = [sys.executable, "-m", "bot.cli.main", "index", str(root), "--no-embeddings", "--workers", str(workers),
               "--timings"]
    env = {**_ENV, "FORGEBOT_DATA_DIR": str(data)}
    env.pop("FORGEBOT_NO_TREEWALK", None)
    if not walk:
        env["FORGEBOT_NO_TREEWALK"] = "1"
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True, cwd=REPOSITORY)
    return time.perf_counter() - start, done.stdout


def _total_cpu(printed: str) -> float:
    """The command's CPU seconds, its parser processes' included: the `total` line of `--timings`."""
    return float(next(line.split()[1] for line in printed.splitlines() if line.startswith("total ")))


def _resync(root: Path, files: list[str], db: Path, rounds: int) -> tuple[str, int, list[float]]:
    by_size = sorted(files, key=lambda rel: (root / rel).stat().st_size)
    median = by_size[len(by_size) // 2]
    path = root / median
    original = path.read_bytes()
    conn = connect(db)
    timings: list[float] = []
    # one untimed edit first: a process's first extraction compiles its language's queries (30-60 ms,
    # once per worker), which is not what a re-sync costs
    for i in range(-1, rounds):
        path.write_bytes(original + f"\n# edit {i}\n".encode() if median.endswith(".py") else
                         original + f"\n// edit {i}\n".encode())
        start = time.perf_counter()
        report = sync_files(conn, root, [median])
        if i >= 0:
            timings.append(time.perf_counter() - start)
        assert report.parsed == [median], report
    path.write_bytes(original)
    conn.close()
    return median, len(original), timings


def run(name: str, source: Path, rounds: int, repeat: int, query: bool = False) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / name
        shutil.copytree(source, root, symlinks=False)
        listed = sorted(rel for rel in (p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
                        if extractor_for(rel) is not None)
        files = _source_files(root, listed)  # the files the index parses: the raw parse takes the same
        _raw_parse(root, files)  # warm-up: allocator and page cache
        say(f"\n== {name}: {len(files)} files ({len(listed) - len(files)} left out as generated, by both)")
        variants = [("x1", 1, True), ("x2", 2, True)] + ([("x1 query", 1, False)] if query else [])
        ratios: dict[str, list[float]] = {label: [] for label, *_ in variants}
        cpu_ratios: dict[str, list[float]] = {label: [] for label, *_ in variants}
        table = ""
        for i in range(repeat):  # interleaved: each ratio compares runs seconds apart on a shared machine
            raw = _raw_parse(root, files)
            line = f"round {i + 1}: raw parse {raw[0]:6.2f} s wall ({raw[1]:.2f} s CPU)"
            for label, workers, walk in variants:
                took, printed = _index(root, Path(tmp) / "data", workers, walk)
                ratios[label].append(took / raw[0])
                cpu = _total_cpu(printed)
                cpu_ratios[label].append(cpu / raw[1])
                line += (f"; index {label} {took:6.2f} s = {took / raw[0]:4.2f}x "
                         f"(CPU {cpu:.2f} s = {cpu / raw[1]:4.2f}x)")
                table = printed if label == "x1" else table
            say(f"{line}; load average {os.getloadavg()[0]:.1f}")
        conn = connect(Path(tmp) / "graph.db")
        build(conn, root, files, workers=1)
        conn.close()
        median, size, timings = _resync(root, files, Path(tmp) / "graph.db", rounds)
    ms = sorted(t * 1000 for t in timings)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    say(f"index x1 / raw parse, median of {repeat}: {statistics.median(ratios['x1']):.2f}x (goal <= 2.0x); "
        f"index x2: {statistics.median(ratios['x2']):.2f}x (goal <= 1.5x); in CPU seconds (every process of the "
        f"command against the raw parse's, which the machine's load disturbs less): x1 "
        f"{statistics.median(cpu_ratios['x1']):.2f}x, x2 {statistics.median(cpu_ratios['x2']):.2f}x")
    if query:
        say(f"index x1 with the C walk turned off (the queries): {statistics.median(ratios['x1 query']):.2f}x, "
            f"CPU {statistics.median(cpu_ratios['x1 query']):.2f}x")
    say("phase table of the last one-worker run:\n" + "\n".join(
        line for line in table.splitlines() if not line.startswith(("graph:", "search:", "memory:"))))
    say(f"re-sync {median} ({size} bytes), {rounds} edits: "
          f"p50 {statistics.median(ms):.2f} ms (goal <= 2), p99 {p99:.2f} ms (goal <= 25)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", action="append", default=[], help="NAME=DIR (repeatable)")
    parser.add_argument("--rounds", type=int, default=300, help="edits for the re-sync percentiles")
    parser.add_argument("--repeat", type=int, default=3, help="builds per variant; the best one counts")
    parser.add_argument("--query", action="store_true",
                        help="also time one worker with the C walk turned off (FORGEBOT_NO_TREEWALK=1)")
    args = parser.parse_args()
    corpora = dict(c.split("=", 1) for c in args.corpus) if args.corpus else DEFAULT_CORPORA
    _byte_compiled()
    for name, directory in corpora.items():
        run(name, Path(directory).resolve(), args.rounds, args.repeat, args.query)


if __name__ == "__main__":
    main()
