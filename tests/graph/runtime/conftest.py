"""A real git worktree with a small PHP project, and helpers to build sessions on it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from langchain_core.tools import BaseTool, StructuredTool

from foundation.settings import LLMSettings
from graph.runtime.accounting import Ledger
from graph.runtime.injection import InjectionLimits
from graph.runtime.loop import Session
from graph.runtime.scratchpad import Memory
from graph.runtime.trace import Trace
from graph.tools.files import file_tools
from graph.tools.paths import resolve_in_worktree

SMALL = "<?php\nclass Small\n{\n    public function one(): int\n    {\n        return 1;\n    }\n}\n"


def _large() -> str:
    methods = "".join(
        f"    public function m{i}(): int\n    {{\n        return {i};\n    }}\n\n" for i in range(1, 80)
    )
    return f"<?php\nnamespace App;\n\nclass Large\n{{\n{methods}}}\n"


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "Small.php").write_text(SMALL)
    (root / "src" / "Large.php").write_text(_large())
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    subprocess.run([*git, "init", "-q", str(root)], check=True)
    subprocess.run([*git, "-C", str(root), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(root), "commit", "-qm", "init"], check=True)
    return root


def write_tool(root: Path, on_patch: Callable[[str], None] | None = None) -> BaseTool:
    """A minimal `apply_patch` for the coder tests: replace text in a file (the real one is `graph.coder.patch`'s)."""

    def apply_patch(path: str, old: str, new: str) -> str:
        """Replace `old` by `new` in a repository file."""
        target = resolve_in_worktree(root, path)
        text = target.read_text()
        if old not in text:
            raise ValueError(f"{old!r} not found in {path}")
        target.write_text(text.replace(old, new, 1))
        if on_patch is not None:
            on_patch(path)
        return "patched"

    return StructuredTool.from_function(apply_patch)


def tools(root: Path, *extra: BaseTool) -> list[BaseTool]:
    return [*file_tools(root).values(), *extra]


def make_session(
    root: Path,
    role: str,
    *,
    targets: Sequence[str] | Callable[[], Sequence[str]] = (),
    max_calls: int = 20,
    memory: Memory | None = None,
    trace: Trace | None = None,
    token_budget: int = 1_000_000,
    system: Callable[[], str] | None = None,
) -> Session:
    return Session(
        role=role,
        root=root,
        system=system or (lambda: f"You are the {role}."),
        targets=targets if callable(targets) else (lambda: list(targets)),
        max_calls=max_calls,
        ledger=Ledger(token_budget=token_budget, prices=LLMSettings().prices),
        trace=trace,
        memory=memory,
        limits=InjectionLimits(max_files=4, full_max_bytes=1_000, total_max_bytes=8_000),
    )
