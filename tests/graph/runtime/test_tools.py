"""Tool sets by role and path validation: enforced by code, failing closed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from graph.tools import (
    FORBIDDEN_TOOLS,
    INVESTIGATION_ROLES,
    ROLE_TOOLS,
    WRITE_TOOLS,
    ToolNotAllowed,
    check_role_tools,
    tools_for,
)
from graph.tools.code import search_tools
from graph.tools.files import (
    MAX_LINE_CHARS,
    MAX_READ_CHARS,
    MAX_READ_LINES,
    file_tools,
    list_dir,
    outline,
    read_lines,
)
from graph.tools.paths import PathRejected, relative, resolve_in_worktree
from tests.graph.runtime.conftest import write_tool


def test_investigation_roles_never_write_and_coder_has_no_shell() -> None:
    for role in INVESTIGATION_ROLES:
        assert not ROLE_TOOLS[role] & WRITE_TOOLS
    assert WRITE_TOOLS <= ROLE_TOOLS["coder"]
    assert not any(ROLE_TOOLS[r] & FORBIDDEN_TOOLS for r in ROLE_TOOLS)


def test_tools_for_picks_allowed_and_check_refuses(worktree: Path) -> None:
    available = {**file_tools(worktree), "apply_patch": write_tool(worktree)}
    assert [t.name for t in tools_for("analyzer", available)] == ["get_file_outline", "list_files", "read_file"]
    assert "apply_patch" in [t.name for t in tools_for("coder", available)]
    with pytest.raises(ToolNotAllowed, match="apply_patch"):
        check_role_tools("reviewer", ["read_file", "apply_patch"])
    with pytest.raises(ToolNotAllowed, match="run_shell"):
        check_role_tools("coder", ["run_shell"])
    with pytest.raises(ToolNotAllowed, match="without tools"):
        tools_for("planner", available)
    with pytest.raises(ValueError, match="named"):
        tools_for("coder", {"write_file": write_tool(worktree)})


@pytest.mark.parametrize("bad", ["/etc/passwd", "../outside.php", "src/../../x", ".git/config", "", "a\x00b",
                                 "~/secret"])
def test_bad_paths_are_rejected(worktree: Path, bad: str) -> None:
    with pytest.raises(PathRejected):
        resolve_in_worktree(worktree, bad)


def test_symlink_escaping_the_worktree_is_rejected(worktree: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("token")
    os.symlink(tmp_path / "secret.txt", worktree / "src" / "link.php")
    os.symlink(worktree / ".git", worktree / "gitdir")
    os.symlink(worktree / "src" / "Small.php", worktree / "inside.php")
    with pytest.raises(PathRejected, match="outside"):
        resolve_in_worktree(worktree, "src/link.php")
    with pytest.raises(PathRejected, match=".git"):
        resolve_in_worktree(worktree, "gitdir/config")
    assert relative(worktree, "inside.php") == "src/Small.php"
    assert relative(worktree, "./src//Small.php") == "src/Small.php"


def test_read_tool_numbers_lines_and_caps_length(worktree: Path) -> None:
    text = read_lines(worktree, "src/Large.php", 5, 6)
    assert text.splitlines()[0].startswith("    5| ") and "more lines; read from 7" in text
    assert len(read_lines(worktree, "src/Large.php").splitlines()) == MAX_READ_LINES + 1
    with pytest.raises(ValueError, match="range"):
        read_lines(worktree, "src/Large.php", 9, 3)
    with pytest.raises(FileNotFoundError):
        read_lines(worktree, "src/Nope.php")


def test_a_minified_or_generated_file_reads_in_pieces_a_context_can_hold(worktree: Path) -> None:
    """A bundle is one line of megabytes and 400 lines of generated data can be as large: each read
    shows a long line's start and at most MAX_READ_CHARS, and says where to read on, in both read tools."""
    (worktree / "public").mkdir()
    (worktree / "public/app.min.js").write_text("var a=1;" * 500_000 + "\nvar b=2;\n")
    (worktree / "public/data.js").write_text("".join(f"var row{i} = '{'x' * 1_000}';\n" for i in range(400)))
    first = read_lines(worktree, "public/app.min.js")
    assert first.startswith("    1| var a=1;var a=1;") and "[line cut: 4,000,000 characters]" in first
    assert "    2| var b=2;" in first and len(first) < MAX_LINE_CHARS + 100
    data = read_lines(worktree, "public/data.js")
    shown = len(data.splitlines()) - 1
    assert 30 < shown < 40 and len(data) <= MAX_READ_CHARS + 100
    assert data.endswith(f"[{400 - shown} more lines; read from {shown + 1}]")
    assert read_lines(worktree, "public/data.js", shown + 1).startswith(f"{shown + 1:>5}| var row{shown} =")
    snippet = str(search_tools(worktree, None)["read_file_snippet"].invoke({"path": "public/data.js"}))
    assert snippet.endswith(f"[public/data.js: lines 1-{shown} of 400]")
    (worktree / "public/generated.php").write_text("".join(f"function f{i}() {{}}\n" for i in range(50_000)))
    shape = outline(worktree, "public/generated.php")
    assert len(shape) <= MAX_READ_CHARS + 40 and shape.endswith(" more declarations]")
    assert outline(worktree, "public/app.min.js") == "(no declarations found)"
    (worktree / "many").mkdir()
    for i in range(5_000):
        (worktree / "many" / f"file{i:05}.txt").touch()
    listing = list_dir(worktree, "many")
    assert listing.startswith("file00000.txt\n") and listing.endswith(" more entries]")
