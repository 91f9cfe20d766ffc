"""Fail when the product imports a library that pyproject.toml does not declare, or a library's private module.

The product's packages are read with `ast` (nothing is imported). Each absolute import outside the
standard library and forgebot's own packages is mapped to the distribution that provides it
(`importlib.metadata.packages_distributions()` of the environment this runs in), and that
distribution must be a `[project] dependencies` entry. An import inside `try: ... except
ImportError` may instead come from an extra of `[project.optional-dependencies]` (the product then
says which extra to install). A module path with a component starting with `_` under a library
(`langgraph._internal...`) is a private import and fails too: it can change in any release.

A library that is installed only as another's dependency works today and breaks the day that other
library drops it, which is why "imported" must mean "declared".

Usage: python scripts/check_deps.py [ROOT]   (exit 1 and one line per finding on failure)
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from dataclasses import dataclass
from importlib.metadata import packages_distributions
from pathlib import Path

GUARDS = frozenset({"ImportError", "ModuleNotFoundError"})


@dataclass(frozen=True)
class Import:
    path: Path
    line: int
    module: str  # the dotted module as written
    guarded: bool  # inside `try:` whose handlers catch ImportError


def normalize(name: str) -> str:
    """A distribution's name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(spec: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
    if match is None:
        raise ValueError(f"unreadable requirement {spec!r}")
    return normalize(match.group(1))


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    kind = handler.type
    names = kind.elts if isinstance(kind, ast.Tuple) else [kind] if kind is not None else []
    return any(isinstance(n, ast.Name) and n.id in GUARDS for n in names)


def imports_of(path: Path) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[Import] = []

    def visit(node: ast.AST, guarded: bool) -> None:
        if isinstance(node, ast.Try):
            inner = guarded or any(_catches_import_error(h) for h in node.handlers)
            for child in node.body:
                visit(child, inner)
            for part in (*node.handlers, *node.orelse, *node.finalbody):
                visit(part, guarded)
            return
        if isinstance(node, ast.Import):
            found.extend(Import(path, node.lineno, alias.name, guarded) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(Import(path, node.lineno, node.module, guarded))
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    visit(tree, False)
    return found


def check(root: Path) -> list[str]:
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    required = {requirement_name(s) for s in project["dependencies"]}
    extras = {extra: {requirement_name(s) for s in specs}
              for extra, specs in project.get("optional-dependencies", {}).items() if extra != "dev"}
    optional = set().union(*extras.values()) if extras else set()
    packages = project_packages(root)
    providers = packages_distributions()
    problems: list[str] = []
    for package in sorted(packages):
        for path in sorted((root / package).rglob("*.py")):
            for imp in imports_of(path):
                problem = judge(imp, packages, providers, required, optional)
                if problem:
                    problems.append(f"{imp.path.relative_to(root)}:{imp.line}: {problem}")
    return problems


def judge(imp: Import, packages: set[str], providers: dict[str, list[str]], required: set[str],
          optional: set[str]) -> str:
    """What is wrong with one import, or "" when nothing is."""
    top = imp.module.split(".")[0]
    if top in packages or top in sys.stdlib_module_names or top == "__future__":
        return ""
    private = [part for part in imp.module.split(".")[1:] if part.startswith("_")]
    if private:
        return f"`{imp.module}` is a private module of a library (no promise it exists in the next release)"
    dists = {normalize(d) for d in providers.get(top, [])}
    if not dists:
        return f"`{imp.module}`: no installed distribution provides `{top}`; declare it in pyproject.toml"
    if dists & required:
        return ""
    if imp.guarded and dists & optional:
        return ""
    where = "an extra, and imported outside `except ImportError`" if dists & optional else "nowhere"
    return (f"`{imp.module}` comes from {', '.join(sorted(dists))}, declared {where}; "
            f"add it to [project] dependencies")


def project_packages(root: Path) -> set[str]:
    """The packages the wheel ships (the ones checked, and the ones that are first-party)."""
    wheel = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    return set(wheel["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"])


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    problems = check(root)
    for line in problems:
        sys.stdout.write(line + "\n")
    if problems:
        sys.stderr.write(f"{len(problems)} undeclared or private import(s)\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
