"""Build and incremental sync: hash-decided re-parse, atomic replace, stale on syntax errors."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import tree_sitter

from project.index import store
from project.index.aliases import Aliases
from project.index.db import Connection, connect
from project.index.extractors import extractor_for
from project.index.generated import OUTSIDE
from project.index.parse import FileRows
from project.index.store import build, relative_path, sync_files, write_file
from tests.graph.index.conftest import php_files

CIRCLE = "src/Model/Circle.php"


def _fqns(conn: Connection, path: str) -> set[str]:
    return {row[0] for row in conn.execute("SELECT fqn FROM symbols WHERE path = ?", (path,))}


def _file(conn: Connection, path: str) -> tuple[str, int] | None:
    row = conn.execute("SELECT content_hash, stale FROM files WHERE path = ?", (path,)).fetchone()
    return None if row is None else (row[0], row[1])


def test_build_stores_every_file_with_meta(indexed: tuple[Connection, Path]) -> None:
    conn, repo = indexed
    assert {row[0] for row in conn.execute("SELECT path FROM files")} == set(php_files(repo))
    assert "Acme\\Geometry\\Model\\Circle::describe" in _fqns(conn, CIRCLE)
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    assert meta["graph.repo"] == "acme" and float(meta["graph.built_at"]) > 0


def test_rebuild_skips_unchanged_files_and_drops_unlisted_ones(indexed: tuple[Connection, Path]) -> None:
    conn, repo = indexed
    (repo / "src/multi.php").unlink()
    (repo / CIRCLE).write_text((repo / CIRCLE).read_text().replace("function area()", "function surface()"))
    report = build(conn, repo, php_files(repo))
    assert report.parsed == [CIRCLE]
    assert report.removed == ["src/multi.php"]
    assert len(report.unchanged) == len(php_files(repo)) - 1
    assert "Acme\\Geometry\\Model\\Circle::surface" in _fqns(conn, CIRCLE)
    assert "Acme\\Geometry\\Model\\Circle::area" not in _fqns(conn, CIRCLE)
    assert _fqns(conn, "src/multi.php") == set()


def test_sync_reparses_only_when_the_content_hash_changes(indexed: tuple[Connection, Path]) -> None:
    conn, repo = indexed
    assert sync_files(conn, repo, [CIRCLE]).unchanged == [CIRCLE]
    (repo / CIRCLE).write_text((repo / CIRCLE).read_text() + "\nfunction added(): void {}\n")
    report = sync_files(conn, repo, [repo / CIRCLE])  # absolute paths inside the checkout are accepted
    assert report.parsed == [CIRCLE]
    assert "Acme\\Geometry\\Model\\added" in _fqns(conn, CIRCLE)
    count = conn.execute("SELECT COUNT(*) FROM symbols WHERE fqn = ?", ("Acme\\Geometry\\Model\\Circle",))
    assert count.fetchone()[0] == 1


def test_syntax_error_keeps_last_good_rows_marked_stale_until_fixed(indexed: tuple[Connection, Path]) -> None:
    conn, repo = indexed
    good = (repo / CIRCLE).read_text()
    before = _fqns(conn, CIRCLE)
    broken = good.replace("public function area(): float\n    {", "public function area(: float {")
    (repo / CIRCLE).write_text(broken)
    report = sync_files(conn, repo, [CIRCLE])
    assert report.stale == [CIRCLE] and report.parsed == []
    assert _fqns(conn, CIRCLE) == before
    stored = _file(conn, CIRCLE)
    assert stored is not None and stored[1] == 1
    assert sync_files(conn, repo, [CIRCLE]).stale == [CIRCLE]  # same broken content: still stale
    (repo / CIRCLE).write_text(good.replace("describe", "explain"))
    assert sync_files(conn, repo, [CIRCLE]).parsed == [CIRCLE]
    assert "Acme\\Geometry\\Model\\Circle::explain" in _fqns(conn, CIRCLE)
    fixed = _file(conn, CIRCLE)
    assert fixed is not None and fixed[1] == 0


def test_new_broken_file_is_indexed_partially_and_marked_stale(indexed: tuple[Connection, Path]) -> None:
    conn, repo = indexed
    (repo / "src/New.php").write_text("<?php\nnamespace N;\nclass Ok { function a() {} }\nfunction (\n")
    report = sync_files(conn, repo, ["src/New.php"])
    assert report.stale == ["src/New.php"]
    assert "N\\Ok" in _fqns(conn, "src/New.php")
    assert _file(conn, "src/New.php") is not None


def test_sync_of_a_deleted_file_removes_its_rows(indexed: tuple[Connection, Path]) -> None:
    conn, repo = indexed
    (repo / CIRCLE).unlink()
    assert sync_files(conn, repo, [CIRCLE]).removed == [CIRCLE]
    assert _fqns(conn, CIRCLE) == set() and _file(conn, CIRCLE) is None
    assert conn.execute("SELECT COUNT(*) FROM relations WHERE path = ?", (CIRCLE,)).fetchone()[0] == 0


def test_sync_ignores_files_of_other_languages(indexed: tuple[Connection, Path]) -> None:
    conn, repo = indexed
    (repo / "README.md").write_text("# hi\n")
    report = sync_files(conn, repo, ["README.md"])
    assert (report.parsed, report.removed, report.unchanged) == ([], [], [])


def test_failed_first_build_rolls_back_completely(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = extractor_for("x.php")
    assert real is not None
    seen: list[str] = []

    def failing(path: str, source: bytes, tree: tree_sitter.Tree, digest: str, aliases: Aliases | None,
                /, *, relations: bool = True) -> FileRows:
        seen.append(path)
        if len(seen) == 3:
            raise OSError("disk went away")
        return real.rows(path, source, tree, digest, aliases)

    monkeypatch.setattr(store, "extractor_for", lambda path: dataclasses.replace(real, rows=failing))
    conn = connect(tmp_path / "fresh.db")
    with pytest.raises(OSError, match="disk went away"):
        build(conn, repo, php_files(repo))
    assert conn.execute("SELECT COUNT(*) FROM symbols").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM files").fetchone()[0] == 0
    indexes = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"symbols_fqn", "relations_target_fqn"} <= indexes  # the dropped indexes came back


def test_failed_write_leaves_the_previous_rows(indexed: tuple[Connection, Path]) -> None:
    conn, _ = indexed
    before = _fqns(conn, CIRCLE)
    bad = FileRows(CIRCLE, "0" * 40, "php", False, [("too", "short")], [])  # type: ignore[list-item]
    with pytest.raises(Exception, match="bindings|supplied"), conn:
        write_file(conn, bad, 0.0)
    assert _fqns(conn, CIRCLE) == before


def test_paths_outside_the_checkout_are_never_read(repo: Path, tmp_path: Path) -> None:
    """Left out and said, not read and not fatal: a repository can commit a link out of itself
    (tests/security/test_hostile_sources.py); a tool's path outside is still an error."""
    conn = connect(tmp_path / "other.db")
    (tmp_path / "escape.php").write_text("<?php function escaped() {}\n")
    assert sync_files(conn, repo, ["../escape.php"]).left_out == {"../escape.php": OUTSIDE}
    assert build(conn, repo, ["/etc/passwd.php", "../escape.php"]).left_out == {
        "/etc/passwd.php": OUTSIDE, "../escape.php": OUTSIDE}
    assert conn.execute("SELECT count(*) FROM symbols").fetchone()[0] == 0
    with pytest.raises(ValueError, match="outside the repository"):
        relative_path(repo, "../escape.php")
    assert relative_path(repo, "src/./Model/../multi.php") == "src/multi.php"


def test_parallel_build_matches_serial_build(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In this process or in parser processes, with the indexes kept while inserting or made after: one result."""
    monkeypatch.setattr(store, "PARALLEL_FROM_FILES", 0)  # the fixture is small: parse it in processes anyway
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    builds = {workers: connect(tmp_path / f"{workers}.db") for workers in (0, 1, 2)}
    for workers, conn in builds.items():
        # 0: here, indexes after; 1: a parser process leaving this one a core, indexes while inserting;
        # 2: parser processes on every core, indexes after
        build(conn, repo, php_files(repo), workers=workers)
    symbols = "SELECT path, kind, fqn, start_line FROM symbols ORDER BY path, start_byte"
    relations = ("SELECT path, kind, source_fqn, target_name, target_fqn, fallback_fqn, line FROM relations"
                 " ORDER BY 1, 7, 2, 3, 4")
    indexes = "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%' ORDER BY name"
    for query in (symbols, relations, indexes):
        assert builds[1].execute(query).fetchall() == builds[0].execute(query).fetchall()
        assert builds[2].execute(query).fetchall() == builds[0].execute(query).fetchall()
    assert builds[0].execute("SELECT COUNT(*) FROM relations").fetchone()[0] > 50
    assert len(builds[1].execute(indexes).fetchall()) == 9  # 3 of symbols, 6 of relations (1 of template rows)


def _sized(rows: FileRows, source: bytes, timings: object) -> tuple[str, int, str]:
    """A `prepare` of the test: what it was handed of each file."""
    return rows.path, len(source), source[-40:].decode("utf-8", "replace")


def test_rows_from_parser_processes_arrive_whole(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What parser processes send back (packed by marshal) is what this process would have made: every
    field of every file's rows, in every language, a left-out file's reason, and the bytes `prepare` reads."""
    monkeypatch.setattr(store, "PARALLEL_FROM_FILES", 0)
    (repo / "lib").mkdir()
    (repo / "lib" / "tool.py").write_text(
        '"""Outil: déjà vu."""\nimport os\n\ndef run(p):\n    return os.path.join(p, "é")\n')
    (repo / "web").mkdir()
    (repo / "web" / "app.ts").write_text("import { run } from './run';\nexport class App { go(): void { run(); } }\n")
    (repo / "web" / "bundle.min.js").write_text("function a(b){return b.c(d)};" * 300 + "\n")
    files = [*php_files(repo), "lib/tool.py", "web/app.ts", "web/bundle.min.js"]
    made: dict[int, list[FileRows]] = {}
    for workers in (0, 1):
        found: list[FileRows] = []
        build(connect(tmp_path / f"{workers}.db"), repo, files, workers=workers, prepare=_sized, consume=found.append)
        made[workers] = found
    assert made[1] == made[0]
    by_path = {rows.path: rows for rows in made[1]}
    assert set(by_path) == set(files)
    assert by_path["web/bundle.min.js"].left_out.startswith("minified") and not by_path["web/bundle.min.js"].symbols
    source = (repo / "lib/tool.py").read_bytes()
    assert by_path["lib/tool.py"].prepared == ("lib/tool.py", len(source), source[-40:].decode())
    assert {row[4] for row in by_path["lib/tool.py"].relations} >= {"os.path.join", "os"}
    assert any(row[3] == "run" for row in by_path["web/app.ts"].relations)
    assert all(isinstance(row, tuple) for rows in made[1] for row in (*rows.symbols, *rows.relations))


def test_parser_processes_are_forked_only_from_a_single_thread() -> None:
    """A fork copies one thread; a lock another thread held would stay locked in the child forever."""
    alone = subprocess.run(  # a fresh interpreter: this one may hold other tests' threads
        [sys.executable, "-c", "from project.index import store; print(store._start_method().get_start_method())"],
        capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[3])
    assert alone.stdout.strip() == "fork"
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert store._start_method().get_start_method() == "forkserver"
    finally:
        stop.set()
        other.join()


def test_an_index_made_by_other_extraction_rules_is_read_again(repo: Path, tmp_path: Path) -> None:
    """An index an earlier release built holds rows its extractors wrote: its unchanged files are not
    kept as they are (an upgrade would otherwise mix old and new rows until each file changed)."""
    conn = connect(tmp_path / "index.db")
    files = sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*.php"))
    build(conn, repo, files)
    assert build(conn, repo, files).parsed == []
    with conn:
        conn.execute("DELETE FROM meta WHERE key = 'graph.rows'")  # as a release before the record made it
        conn.execute("INSERT INTO relations VALUES (NULL, ?, 'calls', 'old', 'old', 'old', '', 1)", (files[0],))
    again = build(conn, repo, files)
    assert sorted(again.parsed + again.stale) == files
    assert conn.execute("SELECT count(*) FROM relations WHERE source_fqn = 'old'").fetchone()[0] == 0

