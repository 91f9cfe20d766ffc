"""The statement check in front of `run_readonly_sql`: one read-only statement, or a refusal.

A read-only transaction is the first guard, but not a sufficient one: MySQL and MariaDB commit
implicitly before DDL, so `CREATE TABLE` escapes a `START TRANSACTION READ ONLY`, and
`SELECT ... INTO OUTFILE` writes a server file. So the text is checked first: comments (as the
server reads them: MySQL's `/*! */` is code, and refused) and quoted text removed, exactly one
statement, starting with SELECT, WITH, EXPLAIN or SHOW, with no keyword or function that writes,
locks or reaches outside the database. The connection should still use a database role that can
only read; these checks are defence in depth, not a substitute.
"""

from __future__ import annotations

import re
from typing import Literal

Dialect = Literal["postgres", "mysql", "sqlite"]
ALLOWED_FIRST = frozenset({"SELECT", "WITH", "EXPLAIN", "SHOW"})
_FORBIDDEN_WORDS = frozenset(
    {
        "INSERT", "UPDATE", "DELETE", "MERGE", "UPSERT", "INTO", "DROP", "ALTER", "CREATE",
        "TRUNCATE", "GRANT", "REVOKE", "LOCK", "COPY", "ATTACH", "DETACH", "PRAGMA", "VACUUM",
        "ANALYZE", "ANALYSE", "HANDLER", "RENAME", "CALL", "EXECUTE", "PREPARE", "DEALLOCATE",
    }
)  # fmt: skip
# Functions that read or write server files, reach other servers, or act on other sessions.
_FORBIDDEN_FUNCTIONS = frozenset(
    {
        "LOAD_FILE", "PG_READ_FILE", "PG_READ_BINARY_FILE", "PG_LS_DIR", "PG_STAT_FILE", "LO_IMPORT",
        "LO_EXPORT", "LO_FROM_BYTEA", "DBLINK", "DBLINK_EXEC", "PG_TERMINATE_BACKEND",
        "PG_CANCEL_BACKEND", "SET_CONFIG", "PG_RELOAD_CONF", "PG_ADVISORY_LOCK", "GET_LOCK",
        "LOAD_EXTENSION", "WRITEFILE", "READFILE", "EDIT", "FTS3_TOKENIZER",
    }
)  # fmt: skip
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_DOLLAR_TAG = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")
MAX_SQL_CHARS = 20_000
# MySQL and MariaDB run the text of `/*! ... */` (any server, or from a version on), MariaDB that of
# `/*M! ... */`, and MySQL reads optimizer hints from `/*+ ... */`: code, not comments.
_EXECUTED = ("/*!", "/*M!", "/*m!", "/*+")


class StatementRefused(ValueError):
    """The SQL is not a single read-only statement; the message says why, fit to show the model."""


def check_statement(sql: str, dialect: Dialect) -> str:
    """Return the statement without a trailing semicolon, or raise StatementRefused."""
    if len(sql) > MAX_SQL_CHARS:
        raise StatementRefused(f"statement longer than {MAX_SQL_CHARS} characters")
    code = strip_literals(sql, dialect)
    end = len(code.rstrip())
    if code[:end].endswith(";"):
        end = len(code[: end - 1].rstrip())
    body = code[:end].strip()
    if not body:
        raise StatementRefused("empty statement")
    if ";" in body:
        raise StatementRefused("only one statement per call")
    words = [w.upper() for w in _WORD.findall(body)]
    if not words or words[0] not in ALLOWED_FIRST:
        raise StatementRefused("only SELECT, WITH, EXPLAIN or SHOW statements are allowed")
    bad = sorted(set(words) & _FORBIDDEN_WORDS)
    if bad:
        raise StatementRefused(f"read-only access: {', '.join(bad)} is not allowed")
    for found in re.finditer(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", body):
        if found.group(1).upper() in _FORBIDDEN_FUNCTIONS:
            raise StatementRefused(f"read-only access: function {found.group(1)}() is not allowed")
    if re.search(r"\bFOR\s+(?:NO\s+KEY\s+)?(?:SHARE|KEY\s+SHARE)\b", body, re.I):
        raise StatementRefused("read-only access: row locks are not allowed")
    # Cut the original at the same place: no trailing semicolon or comment reaches the server.
    return sql[:end].strip()


def strip_literals(sql: str, dialect: Dialect) -> str:
    """Blank out comments and the inside of quoted text, keeping every character's position.

    Handles quoted text with doubled quotes, backslash escapes where the dialect has them (MySQL
    strings, Postgres E'...'), Postgres $tag$ bodies, -- and # line comments and /* */ block
    comments, each as the dialect's server reads it. Getting this wrong would let text the server
    runs pass as a comment, so unterminated text is refused and so are MySQL's executed comments.
    """
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"`":
            e_string = dialect == "postgres" and ch == "'" and i > 0 and sql[i - 1] in "eE"
            backslash = ch != "`" and (dialect == "mysql" or e_string)
            end = _skip_quoted(sql, i, ch, backslash)
            out.append(ch + " " * (end - i - 2) + ch)
            i = end
        elif _line_comment(sql, i, dialect):
            end = sql.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif sql.startswith("/*", i):
            if dialect == "mysql" and sql.startswith(_EXECUTED, i):
                raise StatementRefused("comments the server executes (/*!, /*M!, /*+) are not allowed")
            end = sql.find("*/", i + 2)
            if end < 0:
                raise StatementRefused("unterminated comment")
            out.append(" " * (end + 2 - i))
            i = end + 2
        elif ch == "$" and dialect == "postgres" and (tag := _DOLLAR_TAG.match(sql, i)) is not None:
            end = sql.find(tag.group(0), tag.end())
            if end < 0:
                raise StatementRefused("unterminated dollar-quoted text")
            end += len(tag.group(0))
            out.append("'" + " " * (end - i - 2) + "'")
            i = end
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _line_comment(sql: str, i: int, dialect: Dialect) -> bool:
    """Whether a line comment starts at `i`: `--` (MySQL: only before whitespace, else it is two
    minus signs, `1--1`), or MySQL's `#`."""
    if sql[i] == "#":
        return dialect == "mysql"
    if not sql.startswith("--", i):
        return False
    return dialect != "mysql" or i + 2 == len(sql) or sql[i + 2] == " " or ord(sql[i + 2]) < 32


def _skip_quoted(sql: str, start: int, quote: str, backslash: bool) -> int:
    i = start + 1
    while i < len(sql):
        if sql[i] == "\\" and backslash:
            i += 2
        elif sql[i] == quote:
            if sql.startswith(quote * 2, i):
                i += 2
            else:
                return i + 1
        else:
            i += 1
    raise StatementRefused("unterminated quoted text")
