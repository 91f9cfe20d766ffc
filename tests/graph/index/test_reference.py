"""The fixtures are real PHP, and our definitions and call sites agree with nikic/php-parser on them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from project.index.db import Connection
from tests.graph.index.conftest import FIXTURES, php_files
from tests.tools import need

pytestmark = pytest.mark.php
SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "php_parser_symbols.php"
PHP_PARSER = Path("/usr/share/php/PhpParser/autoload.php")


def test_fixtures_pass_php_lint(php: str) -> None:
    for rel in php_files(FIXTURES):
        result = subprocess.run([php, "-l", str(FIXTURES / rel)], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr


def test_definitions_and_call_sites_match_php_parser(php: str, indexed: tuple[Connection, Path]) -> None:
    need(PHP_PARSER.is_file(), "Debian's php-parser")
    conn, repo = indexed
    out = subprocess.run(
        [php, str(SCRIPT), str(repo)],
        input="\n".join(php_files(repo)),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    reference_defs = sorted((r["kind"], r["fqn"], r["path"], r["line"]) for r in rows if r["t"] == "def")
    reference_calls = sorted((r["path"], r["line"], r["name"]) for r in rows if r["t"] == "call")
    query = "SELECT kind, fqn, path, start_line FROM symbols WHERE kind != 'namespace'"
    ours_defs = sorted(tuple(row) for row in conn.execute(query))
    ours_calls = sorted(
        (p, ln, str(name).lower())
        for p, ln, name in conn.execute("SELECT path, line, target_name FROM relations WHERE kind = 'calls'")
    )
    assert ours_defs == reference_defs
    assert ours_calls == reference_calls
    assert not [r for r in rows if r["t"] == "error"]
