"""Accuracy of the PHP code graph against nikic/php-parser on real code.

Definitions (kind, fqn, path, start line) come from `forgebot symbols PATH --json`; call sites
(path, line, lower-case method or function name, `__construct` for `new`) from the index. The
reference is `php_parser_symbols.php` beside this file. Run from the repository root:

    /work/venv/bin/python tests/bench/bench_codegraph_accuracy.py            # Symfony and Laravel
    /work/venv/bin/python tests/bench/bench_codegraph_accuracy.py --show 5 --corpus m=/usr/share/php/Monolog

Goal: definitions precision and recall >= 99.5 %, call-site recall >= 99 %.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from project.index.db import connect
from project.index.index_cli import register
from project.index.location import index_path

HERE = Path(__file__).resolve().parent
def say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


DEFAULT_CORPORA = {"symfony": "/usr/share/php/Symfony", "laravel": "/usr/share/php/Illuminate"}
Key = tuple[str, ...]


def _cli(data_dir: Path, *argv: str) -> str:
    parser = argparse.ArgumentParser(prog="forgebot")
    register(parser.add_subparsers(required=True))
    args = parser.parse_args(list(argv))
    args.data_dir = data_dir
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = args.handler(args)
    if code != 0:
        raise SystemExit(f"forgebot {' '.join(argv)} exited {code}")
    return out.getvalue()


def reference(root: Path, files: list[str]) -> tuple[Counter[Key], Counter[Key], set[str]]:
    proc = subprocess.run(
        ["php", "-d", "memory_limit=-1", str(HERE / "php_parser_symbols.php"), str(root)],
        input="\n".join(files).encode(), capture_output=True, check=True,
    )
    defs: Counter[Key] = Counter()
    calls: Counter[Key] = Counter()
    errors: set[str] = set()
    for line in proc.stdout.decode().splitlines():
        row = json.loads(line)
        if row["t"] == "def":
            defs[(row["kind"], row["fqn"], row["path"], str(row["line"]))] += 1
        elif row["t"] == "call":
            calls[(row["path"], str(row["line"]), row["name"])] += 1
        else:
            errors.add(row["path"])
    return defs, calls, errors


def ours(root: Path, data_dir: Path) -> tuple[Counter[Key], Counter[Key]]:
    _cli(data_dir, "index", str(root), "--workers", "2")
    defs: Counter[Key] = Counter()
    for line in _cli(data_dir, "symbols", str(root), "--json").splitlines():
        row = json.loads(line)
        defs[(row["kind"], row["fqn"], row["path"], str(row["start_line"]))] += 1
    conn = connect(index_path(data_dir, root), readonly=True)
    calls: Counter[Key] = Counter(
        (path, str(line), str(name).lower())
        for path, line, name in conn.execute(
            "SELECT path, line, target_name FROM relations WHERE kind = 'calls'"
        )
    )
    return defs, calls


def _drop(counter: Counter[Key], paths: set[str], at: int) -> Counter[Key]:
    return Counter({k: v for k, v in counter.items() if k[at] not in paths})


def _score(mine: Counter[Key], ref: Counter[Key]) -> tuple[int, int, int, float, float]:
    matched = sum((mine & ref).values())
    n_mine, n_ref = sum(mine.values()), sum(ref.values())
    return n_ref, n_mine, matched, matched / n_mine if n_mine else 1.0, matched / n_ref if n_ref else 1.0


def kind_rows(mine: Counter[Key], ref: Counter[Key], at: int, total: str) -> None:
    """Print a row of counts, precision and recall per kind (field `at` of a key), then `total` over all."""
    kinds = sorted({k[at] for k in ref} | {k[at] for k in mine})
    for kind in [*kinds, total]:
        sub_mine = Counter({k: v for k, v in mine.items() if kind in (k[at], total)})
        sub_ref = Counter({k: v for k, v in ref.items() if kind in (k[at], total)})
        n_ref, n_mine, matched, precision, recall = _score(sub_mine, sub_ref)
        say(f"{kind:<12}{n_ref:>10}{n_mine:>10}{matched:>10}{precision:>10.3%}{recall:>9.3%}")


def compare(name: str, root: Path, show: int) -> None:
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.php") if p.is_file())
    ref_defs, ref_calls, errors = reference(root, files)
    with tempfile.TemporaryDirectory() as tmp:
        my_defs, my_calls = ours(root, Path(tmp))
    my_defs, ref_defs = _drop(my_defs, errors, 2), _drop(ref_defs, errors, 2)
    my_calls, ref_calls = _drop(my_calls, errors, 0), _drop(ref_calls, errors, 0)
    say(f"\n== {name}: {root} ({len(files)} files, {len(errors)} rejected by php-parser and skipped)")
    say(f"{'kind':<12}{'reference':>10}{'ours':>10}{'matched':>10}{'precision':>11}{'recall':>9}")
    kind_rows(my_defs, ref_defs, 0, "ALL defs")
    n_ref, n_mine, matched, precision, recall = _score(my_calls, ref_calls)
    say(f"{'call sites':<12}{n_ref:>10}{n_mine:>10}{matched:>10}{precision:>10.3%}{recall:>9.3%}")
    for label, diff in (
        ("missing defs", ref_defs - my_defs), ("extra defs", my_defs - ref_defs),
        ("missing calls", ref_calls - my_calls), ("extra calls", my_calls - ref_calls),
    ):
        for key in list(diff)[:show]:
            say(f"  {label}: {key}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", action="append", default=[], help="NAME=DIR (repeatable)")
    parser.add_argument("--show", type=int, default=0, help="print N mismatches of each sort")
    args = parser.parse_args()
    corpora = dict(c.split("=", 1) for c in args.corpus) if args.corpus else DEFAULT_CORPORA
    for name, directory in corpora.items():
        compare(name, Path(directory).resolve(), args.show)


if __name__ == "__main__":
    main()
