"""Python, TypeScript and JavaScript code graphs against each language's own compiler, on real code.

Definitions: (path, name, start line, kind) from `forgebot index` + `forgebot symbols --json` against
  - Python: the standard library's `ast` (modules, classes, functions; a function directly in a class
    body, or in a block of it, is a method), files `ast` rejects left out;
  - TypeScript/JavaScript: the TypeScript compiler's parser (`typescript_symbols.cjs` beside this
    file, npm's `typescript` installed on first use under ~/.cache/forgebot-bench/node, never in git),
    files with parse diagnostics left out; a Vue or Svelte component's script blocks as its own
    compiler (`@vue/compiler-sfc`, `svelte`, installed beside it) finds them, read in place as TypeScript.
Relations: `--edges N` prints N resolved call and import edges per language, drawn at random (seed
`--seed`) among those whose target, followed through import bindings, is a definition of the
repository: the call's line, the target and the target's line, to be checked by reading the code.

    python tests/bench/bench_languages.py --corpus sympy=/path/to/sympy --show 5
    python tests/bench/bench_languages.py --corpus typeorm=/path/to/typeorm --edges 100 --seed 7

Goal: definitions precision and recall >= 99.5 % per language; hand-checked resolution precision >= 95 %.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from project.index.bindings import definition
from project.index.db import Connection, connect
from project.index.extractors import extractor_for
from project.index.index_cli import list_files
from project.index.location import index_path
from project.index.python_graph import module_name
from project.index.store import left_out_files
from tests.bench.bench_codegraph_accuracy import _cli, kind_rows, say

HERE = Path(__file__).resolve().parent
NODE_DIR = Path.home() / ".cache" / "forgebot-bench" / "node"
TYPESCRIPT = "typescript@5.9.3"  # the JavaScript compiler API (7.x is the native port, without it)
VUE_SFC = "@vue/compiler-sfc@3.5.25"  # Vue's own reading of a component's blocks
SVELTE = "svelte@5.60.1"  # Svelte's own (its compiler's `parse`)
Key = tuple[str, str, str, str]  # path, name, start line, kind
FAMILY = {"python": "python", "typescript": "typescript/javascript", "javascript": "typescript/javascript",
          "vue": "typescript/javascript", "svelte": "typescript/javascript"}


# --- references ------------------------------------------------------------------------------------


def python_reference(root: Path, files: list[str]) -> tuple[Counter[Key], set[str]]:
    found: Counter[Key] = Counter()
    errors: set[str] = set()
    for rel in files:
        try:
            tree = ast.parse((root / rel).read_bytes(), rel)
        except (SyntaxError, ValueError):
            errors.add(rel)
            continue
        found[(rel, module_name(rel).rsplit(".", 1)[-1], "1", "module")] += 1
        _python_defs(rel, tree, False, found)
    return found, errors


def _python_defs(rel: str, node: ast.AST, in_class: bool, found: Counter[Key]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            found[(rel, child.name, str(child.lineno), "class")] += 1
            _python_defs(rel, child, True, found)
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            found[(rel, child.name, str(child.lineno), "method" if in_class else "function")] += 1
            _python_defs(rel, child, False, found)
        elif isinstance(child, ast.Lambda):
            _python_defs(rel, child, False, found)
        else:  # statements and expressions of the same scope: an `if` in a class body is still the class
            _python_defs(rel, child, in_class, found)


def typescript_reference(root: Path, files: list[str]) -> tuple[Counter[Key], set[str]]:
    for package, spec in (("typescript", TYPESCRIPT), ("@vue/compiler-sfc", VUE_SFC), ("svelte", SVELTE)):
        if not (NODE_DIR / "node_modules" / package).is_dir():
            NODE_DIR.mkdir(parents=True, exist_ok=True)
            subprocess.run(["npm", "install", "--prefix", str(NODE_DIR), "--no-audit", "--no-fund", "--ignore-scripts",
                            spec], check=True, capture_output=True)
    done = subprocess.run(["node", "--max-old-space-size=4096", str(HERE / "typescript_symbols.cjs"),
                           str(NODE_DIR / "node_modules"), str(root)],
                          input="\n".join(files).encode(), capture_output=True, check=True)
    found: Counter[Key] = Counter()
    errors: set[str] = set()
    for line in done.stdout.decode().splitlines():
        row = json.loads(line)
        if row["t"] == "def":
            found[(row["path"], row["name"], str(row["line"]), row["kind"])] += 1
        else:
            errors.add(row["path"])
    return found, errors


# --- ours ------------------------------------------------------------------------------------------


def ours(root: Path, data: Path) -> tuple[Counter[Key], set[str], set[str]]:
    """What `forgebot index` stored (read from its database: `forgebot symbols` leaves namespaces out), its
    stale files, and the files it left out as not hand-written (`project.index.generated`: minified,
    generated, over the size limit), which are compared on neither side."""
    _cli(data, "index", str(root), "--no-embeddings", "--workers", "2")
    conn = connect(index_path(data, root), readonly=True)
    found: Counter[Key] = Counter(
        (str(path), str(name), str(line), str(kind))
        for path, name, line, kind in conn.execute("SELECT path, name, start_line, kind FROM symbols"))
    stale = {str(r[0]) for r in conn.execute("SELECT path FROM files WHERE stale = 1")}
    generated = set(left_out_files(conn))
    conn.close()
    return found, stale, generated


def compare(name: str, root: Path, show: int, edges: int, seed: int) -> None:
    listed = [f for f in list_files(root) if extractor_for(f) is not None and (root / f).is_file()]
    files = [f for f in listed if not (root / f).is_symlink()]  # the graph indexes a link at its target
    if len(files) < len(listed):
        say(f"\n{name}: {len(listed) - len(files)} symlinked files left out (indexed once, at their target)")
    by_family: dict[str, list[str]] = {}
    for rel in files:
        extractor = extractor_for(rel)
        assert extractor is not None
        family = FAMILY.get("typescript" if extractor.language == "tsx" else extractor.language)
        if family:
            by_family.setdefault(family, []).append(rel)
    with tempfile.TemporaryDirectory() as tmp:
        mine_all, stale, generated = ours(root, Path(tmp))
        if generated:
            shown = ", ".join(sorted(generated)[:5])
            say(f"\n{name}: {len(generated)} files left out of both as not hand-written: {shown}")
        for family, paths in sorted(by_family.items()):
            reference = python_reference if family == "python" else typescript_reference
            ref, errors = reference(root, paths)
            left_out = errors | stale | generated
            wanted = set(paths) - left_out
            mine = Counter({k: v for k, v in mine_all.items() if k[0] in wanted})
            ref = Counter({k: v for k, v in ref.items() if k[0] in wanted})
            _report(name, family, root, len(paths), errors, stale & set(paths), mine, ref, show)
        if edges:
            conn = connect(index_path(Path(tmp), root), readonly=True)
            for family, paths in sorted(by_family.items()):
                _sample_edges(conn, root, family, set(paths), edges, seed)
            conn.close()


def _report(name: str, family: str, root: Path, count: int, errors: set[str], stale: set[str],
            mine: Counter[Key], ref: Counter[Key], show: int) -> None:
    say(f"\n== {name} / {family}: {root} ({count} files; left out: {len(errors)} the compiler rejects, "
        f"{len(stale)} tree-sitter parses with errors)")
    say(f"{'kind':<12}{'reference':>10}{'ours':>10}{'matched':>10}{'precision':>11}{'recall':>9}")
    kind_rows(mine, ref, 3, "ALL")
    for label, diff in (("missing", ref - mine), ("extra", mine - ref)):
        by_kind = Counter(k[3] for k in diff.elements())
        if by_kind:
            say(f"  {label} by kind: {dict(by_kind)}")
        for key in list(diff)[:show]:
            say(f"  {label}: {key}")


def _sample_edges(conn: Connection, root: Path, family: str, paths: set[str], count: int, seed: int) -> None:
    rows = [r for r in conn.execute(
        "SELECT path, line, kind, source_fqn, target_name, target_fqn, fallback_fqn FROM relations "
        "WHERE kind IN ('calls', 'imports') AND target_fqn != '' ORDER BY id") if r[0] in paths]
    resolved = []
    for path, line, kind, source, name, target, fallback in rows:
        found = _defined(conn, target) or (_defined(conn, fallback) if fallback else None)
        if found is not None:
            resolved.append((path, line, kind, source, name, target, found))
    total = len(rows)
    say(f"\n== edges / {family}: {len(resolved)} of {total} resolved call and import edges reach a definition "
        f"of the repository; {min(count, len(resolved))} drawn (seed {seed})")
    for path, line, kind, source, name, target, (fqn, where, def_line) in random.Random(seed).sample(
            resolved, min(count, len(resolved))):
        text = _line(root / path, int(line))
        say(f"- {kind} {name} in {source or path} at {path}:{line}  {text}\n    {target} = {fqn} at {where}:{def_line}"
            f"  {_line(root / where, def_line)}")


def _defined(conn: Connection, fqn: str) -> tuple[str, str, int] | None:
    target = definition(conn, fqn)
    row = conn.execute("SELECT fqn, path, start_line FROM symbols WHERE fqn = ? AND kind != 'module' LIMIT 1",
                       (target,)).fetchone()
    if row is None and "::" in target:  # a method inherited: the class's own row says where the call lands
        return None
    return (str(row[0]), str(row[1]), int(row[2])) if row is not None and str(row[0]) == target else None


def _line(path: Path, line: int) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return lines[line - 1].strip()[:150] if 0 < line <= len(lines) else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", action="append", required=True, help="NAME=DIR (repeatable)")
    parser.add_argument("--show", type=int, default=0, help="print N mismatches of each sort")
    parser.add_argument("--edges", type=int, default=0, help="print N resolved edges per language to check")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("FORGEBOT_LOG_LEVEL", "WARNING")
    for item in args.corpus:
        name, directory = item.split("=", 1)
        compare(name, Path(directory).resolve(), args.show, args.edges, args.seed)


if __name__ == "__main__":
    main()
