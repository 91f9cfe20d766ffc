"""How far the code graph's callers reach on a real repository: how many call sites lead to a definition.

A call the extractor ties to an import (`createVNode` from "@vue/runtime-core") counts for the callers of
a definition only when the import's name leads to it: through re-exports, star re-exports (`export *`
barrels), the checkout's import aliases (tsconfig `paths`, workspace packages, Python projects below the
root). Printed from one build of the corpus with the current code (run it from another checkout of
forgebot, with that checkout's code first on `PYTHONPATH`, for the figures before a change):

  calls       call sites with a target, and how many lead to a definition of the repository
  callers     for a fixed sample of functions and methods: resolved call sites `callers` lists (an
              Angular component's template and a pytest fixture's tests included), how many of the
              definitions have at least one, ms per query
  agreement   of the calls that lead to a sampled definition, the share `callers` lists

    python tests/bench/bench_callers_reach.py --corpus vue=/path/to/vuejs/core
    python tests/bench/bench_callers_reach.py --corpus pai=/path/to/pydantic-ai --suffixes .py
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from project.index.bindings import defined
from project.index.db import Connection, connect
from project.index.hierarchy import split_member
from project.index.location import index_path
from project.index.queries import call_sites, canonical, framework_sites

SCRIPTS = ".ts,.tsx,.mts,.cts,.js,.jsx,.mjs,.cjs"


def say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _leads(conn: Connection, target: str, cache: dict[str, str]) -> str:
    """The definition a call's target leads to, or ""."""
    if target not in cache:
        owner, member = split_member(target)
        found = f"{canonical(conn, owner)}::{member}" if member else canonical(conn, target)
        cache[target] = found if defined(conn, found) else ""
    return cache[target]


def measure(name: str, root: Path, suffixes: tuple[str, ...], sample: int) -> None:
    with tempfile.TemporaryDirectory() as data:
        env = {**os.environ, "FORGEBOT_DATA_DIR": data}
        subprocess.run([sys.executable, "-m", "bot.cli.main", "index", str(root), "--no-embeddings"], check=True,
                       env=env, capture_output=True, cwd=Path(__file__).resolve().parents[2])
        conn = connect(index_path(Path(data), root))
        rows = [r for r in conn.execute(
            "SELECT path, line, target_fqn FROM relations WHERE kind = 'calls' AND target_fqn != ''")
            if str(r[0]).endswith(suffixes)]
        cache: dict[str, str] = {}
        by_definition: dict[str, set[tuple[str, int]]] = defaultdict(set)
        for path, line, target in rows:
            found = _leads(conn, str(target), cache)
            if found:
                by_definition[found].add((str(path), int(line)))
        leading = sum(len(sites) for sites in by_definition.values())
        say(f"== {name}: calls with a target {len(rows)}, leading to a definition {leading} "
              f"({leading / max(1, len(rows)):.1%})")
        definitions = sorted(str(r[0]) for r in conn.execute(
            "SELECT fqn, path FROM symbols WHERE kind IN ('function', 'method')") if str(r[1]).endswith(suffixes))
        chosen = random.Random(5).sample(definitions, min(sample, len(definitions)))
        started, listed, having, agree, expected = time.perf_counter(), 0, 0, 0, 0
        for fqn in chosen:
            sites, _ = call_sites(conn, fqn, limit=100_000)
            sites += framework_sites(conn, root, canonical(conn, fqn))  # as `callers` answers
            resolved = {(s.path, s.line) for s in sites if s.certainty == "resolved"}
            listed += len(resolved)
            having += bool(resolved)
            wanted = by_definition.get(fqn, set())
            expected += len(wanted)
            agree += len(wanted & {(s.path, s.line) for s in sites})
        spent = (time.perf_counter() - started) * 1000 / max(1, len(chosen))
        say(f"callers of {len(chosen)} sampled functions and methods: {listed} resolved call sites, {having} with "
              f"at least one caller, {spent:.1f} ms per query")
        say(f"agreement: callers lists {agree} of the {expected} calls leading to them "
              f"({agree / max(1, expected):.1%})")
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", action="append", required=True, help="NAME=DIR of a git checkout")
    parser.add_argument("--suffixes", default=SCRIPTS, help="comma-separated suffixes of the files measured")
    parser.add_argument("--sample", type=int, default=400)
    args = parser.parse_args()
    for corpus in args.corpus:
        name, _, directory = corpus.partition("=")
        measure(name, Path(directory).resolve(), tuple(args.suffixes.split(",")), args.sample)


if __name__ == "__main__":
    main()
