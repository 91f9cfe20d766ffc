"""The planner's code context: diff, graph signatures and search chunks fitted to a budget."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from graph.checkout import index_checkout
from graph.planning_context import budget_for, planning_context
from graph.runtime.budget import estimate_tokens

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "php_project"


def _repo(tmp_path: Path, adr: str = "") -> tuple[Path, str]:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    if adr:
        (root / "docs" / "adr").mkdir(parents=True)
        (root / "docs" / "adr" / "0002-division.md").write_text(adr)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(
            ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
            check=True,
            capture_output=True,
        )
    index = index_checkout(tmp_path / "data", "local-ctx", root, "task1")["index"]
    return root, str(index)


def test_signatures_and_search_chunks_fill_the_budget_in_priority_order(tmp_path: Path) -> None:
    root, index = _repo(tmp_path)
    (root / "src/Calculator.php").write_text((root / "src/Calculator.php").read_text() + "\n// edited\n")
    head = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assembled = planning_context(root, index, head, ["App\\Calculator::add"], "divide by zero", 4000)
    kinds = [p.kind for p in assembled.included]
    assert kinds[0] == "diff" and "signature" in kinds and "search" in kinds
    assert kinds == sorted(kinds, key=["diff", "scratchpad", "signature", "search"].index)
    assert "App\\Calculator::add" in assembled.text and "// edited" in assembled.text
    assert assembled.tokens <= 4000


ADR = """# ADR 0002: Division by zero

## Decision

`Calculator::divide` throws on a zero divisor instead of returning INF: callers must not carry INF into
invoices, where it printed as an amount.
"""


def test_discovery_goes_from_memory_hits_to_the_graph_around_their_symbols(tmp_path: Path) -> None:
    root, index = _repo(tmp_path, ADR)
    assembled = planning_context(root, index, "", [], "why must a zero divisor throw in invoices", 4000)
    memory = [p for p in assembled.included if p.kind == "memory"]
    assert memory and memory[0].origin == "memory:document:docs/adr/0002-division.md § Decision"
    assert "symbols: App\\Calculator::divide" in memory[0].text
    # the analyzer named no symbol: the divide signature is there because the memory hit led to it
    signatures = {p.origin: p.text for p in assembled.included if p.kind == "signature"}
    assert "divide(int $a, int $b)" in signatures["graph:App\\Calculator::divide"]
    assert '<memory_hit origin="memory:document:docs/adr/0002-division.md' in assembled.text


def test_a_small_budget_omits_parts_and_says_so(tmp_path: Path) -> None:
    root, index = _repo(tmp_path)
    assembled = planning_context(
        root, index, "", ["App\\Calculator::add", "App\\Calculator::divide"], "divide add numbers", 120
    )
    assert assembled.omitted and "Omitted for the context budget" in assembled.text
    assert estimate_tokens(assembled.text) <= 120


def test_no_index_gives_only_the_diff(tmp_path: Path) -> None:
    root, _ = _repo(tmp_path)
    assembled = planning_context(root, "", "", ["App\\Calculator::add"], "add", 1000)
    assert assembled.included == [] and assembled.text == ""


def test_budget_is_a_quarter_of_the_window_less_the_fixed_text() -> None:
    assert budget_for(32_000, "") == 8_000
    assert budget_for(32_000, "x" * 30_000) == 8_000 - 10_000 // 4
    assert budget_for(1024, "x" * 100_000) == 256
