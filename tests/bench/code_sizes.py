"""Print module and function size figures for the product packages (bot/, graph/, project/, foundation/).

Why: issue 23 ("one home per concern") asks for small modules and small functions; these
figures show whether a clean-up moved them, before and after. Sizes come from `ast`, so
they count what the parser sees: a module is its physical line count, a function is the
span from its `def` (decorators excluded) to its last line, nested functions counted on
their own as well as inside their parent.

Usage: `python tests/bench/code_sizes.py [ROOT]` (ROOT defaults to the repository root).
"""

from __future__ import annotations

import ast
import math
import statistics
import sys
from pathlib import Path

PACKAGES = ("bot", "graph", "project", "foundation")
LARGEST = 10


def _quantile(values: list[int], q: float) -> int:
    """The nearest-rank quantile: a value that occurs, so figures stay whole lines."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(len(ordered) * q)) - 1]


def _summary(values: list[int]) -> str:
    return (
        f"median {statistics.median(values):g}  p90 {_quantile(values, 0.9)}  "
        f"max {max(values)}  count {len(values)}"
    )


def _functions(path: Path, rel: str) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            end = node.end_lineno or node.lineno
            found.append((end - node.lineno + 1, f"{rel}:{node.lineno} {node.name}"))
    return found


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[2]
    modules: list[tuple[int, str]] = []
    functions: list[tuple[int, str]] = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            rel = str(path.relative_to(root))
            modules.append((len(path.read_text(encoding="utf-8").splitlines()), rel))
            functions.extend(_functions(path, rel))
    _say(f"modules ({'/, '.join(PACKAGES)}/): {_summary([n for n, _ in modules])}")
    _say(f"functions: {_summary([n for n, _ in functions])}")
    _say(f"largest {LARGEST} modules:")
    for lines, where in sorted(modules, reverse=True)[:LARGEST]:
        _say(f"  {lines:5d}  {where}")
    _say(f"largest {LARGEST} functions:")
    for lines, where in sorted(functions, reverse=True)[:LARGEST]:
        _say(f"  {lines:5d}  {where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
