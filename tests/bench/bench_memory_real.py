"""Project memory on a real PHP history: cost, exactness and answers, in one run (no timed asserts).

Run from the repository root, on a checkout of a public PHP repository with thousands of commits:

    PYTHONPATH=. .venv/bin/python tests/bench/bench_memory_real.py --repo CHECKOUT [--max-commits N]
        [--sample 200] [--lines 100] [--sections 50] [--work DIR]

Prints, with the machine's load average (the machine is shared: CPU seconds say more than wall time):

- **build**: the code graph, then the whole history remembered from nothing (wall, this process's CPU,
  git's CPU), then the documents, each on its own;
- **entry points**: precision and recall of each sampled commit's touched declarations against an
  oracle computed at that commit's own revision: `git diff -U0 <first parent> <commit>` for the hunks,
  nikic/php-parser (`php_parser_declarations.php`, not the reader under test) for the declarations of
  the file before and after; the capped `symbols` too, and the old way (today's symbol table
  intersected with the commit's line numbers) for comparison;
- **why is this line here**: lines inside methods at HEAD; `git blame` gives the commit that last
  changed the line; the question names the enclosing `Class::method` and the line's identifiers;
  MRR@10 of that commit among the commit hits, with and without the symbol-history leg;
- **documents**: a sample of sections with the symbols they resolved to and the token behind each,
  for a hand check; and the time to resolve the document with the most sections;
- **questions**: a warm question on an unchanged checkout (in-process, as `forgebot memory` answers
  it: the freshness check beside the search; p50/p95, and the CPU it took), and `forgebot memory
  --batch` of 100 questions as a user runs it (process wall).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from project.index import memory, memory_history, memory_sources, taskindex
from project.index.db import Connection, connect
from project.index.entrypoints import words
from project.index.location import index_path
from project.index.memory_cli import answers, fresh_index
from project.index.mentions import SymbolIndex, candidates

ORACLE = Path(__file__).with_name("php_parser_declarations.php")
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.M)


def out(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def git(repo: Path, *args: str, binary: bool = False) -> str | bytes:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)
    return done.stdout if binary else done.stdout.decode("utf-8", "replace")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def load() -> str:
    return "load {:.1f}/{:.1f}/{:.1f}".format(*os.getloadavg())


def build(repo: Path, index: Path, max_commits: int) -> Connection:
    out(f"# build ({load()} at start, {os.cpu_count()} cores)")
    start, cpu = time.monotonic(), time.process_time()
    taskindex.refresh(index, repo, embedder=None, workers=2)
    out(f"graph: {time.monotonic() - start:.1f} s wall, {time.process_time() - cpu:.1f} CPU-s in this process")
    conn = connect(index)
    memory.ensure_schema(conn, None)
    start, cpu, git_cpu = time.monotonic(), time.process_time(), children_cpu()
    report = memory_history.refresh(conn, repo, max_commits)
    wall, spent, git_spent = time.monotonic() - start, time.process_time() - cpu, children_cpu() - git_cpu
    commits = conn.execute("SELECT count(*) FROM memory_items WHERE kind = 'commit'").fetchone()[0]
    out(f"history: {commits} commits in {wall:.1f} s wall; {spent:.1f} CPU-s in this process + {git_spent:.1f} "
        f"CPU-s of git ({load()} at end)")
    out(f"history: {report.unread} unreadable, {report.partial} read without part of their diff; "
        + "; ".join(report.notes))
    start = time.monotonic()
    documents = memory_sources.MemoryReport()
    memory_sources.refresh_documents(conn, repo, documents)
    out(f"documents: {documents.documents} documents, {documents.sections_added} sections in "
        f"{time.monotonic() - start:.1f} s")
    with conn:
        memory.write_meta(conn, checkout_state="")
    return conn


def _declarations(files: list[Path]) -> dict[str, list[tuple[str, str, int, int]]]:
    """file → (kind, fqn, start, end) by php-parser; a file it cannot parse is absent."""
    done = subprocess.run(["php", str(ORACLE)], input="\n".join(map(str, files)) + "\n", capture_output=True,
                          text=True, check=True)
    found: dict[str, list[tuple[str, str, int, int]]] = {str(f): [] for f in files}
    for line in done.stdout.splitlines():
        row = json.loads(line)
        if "error" in row:
            found.pop(row["file"], None)
        elif row["file"] in found:
            found[row["file"]].append((row["kind"], row["fqn"], row["start"], row["end"]))
    return found


def _innermost(decls: list[tuple[str, str, int, int]], lines: list[int]) -> set[str]:
    touched = set()
    for line in lines:
        around = [d for d in decls if d[2] <= line <= d[3]]
        if around:
            touched.add(min(around, key=lambda d: (d[3] - d[2], -d[2]))[1])
    return touched


def _nonblank(text: bytes, ranges: list[tuple[int, int]]) -> list[int]:
    lines = text.split(b"\n")
    return [n for start, count in ranges for n in range(start, start + count)
            if 0 < n <= len(lines) and lines[n - 1].strip()]


def precision(conn: Connection, repo: Path, sample: int, work: Path) -> None:
    out("\n# entry points against the oracle (php-parser at each commit's own revision)")
    skipped = {str(r[0]) for r in conn.execute("SELECT DISTINCT commit_sha FROM memory_skipped")}
    candidates_ = sorted(str(r[0]) for r in conn.execute("SELECT DISTINCT commit_sha FROM memory_touches"))
    shas = random.Random(7).sample([s for s in candidates_ if s not in skipped], min(sample, len(candidates_)))
    head = {str(r[0]): (str(r[1]), int(r[2]), int(r[3]), str(r[4])) for r in conn.execute(
        "SELECT fqn, path, start_line, end_line, kind FROM symbols")}
    by_path: dict[str, list[tuple[str, int, int, str]]] = {}
    for fqn, (path, start, end, kind) in head.items():
        by_path.setdefault(path, []).append((fqn, start, end, kind))
    counts = {"mine": 0, "oracle": 0, "both": 0, "capped": 0, "capped_ok": 0, "old": 0, "old_ok": 0, "files": 0,
              "unparsed": 0}
    for number, sha in enumerate(shas):
        parent = str(git(repo, "rev-parse", f"{sha}^")).strip()
        pairs = _pairs(repo, parent, sha)
        blobs, texts = [], {}
        for index, (old, new) in enumerate(pairs):
            for side, rev, path in (("old", parent, old), ("new", sha, new)):
                if path:
                    text = git(repo, "show", f"{rev}:{path}", binary=True)
                    assert isinstance(text, bytes)
                    file = work / f"{number}-{index}-{side}.php"
                    file.write_bytes(text)
                    blobs.append(file)
                    texts[(index, side)] = (file, text)
        decls = _declarations(blobs) if blobs else {}
        oracle: set[str] = set()
        old_way: set[str] = set()
        compared: set[str] = set()
        for index, (old, new) in enumerate(pairs):
            sides = {side: texts.get((index, side)) for side in ("old", "new")}
            if any(v is not None and (len(v[1]) > 1024 * 1024 or str(v[0]) not in decls) for v in sides.values()):
                counts["unparsed"] += 1
                continue
            patch = str(git(repo, "diff", "-U0", "--no-color", "-M", parent, sha, "--", *(p for p in (old, new) if p)))
            hunks = [(int(m[1]), int(m[2] or 1), int(m[3]), int(m[4] or 1)) for m in HUNK.finditer(patch)]
            compared.add(new or old)
            counts["files"] += 1
            if sides["old"] is not None:
                removed = [(a, b) for a, b, _, _ in hunks]
                oracle |= _innermost(decls[str(sides["old"][0])], _nonblank(sides["old"][1], removed))
            if sides["new"] is not None:
                ranges = [(c, d) for _, _, c, d in hunks]
                oracle |= _innermost(decls[str(sides["new"][0])], _nonblank(sides["new"][1], ranges))
                spans = [(c, c + max(d, 1) - 1) for c, d in ranges]
                rows = by_path.get(new, [])
                members = [r for r in rows if r[3] not in ("class", "interface", "trait", "enum", "namespace")] or rows
                old_way |= {f for f, s, e, _ in members if any(a <= e and s <= b for a, b in spans)}
        mine = {str(r[0]) for r in conn.execute("SELECT fqn, path FROM memory_touches WHERE commit_sha = ?", (sha,))
                if str(r[1]) in compared}
        capped = [s for s in json.loads(conn.execute("SELECT symbols FROM memory_items WHERE source = ?",
                                                     (sha,)).fetchone()[0]) if s in mine]
        counts["mine"] += len(mine)
        counts["oracle"] += len(oracle)
        counts["both"] += len(mine & oracle)
        counts["capped"] += len(capped)
        counts["capped_ok"] += len(set(capped) & oracle)
        counts["old"] += len(old_way)
        counts["old_ok"] += len(old_way & oracle)
        if mine - oracle and number < 400:
            out(f"  {sha[:12]}: not in the oracle: {sorted(mine - oracle)[:4]}")
    out(f"{len(shas)} commits, {counts['files']} file changes compared ({counts['unparsed']} left out: over 1 MiB "
        f"or php-parser could not parse them)")
    out(f"touched declarations: precision {counts['both'] / max(counts['mine'], 1):.3f}, recall "
        f"{counts['both'] / max(counts['oracle'], 1):.3f} ({counts['mine']} found, {counts['oracle']} in the oracle)")
    out(f"capped entry points (12 a commit): precision {counts['capped_ok'] / max(counts['capped'], 1):.3f} "
        f"({counts['capped']})")
    out(f"the old way (today's symbols at the commit's line numbers): precision "
        f"{counts['old_ok'] / max(counts['old'], 1):.3f} ({counts['old']})")


def _pairs(repo: Path, parent: str, sha: str) -> list[tuple[str, str]]:
    """(old path, new path) of each PHP file the commit changed ("" for none), renames followed."""
    listed = str(git(repo, "diff", "--name-status", "-z", "-M", parent, sha, "--", "*.php")).split("\0")
    pairs, index = [], 0
    while index < len(listed) - 1:
        status = listed[index]
        if status[:1] in ("R", "C"):
            pairs.append((listed[index + 1], listed[index + 2]))
            index += 3
        else:
            path = listed[index + 1]
            pairs.append(("" if status == "A" else path, "" if status == "D" else path))
            index += 2
    return pairs


def why_lines(conn: Connection, repo: Path, count: int) -> list[tuple[str, str]]:
    """(question, the commit that last changed the line) for lines inside methods at HEAD."""
    remembered = {str(r[0]) for r in conn.execute("SELECT source FROM memory_items WHERE kind = 'commit'")}
    methods = [(str(r[0]), str(r[1]), int(r[2]), int(r[3])) for r in conn.execute(
        "SELECT fqn, path, start_line, end_line FROM symbols WHERE kind = 'method' AND end_line - start_line > 4 "
        "ORDER BY fqn")]
    pick = random.Random(11)
    found: list[tuple[str, str]] = []
    tries = 0
    while len(found) < count and tries < count * 20:
        tries += 1
        fqn, path, start, end = pick.choice(methods)
        lines = (repo / path).read_text(errors="replace").splitlines()
        line = pick.randint(start + 2, end - 1)
        if line > len(lines):
            continue
        kept = set(words(lines[line - 1]))
        said = [w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", lines[line - 1]) if w.lower() in kept]
        if len(dict.fromkeys(said)) < 2:
            continue
        blame = str(git(repo, "blame", "--porcelain", "-L", f"{line},{line}", "HEAD", "--", path))
        sha = blame.split(" ", 1)[0] if blame else ""
        if sha not in remembered:
            continue
        owner, method = fqn.rsplit("\\", 1)[-1].split("::", 1)
        found.append((f"why does {owner}::{method} have {' '.join(dict.fromkeys(said))}", sha))
    return found


def mrr(conn: Connection, questions: list[tuple[str, str]], history_leg: bool) -> float:
    total = 0.0
    for question, sha in questions:
        if history_leg:
            hits = [h.source for h in memory.search(conn, question, embedder=None, limit=10, kinds=("commit",))[0]]
        else:  # the lexical leg alone, as memory answered before symbol history
            ids = memory._lexical(conn, question, 200)
            rows = [conn.execute("SELECT kind, source FROM memory_items WHERE id = ?", (i,)).fetchone() for i in ids]
            hits = [str(r[1]) for r in rows if r is not None and r[0] == "commit"][:10]
        rank = next((i for i, s in enumerate(hits, 1) if s == sha), None)
        total += 1 / rank if rank else 0.0
    return total / max(len(questions), 1)


def documents(conn: Connection, sections: int) -> None:
    out("\n# documents")
    rows = [(str(r[0]), str(r[1]), str(r[2])) for r in conn.execute(
        "SELECT source, anchor, body FROM memory_items WHERE kind = 'document' AND symbols != '[]' ORDER BY id")]
    index = SymbolIndex.of(conn)
    out(f"{len(rows)} sections name symbols; a sample of {min(sections, len(rows))} for a hand check:")
    for source, anchor, body in random.Random(5).sample(rows, min(sections, len(rows))):
        named = [(token, index.lookup(form, token)) for form, token in candidates(f"{anchor}\n{body}")]
        out(f"- {source} § {anchor[:70]}")
        for token, fqns in named:
            if fqns:
                out(f"    {token!r} → {', '.join(fqns)}")
    by_source: dict[str, int] = {}
    for (source,) in conn.execute("SELECT source FROM memory_items WHERE kind = 'document'"):
        by_source[str(source)] = by_source.get(str(source), 0) + 1
    if not by_source:
        return
    largest = max(by_source, key=lambda s: by_source[s])
    texts = [f"{r[0]}\n{r[1]}" for r in conn.execute(
        "SELECT anchor, body FROM memory_items WHERE kind = 'document' AND source = ?", (largest,))]
    start = time.perf_counter()
    names = SymbolIndex.of(conn)
    resolved = sum(1 for text in texts if names.resolve(text))
    out(f"{largest}: {len(texts)} sections resolved in {time.perf_counter() - start:.2f} s (the name index built "
        f"once included; {resolved} sections name symbols)")


def document(conn: Connection, path: Path) -> None:
    """A document given by path (e.g. an old CHANGELOG of the same repository), split and resolved as a
    refresh would: the sections, the name index built once, every section's symbols."""
    start = time.perf_counter()
    parts = memory_sources.sections(path.name, path.read_text(errors="replace"))
    names = SymbolIndex.of(conn)
    named = sum(1 for heading, body in parts if names.resolve(f"{heading}\n{body}"))
    out(f"{path.name}: {len(parts)} sections resolved in {time.perf_counter() - start:.2f} s, the name index "
        f"built once included ({named} sections name symbols; {load()})")


def questions(repo: Path, data: Path, max_commits: int, asked: list[str], work: Path) -> None:
    out("\n# questions")
    args = argparse.Namespace(data_dir=str(data), command="memory", max_commits=max_commits, batch=None, k=10)
    fresh_index(args, repo, None)  # records the checkout's state: the questions below find it unchanged
    times, cpu = [], []
    for question in (asked * 3)[:60]:
        start, spent = time.perf_counter(), time.process_time() + children_cpu()
        answers(args, repo, None, [question])
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() + children_cpu() - spent)
    times.sort()
    out(f"warm question (forgebot memory's path in-process: git status beside the search of the index, lexical "
        f"and history legs): p50 {statistics.median(times) * 1000:.0f} ms, p95 "
        f"{times[int(len(times) * 0.95)] * 1000:.0f} ms; CPU (this process and git) p50 "
        f"{statistics.median(cpu) * 1000:.0f} ms ({load()})")
    batch = work / "questions.txt"
    batch.write_text("\n".join((asked * 10)[:100]) + "\n")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("FORGEBOT_")}, "FORGEBOT_DATA_DIR": str(data)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "bot", "memory", str(repo), "--batch", str(batch), "--json",
                           "--no-embeddings", "--max-commits", str(max_commits)], env=env, capture_output=True,
                          text=True, check=False)
    answered = len(done.stdout.splitlines())
    out(f"forgebot memory --batch of 100 questions: {time.perf_counter() - start:.2f} s wall, {answered} answers, "
        f"exit {done.returncode} ({load()})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, required=True, help="a checkout of a PHP repository")
    parser.add_argument("--max-commits", type=int, default=20_000)
    parser.add_argument("--sample", type=int, default=200, help="commits checked against the oracle")
    parser.add_argument("--lines", type=int, default=100, help='"why is this line here" questions')
    parser.add_argument("--sections", type=int, default=50, help="document sections printed for a hand check")
    parser.add_argument("--work", type=Path, default=None, help="where the index goes (default: a temporary dir)")
    parser.add_argument("--document", type=Path, action="append", default=[],
                        help="also time resolving this document's sections (a long CHANGELOG)")
    args = parser.parse_args()
    repo = args.repo.resolve()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-memory-"))
    data = work / "data"
    index = index_path(data, repo)
    index.parent.mkdir(parents=True, exist_ok=True)
    for stale in index.parent.glob("index.db*"):
        stale.unlink()
    conn = build(repo, index, args.max_commits)
    oracle = work / "oracle"
    oracle.mkdir(exist_ok=True)
    precision(conn, repo, args.sample, oracle)
    asked = why_lines(conn, repo, args.lines)
    out(f"\n# why is this line here ({len(asked)} lines, e.g. {asked[0][0]!r})" if asked else "\n# no lines")
    out(f"MRR@10 with the symbol-history leg: {mrr(conn, asked, True):.3f}; lexical leg alone: "
        f"{mrr(conn, asked, False):.3f}")
    documents(conn, args.sections)
    for extra in args.document:
        document(conn, extra)
    conn.close()
    questions(repo, data, args.max_commits, [q for q, _ in asked] or ["why"], work)


if __name__ == "__main__":
    main()
