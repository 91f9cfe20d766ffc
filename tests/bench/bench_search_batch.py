"""`forgebot search PATH --batch FILE` end to end: 344 questions on a warm index, with and without vectors.

Run from the repository root (the first run embeds about 1,500 chunks: minutes to a quarter of an
hour on two shared cores; `--work DIR` keeps the checkout and both indexes for the next run):

    python tests/bench/bench_search_batch.py [--work DIR] [--questions 344]

The checkout is Monolog and Ramsey as Debian installs them (one git commit); the questions are
their methods' PHPDoc summaries, as in bench_search_quality.py. Each batch runs twice, as the
command line runs it (process start, index refresh, model load, one model call for all questions,
every leg, fusion); the second run is the warm one. Wall and CPU seconds are printed beside the
load average: other jobs share the cores.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench_search_quality import summary

from project.index.parse import parse_source

SOURCES = [Path("/usr/share/php/Monolog"), Path("/usr/share/php/Ramsey")]
FORGEBOT = Path(sys.executable).with_name("forgebot")


def checkout(work: Path) -> Path:
    repo = work / "repo"
    if not repo.is_dir():
        repo.mkdir(parents=True)
        for source in SOURCES:
            shutil.copytree(source, repo / source.name)
        for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b.invalid",
                                                      "commit", "-qm", "corpus"]):
            subprocess.run(["git", "-C", str(repo), *args], check=True)
    return repo


def questions(repo: Path, wanted: int) -> list[str]:
    found: dict[str, int] = {}
    for file in sorted(repo.rglob("*.php")):
        for symbol in parse_source(str(file.relative_to(repo)), file.read_bytes()).symbols:
            text = summary(symbol.docblock) if symbol.kind == "method" else ""
            if text:
                found[text] = found.get(text, 0) + 1
    unique = sorted(text for text, count in found.items() if count == 1)
    random.Random(6).shuffle(unique)
    return unique[:wanted]


def forgebot(data: Path, *args: str) -> tuple[float, float, str]:
    """Wall and CPU seconds of one `forgebot` command, and its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([str(FORGEBOT), *args], env={**os.environ, "FORGEBOT_DATA_DIR": str(data)},
                          capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, done.stderr.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, help="keep the checkout and indexes here and reuse them")
    parser.add_argument("--questions", type=int, default=344)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="forgebot-batch-"))
    repo = checkout(work)
    batch = work / "questions.txt"
    asked = questions(repo, args.questions)
    batch.write_text("\n".join(asked) + "\n")
    for name, index_args in (("with vectors", []), ("without vectors", ["--no-embeddings"])):
        data = work / ("data" if not index_args else "data-no-vectors")
        wall, cpu, _ = forgebot(data, "index", str(repo), *index_args)
        sys.stdout.write(f"index {name}: {wall:.0f} s wall, {cpu:.0f} CPU-s\n")
        for attempt in ("first", "warm"):
            wall, cpu, note = forgebot(data, "search", str(repo), "--batch", str(batch))
            sys.stdout.write(f"batch of {len(asked)} questions {name}, {attempt}: {wall:.1f} s wall, {cpu:.1f} CPU-s, "
                             f"load average {os.getloadavg()[0]:.1f}{'; ' + note if note else ''}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
