"""A very long path is the model's mistake, not the bot's: the loop's own
dispatcher (`run_tool`) answers it as a tool error the model can act on, never as an `OSError` that
reads as an infrastructure failure and stops the task; a patch naming one is refused before git runs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from graph.coder import patch as patching
from graph.runtime.tool_calls import run_tool
from graph.tools.files import file_tools

LONG_PART = "a" * 300  # past NAME_MAX (255)
LONG_PATH = "/".join(["src"] + ["dir"] * 400)  # past 1,024 bytes, every part short


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "A.php").write_text("<?php\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return tmp_path


@pytest.mark.parametrize("path", [LONG_PART, f"src/{LONG_PART}.php", LONG_PATH])
@pytest.mark.parametrize("tool", ["read_file", "list_files"])
async def test_a_long_path_is_a_tool_error_not_an_infrastructure_failure(root: Path, path: str, tool: str) -> None:
    # the same path reaches the kernel as ENAMETOOLONG: what the tool used to raise
    with pytest.raises(OSError):
        (root / path).stat()
    args = {"path": path} if tool == "read_file" else {"directory": path}
    outcome = await run_tool(root, file_tools(root), tool, args, None)
    assert outcome.status == "error", outcome.text
    assert "longer than" in outcome.text


@pytest.mark.parametrize("path", [f"src/{LONG_PART}.php", LONG_PATH])
def test_a_patch_naming_a_long_path_is_refused_before_git(path: str) -> None:
    with pytest.raises(patching.PatchRefused, match="longer than"):
        patching.canonical(path)
