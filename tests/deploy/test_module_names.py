"""No two modules of the product share a name: `cli.py` in one package says which command line it is.

A newcomer searching for `runner.py` or `memory.py` should find one file. Package markers
(`__init__.py`, `__main__.py`) are the only names allowed more than once.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bot", "graph", "project", "foundation")
MARKERS = {"__init__.py", "__main__.py"}


def collisions(root: Path) -> dict[str, list[str]]:
    """Each module file name found in more than one place under the packages, with its places."""
    places: dict[str, list[str]] = defaultdict(list)
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if path.name not in MARKERS:
                places[path.name].append(str(path.relative_to(root)))
    return {name: where for name, where in places.items() if len(where) > 1}


def test_module_names_are_unique_across_the_packages() -> None:
    assert collisions(ROOT) == {}


def test_a_second_module_of_the_same_name_is_found(tmp_path: Path) -> None:
    for place in ("bot/cli.py", "project/index/cli.py", "graph/__init__.py", "foundation/__init__.py"):
        (tmp_path / place).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / place).write_text("")
    assert collisions(tmp_path) == {"cli.py": ["bot/cli.py", "project/index/cli.py"]}
