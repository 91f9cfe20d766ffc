"""The graph subcommands as `forgebot` runs them, on a real git checkout and index."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from project.index import search_cli, store
from project.index.db import Connection, build_new, connect
from project.index.index_cli import list_files, register
from tests.repos import init_repo

Capture = pytest.CaptureFixture[str]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="forgebot")
    sub = parser.add_subparsers(required=True)
    register(sub)
    search_cli.register(sub)
    return parser


def _run(data_dir: Path, *argv: str) -> int:
    args = build_parser().parse_args(list(argv))
    args.data_dir = data_dir
    code: int = args.handler(args)
    return code


def test_index_then_symbols_json(repo: Path, tmp_path: Path, capsys: Capture) -> None:
    data = tmp_path / "data"
    assert _run(data, "index", str(repo), "--workers", "1") == 0
    assert "graph: 7 parsed" in capsys.readouterr().out
    assert _run(data, "symbols", str(repo), "--json") == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert all(set(row) == {"kind", "fqn", "path", "start_line", "end_line"} for row in rows)
    fqn = "Acme\\Geometry\\Model\\Color::fallback"
    fallback = {"kind": "method", "fqn": fqn, "path": "src/Model/Color.php"}
    assert {**fallback, "start_line": 22, "end_line": 25} in rows
    assert not any(row["kind"] == "namespace" for row in rows)
    assert len(rows) == 47  # the count nikic/php-parser reports for the fixtures
    assert not list((repo).rglob("*.db"))  # the index lives under the data directory, not the checkout


def test_index_refresh_reports_unchanged(repo: Path, tmp_path: Path, capsys: Capture) -> None:
    data = tmp_path / "data"
    _run(data, "index", str(repo), "--workers", "1")
    capsys.readouterr()
    _run(data, "index", str(repo), "--no-embeddings")
    assert "0 parsed, 7 unchanged" in capsys.readouterr().out


def test_a_first_graph_build_is_renamed_into_place_whole(
    repo: Path, tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first `index --no-embeddings` fills a file of its own: failing half-way, it leaves no index at all."""
    data = tmp_path / "data"

    def fails(*args: object, **kwargs: object) -> None:
        raise OSError("No space left on device")

    monkeypatch.setattr(store, "build", fails)
    with pytest.raises(OSError, match="No space left"):
        _run(data, "index", str(repo), "--no-embeddings")
    monkeypatch.undo()
    assert [p.name for p in data.rglob("*") if p.is_file()] == ["index.lock"]  # no index, no partial file
    assert _run(data, "symbols", str(repo)) == 2  # "no code index": not an empty one
    capsys.readouterr()
    assert _run(data, "index", str(repo), "--no-embeddings") == 0
    assert "graph: 7 parsed" in capsys.readouterr().out
    assert _run(data, "index", str(repo), "--no-embeddings") == 0  # the file is written in place from now on
    assert "0 parsed, 7 unchanged" in capsys.readouterr().out
    (index,) = data.rglob("index.db")
    conn = connect(index)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # as every index opened to be written
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'index'").fetchone()[0] >= 8
    conn.close()


def test_two_first_builds_at_once_take_turns(repo: Path, tmp_path: Path) -> None:
    """Two `forgebot index` started together on a fresh data directory: one builds, the other waits and
    finds the index made (both succeed; neither writes over the other's partial file)."""
    env = {**os.environ, "FORGEBOT_DATA_DIR": str(tmp_path / "data")}
    command = [sys.executable, "-m", "bot.cli.main", "index", str(repo), "--no-embeddings"]
    root = Path(__file__).resolve().parents[3]
    runs = [subprocess.Popen(command, env=env, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)]
    outputs = [run.communicate(timeout=120) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    lines = sorted(out.splitlines()[0] for out, _ in outputs)
    assert [line.split(";")[0] for line in lines] == [
        "graph: 0 parsed, 7 unchanged, 0 removed, 0 stale", "graph: 7 parsed, 0 unchanged, 0 removed, 0 stale"]
    assert sorted(p.name for p in (tmp_path / "data").rglob("*") if p.is_file() and "index" in p.name) == [
        "index.db", "index.lock"]


def test_a_second_builder_of_a_new_index_waits_and_does_not_fill_it(tmp_path: Path) -> None:
    target = tmp_path / "index.db"
    filling, release = threading.Event(), threading.Event()
    filled: list[str] = []

    def slow(conn: Connection) -> None:
        filling.set()
        release.wait(10)
        conn.execute("CREATE TABLE t (x)")
        filled.append("first")

    first = threading.Thread(target=build_new, args=(target, slow))
    first.start()
    assert filling.wait(10)
    second: list[bool] = []
    waiting = threading.Thread(target=lambda: second.append(build_new(target, lambda conn: filled.append("second"))))
    waiting.start()
    waiting.join(0.3)
    assert waiting.is_alive() and not target.exists()  # it waits on the lock, not on a half-built file
    release.set()
    first.join(10)
    waiting.join(10)
    assert second == [False] and filled == ["first"]
    assert connect(target).execute("SELECT name FROM sqlite_master").fetchall()[0][0] == "t"


def test_callers_impact_outline(repo: Path, tmp_path: Path, capsys: Capture) -> None:
    data = tmp_path / "data"
    _run(data, "index", str(repo), "--workers", "1")
    capsys.readouterr()
    assert _run(data, "callers", str(repo), "Acme\\Geometry\\Support\\Clock::now", "--json") == 0
    sites = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {(s["path"], s["line"], s["certainty"]) for s in sites} == {
        ("src/Model/Circle.php", 38, "resolved"),
        ("src/Model/Circle.php", 51, "resolved"),
    }
    assert _run(data, "impact", str(repo), "Acme\\Geometry\\Support\\Clock::now", "--depth", "1") == 0
    line = "1\tcalls\tAcme\\Geometry\\Model\\Circle::describe\tsrc/Model/Circle.php:38"
    assert line in capsys.readouterr().out
    assert _run(data, "outline", str(repo), "src/Traits/Greets.php") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1:] == [
        "5-13\ttrait\ttrait Greets",
        "7-10\tmethod\tpublic function greet(): string",
        "12-12\tmethod\tabstract protected function name(): string;",
    ]


def test_missing_index_exits_2_and_says_so(repo: Path, tmp_path: Path, capsys: Capture) -> None:
    commands = (["symbols", "."], ["callers", ".", "X::y"], ["outline", ".", "src/multi.php"])
    for argv in commands:
        argv[1] = str(repo)
        assert _run(tmp_path / "nothing", *argv) == 2
        assert "check not performed" in capsys.readouterr().err


def test_stale_files_are_reported_on_stderr(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    (repo / "src/Broken.php").write_text("<?php\nclass Broken { function ( }\n")
    _run(data, "index", str(repo), "--workers", "1")
    # the build names the file too: "1 stale" alone left the user to find it (phpunit's parse-error fixture)
    assert ("forgebot: 1 file(s) with syntax errors, named stale in every answer until fixed: src/Broken.php\n"
            in capsys.readouterr().err)
    assert _run(data, "symbols", str(repo)) == 0
    assert "stale for 1 file(s): src/Broken.php" in capsys.readouterr().err


def test_a_swapped_checkout_and_name_say_the_order(repo: Path, tmp_path: Path) -> None:
    """`forgebot callers 'App\\Cart::total' .` said only "not a directory" of the name."""
    env = {**os.environ, "FORGEBOT_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-m", "bot", "callers", "App\\Cart::total", str(repo)], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr == (f"forgebot: App\\Cart::total: not a directory; the checkout comes first: forgebot callers "
                           f"{repo} App\\Cart::total\n")


def test_outline_rejects_paths_outside_the_checkout(repo: Path, tmp_path: Path) -> None:
    _run(tmp_path / "data", "index", str(repo), "--workers", "1")
    with pytest.raises(ValueError, match="outside"):
        _run(tmp_path / "data", "outline", str(repo), "../../etc/passwd")


def test_list_files_uses_git_and_honours_ignores(repo: Path) -> None:
    (repo / ".gitignore").write_text("ignored.php\n")
    (repo / "ignored.php").write_text("<?php\n")
    (repo / "untracked.php").write_text("<?php\n")
    files = list_files(repo)
    assert "untracked.php" in files and "ignored.php" not in files and "src/multi.php" in files


def test_index_builds_what_search_answers_from_and_times_each_phase(
    repo: Path, tmp_path: Path, capsys: Capture
) -> None:
    data = tmp_path / "data"
    assert _run(data, "index", str(repo), "--no-embeddings", "--full-text", "--workers", "1", "--timings") == 0
    out = capsys.readouterr().out
    assert "graph: 7 parsed, 0 unchanged" in out and "search: " in out and "memory: deferred" in out
    table = {line.split()[0]: line.split()[1:] for line in out.splitlines()[3:] if line and line[0].isalpha()}
    for phase in ("start", "file", "read", "parse", "extract", "chunking", "FTS", "graph", "search", "total"):
        assert phase in table, out
    assert float(table["total"][0]) > 0 and float(table["total"][0]) >= float(table["parse"][0])
    index = next(data.rglob("index.db"))
    conn = connect(index, readonly=True)
    try:  # the search tables are there: `forgebot search` finds nothing left to chunk
        assert conn.execute("SELECT count(*) FROM chunks WHERE path = 'src/Model/Circle.php'").fetchone()[0] > 1
        assert conn.execute("SELECT count(*) FROM search_files").fetchone()[0] == 7
    finally:
        conn.close()


def test_index_without_embeddings_builds_the_graph_and_leaves_full_text_to_the_first_search(
    repo: Path, tmp_path: Path, capsys: Capture
) -> None:
    data = tmp_path / "data"
    assert _run(data, "index", str(repo), "--no-embeddings", "--workers", "1", "--timings") == 0
    out = capsys.readouterr().out
    assert "graph: 7 parsed" in out and "search: deferred" in out
    assert "chunking" not in out and "FTS terms" not in out
    index = next(data.rglob("index.db"))
    conn = connect(index, readonly=True)
    try:
        assert conn.execute("SELECT count(*) FROM symbols WHERE path = 'src/Model/Circle.php'").fetchone()[0] > 1
        assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks'").fetchone() is None
    finally:
        conn.close()
    assert _run(data, "search", str(repo), "circle area", "--no-embeddings") == 0
    assert "src/Model/Circle.php" in capsys.readouterr().out  # the first search built the full-text tables
    conn = connect(index, readonly=True)
    try:
        assert conn.execute("SELECT count(*) FROM search_files").fetchone()[0] == 7
    finally:
        conn.close()


def test_index_survives_deleted_tracked_files_and_escaping_symlinks(repo: Path, tmp_path: Path) -> None:
    (repo / "src/multi.php").unlink()  # still in git's index
    outside = tmp_path / "outside.php"
    outside.write_text("<?php\nfunction secret() {}\n")
    (repo / "src/link.php").symlink_to(outside)
    assert "src/link.php" not in list_files(repo)
    assert _run(tmp_path / "data", "index", str(repo), "--workers", "1") == 0


def test_list_files_walks_a_directory_that_is_not_a_git_checkout(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    (plain / "lib").mkdir(parents=True)
    (plain / "lib" / "a.php").write_text("<?php\n")
    (plain / ".cache").mkdir()
    (plain / ".cache" / "b.php").write_text("<?php\n")
    (plain / "web" / "node_modules" / "left-pad").mkdir(parents=True)
    (plain / "web" / "node_modules" / "left-pad" / "index.js").write_text("module.exports = 1;\n")
    (plain / "web" / "app.js").write_text("export const a = 1;\n")
    assert list_files(plain) == ["lib/a.php", "web/app.js"]


def test_search_names_a_python_member_by_its_class_and_special_methods_by_what_they_do(
    tmp_path: Path, capsys: Capture
) -> None:
    """A member's class is its own short name in every language (`billing.refunds.Ledger::close` is
    `Ledger`'s, not `billing refunds`'s), and `__init__` is asked about as "initialize": before, a Python
    method carried its module's words as its class's and `__init__` only the word "init"."""
    repo = tmp_path / "shop"
    (repo / "billing" / "ledger").mkdir(parents=True)
    (repo / "billing" / "ledger" / "accounts.py").write_text(
        "class Register:\n    def close(self):\n        self.open = False\n\n"
        "    def total(self):\n        return sum(self.entries)\n"
    )
    (repo / "billing" / "refunds.py").write_text(
        "class Ledger:\n    def close(self):\n        self.open = False\n\n"
        "class Pool:\n    def reset(self):\n        self.items = []\n\n"
        "    def __init__(self):\n        self.items = []\n\n"
        "    def content_subtype(self):\n        return self.items\n"
    )
    init_repo(repo)
    data = tmp_path / "data"
    assert _run(data, "index", str(repo), "--no-embeddings", "--workers", "1") == 0
    capsys.readouterr()

    def members(question: str) -> list[str]:
        assert _run(data, "search", str(repo), question, "--no-embeddings") == 0
        found = [line.split()[1] for line in capsys.readouterr().out.splitlines() if not line.startswith("#")]
        return [symbol for symbol in found if "::" in symbol]

    assert members("close the ledger")[0] == "billing.refunds.Ledger::close"
    assert members("initialize the pool")[0] == "billing.refunds.Pool::__init__"
    # "the content subtype" is Python's `content_subtype`: the graph leg joins words in snake_case too
    assert _run(data, "search", str(repo), "the content subtype of a message", "--no-embeddings", "--json") == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert hits[0]["symbol"] == "billing.refunds.Pool::content_subtype" and "graph" in hits[0]["legs"]


def test_typescript_the_grammar_does_not_know_is_not_a_broken_file(tmp_path: Path, capsys: Capture) -> None:
    """`export type * from` (TypeScript 5.0), `interface P<in out T>`, `<in T = never>`, `<out T extends X = Y>`
    (4.7) and `import('x').T[]` as a type
    are valid; tree-sitter-typescript 0.23 makes error nodes of them. Before, typeorm's
    `src/index.ts` was a file with syntax errors: left out of search and "stale" in every answer. A real
    syntax error still is one."""
    repo = tmp_path / "orm"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "index.ts").write_text(
        'export * from "./connection"\nexport type * from "./options"\nexport type * as hooks from "./hooks"\n'
        "export interface Repository<in out Entity> {\n  findEveryEntity(): Entity[]\n"
        "  ast?: import('@babel/types').Statement[]\n}\n"
        "export interface Check<in T = never> {\n  run(input: T): void\n}\n"
        "export class Choice<\n  out T extends util.EnumLike = util.EnumLike,\n> {\n  pick(): T {}\n}\n")
    (repo / "src" / "connection.ts").write_text("export class Connection {\n  open(): void {}\n}\n")
    (repo / "src" / "broken.ts").write_text("export function half( {\n")
    init_repo(repo)
    data = tmp_path / "data"
    assert _run(data, "index", str(repo), "--no-embeddings", "--workers", "1") == 0
    assert "1 stale" in capsys.readouterr().out  # broken.ts alone
    assert _run(data, "search", str(repo), "find every entity", "--no-embeddings", "--json") == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["hits"][0]["symbol"] == "src:Repository::findEveryEntity"
    assert answer["stale_files"] == ["src/broken.ts"]
    assert _run(data, "outline", str(repo), "src/index.ts") == 0
    outline = capsys.readouterr().out
    assert "\tinterface\tinterface Check<in T = never>\n" in outline and "\tmethod\trun(input: T): void;\n" in outline
    assert "\tmethod\tpick(): T\n" in outline


def test_output_cut_short_by_its_reader_ends_quietly(tmp_path: Path) -> None:
    """`forgebot symbols . | head`: the reader goes after a line; the command stops without a traceback,
    with the status a shell gives a command whose reader left (141), as Unix tools do."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "many.py").write_text("".join(f"def function_number_{i}():\n    return {i}\n\n" for i in range(4_000)))
    env = {**os.environ, "FORGEBOT_DATA_DIR": str(tmp_path / "data")}
    command = [sys.executable, "-m", "bot.cli.main"]
    cwd = Path(__file__).resolve().parents[3]
    built = subprocess.run([*command, "index", str(root), "--no-embeddings"], env=env, cwd=cwd, capture_output=True,
                           text=True, timeout=120, check=False)
    assert built.returncode == 0, built.stderr
    run = subprocess.Popen([*command, "symbols", str(root)], env=env, cwd=cwd, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    assert run.stdout is not None and run.stderr is not None
    assert run.stdout.readline().startswith("many.py:")
    run.stdout.close()  # 4,000 lines are far more than a pipe holds: the command meets the closed pipe
    errors = run.stderr.read()
    assert run.wait(timeout=60) == 141
    assert "Traceback" not in errors and "BrokenPipeError" not in errors, errors


def test_a_broken_pipe_that_is_not_standard_output_is_an_error(capsys: Capture) -> None:
    from bot.cli.main import _reader_gone

    with capsys.disabled():
        assert not _reader_gone()  # standard output is still read: a broken socket is raised, not hidden
