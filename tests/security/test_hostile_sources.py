"""Repository files are untrusted input to the code index: one file must cost the index that file,
never the whole build (every other file, and the task waiting on it).

Attacks, each through `forgebot index` as a user runs it (the suite's 60 s timeout is the bound a hang
would cross; each build here takes about a second):
- a generated fluent chain of thousands of calls, one per line (query builders, test data), in each
  language: the Python extractor recursed once per link and stopped the build with RecursionError past
  about 500 links; the PHP and TypeScript ones read the whole receiver at each link (quadratic: 100,000
  links took minutes);
- a minified bundle (one line, thousands of functions) and a generated file over 1 MiB: left out of the
  index, said on stderr, the agent still reads them as files; one line of thousands of definitions in a
  file whose average line is short, which the chunker copied whole into every definition's chunk;
- an extractor that fails on a file: the file is left out and named, every other file is indexed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tree_sitter

from project.index import extractors, store, taskindex
from project.index.aliases import Aliases
from project.index.db import connect
from project.index.generated import MAX_SOURCE_BYTES, OUTSIDE
from project.index.parse import FileRows

LINKS = 4_000  # TypeScript nests two levels a link: under `MAX_NESTING`, indexed, every link a row


def _forgebot(data: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FORGEBOT_DATA_DIR": str(data)}
    return subprocess.run([sys.executable, "-m", "bot.cli.main", *argv], capture_output=True, text=True, env=env,
                          timeout=50, check=False)


def _commit(root: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "x"],
                   check=True)
    return root


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


NORMAL = {
    "app/shop.py": "class Shop:\n    def save(self):\n        return 1\n\n\n"
                   "def checkout():\n    return Shop().save()\n",
    "web/cart.ts": "export function total(): number {\n  return 1;\n}\n"
                   "export function pay(): number {\n  return total();\n}\n",
    "src/Order.php": "<?php\nfunction place() { return submit(); }\nfunction submit() { return 1; }\n",
}


def _symbols(data: Path, root: Path) -> list[dict[str, object]]:
    done = _forgebot(data, "symbols", str(root), "--json")
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_generated_call_chains_cost_their_file_not_the_build(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _write(root, {
        **NORMAL,
        "app/query.py": "q = (Query()\n" + "    .w()\n" * 3_000 + ")\n",  # was RecursionError: no index at all
        "web/query.ts": "export const q = query()\n" + "  .w()\n" * LINKS + ";\n",
        "src/Query.php": "<?php\n$q = Query::make()\n" + " ->w()\n" * LINKS + ";\n",
        # 100,000 levels deep (600 kB): tree-sitter's query alone took 84 s, the call rows minutes more
        "src/Deep.php": "<?php\n$q = Query::make()\n" + " ->w()\n" * 100_000 + ";\n",
    })
    _commit(root)
    data = tmp_path / "data"
    done = _forgebot(data, "index", str(root), "--no-embeddings", "--workers", "1")
    assert done.returncode == 0, done.stderr
    assert "graph: 6 parsed" in done.stdout
    assert "1 file(s) left out of the index" in done.stderr
    assert "src/Deep.php (generated: nested over 10,000 levels deep)" in done.stderr
    # every call of every chain is a row; the rest of the repository is answered as usual
    conn = connect(next(data.rglob("*.db")), readonly=True)
    counts = dict(conn.execute("SELECT path, count(*) FROM relations WHERE target_name = 'w' GROUP BY path"))
    assert counts == {"app/query.py": 3_000, "web/query.ts": LINKS, "src/Query.php": LINKS}
    callers = _forgebot(data, "callers", str(root), "app.shop.Shop::save")
    assert callers.returncode == 0 and "app/shop.py:7\tapp.shop.checkout\tresolved" in callers.stdout
    callers = _forgebot(data, "callers", str(root), "web/cart:total")
    assert "web/cart.ts:5\tweb/cart:pay" in callers.stdout


def test_minified_and_oversized_files_are_left_out_and_said(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    bundle = "".join(f"function q{i}(a){{return a+{i}}}" for i in range(6_000))  # 200 kB, one line
    big = "".join(f"GENERATED_{i} = {i}\n" for i in range(80_000))  # short lines, past 1 MiB
    assert len(big) > MAX_SOURCE_BYTES
    _write(root, {**NORMAL, "public/js/vendor.min.js": bundle, "app/tables.py": big})
    _commit(root)
    data = tmp_path / "data"
    done = _forgebot(data, "index", str(root), "--no-embeddings", "--full-text", "--workers", "1")
    assert done.returncode == 0, done.stderr
    assert "2 file(s) left out of the index" in done.stderr
    assert "public/js/vendor.min.js (minified or generated: lines of" in done.stderr
    assert "app/tables.py (1.8 MiB, over the 1 MiB limit for source files)" in done.stderr
    assert "graph: 3 parsed" in done.stdout
    paths = {row["path"] for row in _symbols(data, root)}
    assert paths == {"app/shop.py", "web/cart.ts", "src/Order.php"}
    found = json.loads(_forgebot(data, "search", str(root), "q5999 return a", "--json").stdout)
    assert all(hit["path"] != "public/js/vendor.min.js" for hit in found["hits"])
    assert ("not indexed, not hand-written source (minified, generated or over 1 MiB: search_code and "
            "read_file_snippet read them) or a link out of the checkout: app/tables.py, public/js/vendor.min.js"
            ) in found["notes"]
    # made hand-written again (a user un-minifies it), the next refresh indexes it
    (root / "public/js/vendor.min.js").write_text("function q1(a) {\n  return a + 1;\n}\n")
    done = _forgebot(data, "index", str(root), "--no-embeddings", "--full-text", "--workers", "1")
    assert "1 file(s) left out" in done.stderr and "vendor.min.js" not in done.stderr
    assert "public/js/vendor.min.js" in {row["path"] for row in _symbols(data, root)}


def test_a_hand_written_file_with_a_little_data_on_long_lines_is_read(tmp_path: Path) -> None:
    """An icon component's SVG paths make its lines average past the minified mark (excalidraw's
    `ExcalidrawLogo.tsx`): its long lines are data, not code, and it is indexed. A WebAssembly module
    inlined as base64 stays out: a blob that long costs what a minified file costs."""
    root = tmp_path / "repo"
    path = "M" + " ".join(f"{i % 97}.{i % 13} {i % 89}.{i % 7}L" for i in range(900))  # ~12 kB of numbers
    logo = ("export function Logo() {\n  return (\n    <svg>\n"
            + "".join(f'      <path d="{path}{i}" />\n' for i in range(2)) + "    </svg>\n  );\n}\n")
    blob = "A" * 100_000
    wasm = f'const wasm = "{blob}";\n\nexport function load() {{\n  return wasm;\n}}\n'
    _write(root, {**NORMAL, "web/Logo.tsx": logo, "web/wasm.ts": wasm})
    _commit(root)
    data = tmp_path / "data"
    done = _forgebot(data, "index", str(root), "--no-embeddings", "--workers", "1")
    assert done.returncode == 0, done.stderr
    assert "1 file(s) left out of the index" in done.stderr and "web/wasm.ts (minified or generated" in done.stderr
    fqns = {row["fqn"] for row in _symbols(data, root)}
    assert "web/Logo:Logo" in fqns and "web/wasm:load" not in fqns


def test_one_long_line_of_definitions_is_cut_in_every_chunk(tmp_path: Path) -> None:
    """Short lines keep the average under the minified mark; one line holds 8,000 functions. Each
    function's chunk held that whole line (8,000 copies of 230 kB: the chunking took minutes)."""
    root = tmp_path / "repo"
    line = "".join(f"function q{i}(a){{return a+{i}}}" for i in range(8_000))
    _write(root, {**NORMAL, "web/long.js": "var a = 1;\n" * 60_000 + line + "\n"})
    _commit(root)
    data = tmp_path / "data"
    done = _forgebot(data, "index", str(root), "--no-embeddings", "--full-text", "--workers", "1")
    assert done.returncode == 0 and "left out" not in done.stderr, done.stderr
    found = json.loads(_forgebot(data, "search", str(root), "q7999", "--json", "-k", "3").stdout)
    assert found["hits"][0]["path"] == "web/long.js" and found["hits"][0]["symbol"] == "web/long:q7999"
    # each function's chunk holds the line's first 2,000 characters, not the whole line
    conn = connect(next(data.rglob("*.db")), readonly=True)
    longest, count = conn.execute("SELECT max(length(snippet)), count(*) FROM chunks "
                                  "WHERE path = 'web/long.js' AND kind = 'function'").fetchone()
    assert count == 8_000 and longest <= 2_002


def test_a_file_its_extractor_fails_on_is_left_out_and_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever an extractor's bug, a file it fails on is that file's problem: marked stale with the
    reason, its last good rows kept, every other file indexed."""
    root = tmp_path / "repo"
    _write(root, NORMAL)
    _commit(root)
    python = extractors.extractor_for("x.py")
    assert python is not None

    def failing(path: str, source: bytes, tree: tree_sitter.Tree, digest: str, aliases: Aliases | None,
                /, *, relations: bool = True) -> FileRows:
        if b"Shop" in source:
            raise IndexError("an extractor bug")
        return python.rows(path, source, tree, digest, aliases, relations=relations)

    monkeypatch.setitem(extractors._BY_SUFFIX, ".py", dataclasses.replace(python, rows=failing))
    conn = connect(tmp_path / "index.db")
    report = store.build(conn, root, ["app/shop.py", "web/cart.ts", "src/Order.php"], workers=0)
    assert report.failed == {"app/shop.py": "IndexError: an extractor bug"}
    assert report.stale == ["app/shop.py"] and sorted(report.parsed) == ["src/Order.php", "web/cart.ts"]
    functions = {row[0] for row in conn.execute(
        "SELECT name FROM symbols WHERE path = 'web/cart.ts' AND kind = 'function'")}
    assert functions == {"total", "pay"}
    assert tuple(conn.execute("SELECT stale FROM files WHERE path = 'app/shop.py'").fetchone()) == (1,)


def test_an_edit_moves_a_file_in_and_out_of_the_index(tmp_path: Path) -> None:
    """The re-sync after an agent's or a user's edit applies the same rule, and the list of left-out
    files (what searches name) follows it."""
    root = tmp_path / "repo"
    bundle = "".join(f"function q{i}(a){{return a+{i}}}" for i in range(300))
    _write(root, {**NORMAL, "web/app.js": bundle})
    _commit(root)
    conn = connect(tmp_path / "index.db")
    store.build(conn, root, [*NORMAL, "web/app.js"], workers=0)
    assert set(store.left_out_files(conn)) == {"web/app.js"}
    (root / "web/app.js").write_text("function q1(a) {\n  return a + 1;\n}\n")
    report = store.sync_files(conn, root, ["web/app.js"])
    assert report.parsed == ["web/app.js"] and store.left_out_files(conn) == {}
    assert conn.execute("SELECT count(*) FROM symbols WHERE path = 'web/app.js'").fetchone()[0] > 0
    (root / "web/app.js").write_text(bundle)
    report = store.sync_files(conn, root, ["web/app.js"])
    assert list(report.left_out) == ["web/app.js"] and set(store.left_out_files(conn)) == {"web/app.js"}
    assert conn.execute("SELECT count(*) FROM symbols WHERE path = 'web/app.js'").fetchone()[0] == 0
    # an empty file (indexed: it has a files row) grown past the size limit is left out too, not "unchanged"
    (root / "web/empty.ts").write_text("")
    store.sync_files(conn, root, ["web/empty.ts"])
    (root / "web/empty.ts").write_text("export const x = 1;\n" * 60_000)
    report = store.sync_files(conn, root, ["web/empty.ts"])
    assert "web/empty.ts" in report.left_out and "web/empty.ts" in store.left_out_files(conn)
    assert conn.execute("SELECT count(*) FROM files WHERE path = 'web/empty.ts'").fetchone()[0] == 0


def test_a_committed_link_out_of_the_checkout_is_never_read_and_stops_nothing(tmp_path: Path) -> None:
    """A repository can commit a symlink named like source (`evil.php -> /etc/passwd`): the base index of
    every task on it raised "outside the repository" and the task failed; now the link is left out, its
    target never read, and the rest indexed, by the build and by the re-sync after an edit."""
    root = tmp_path / "repo"
    secret = tmp_path / "secret.py"
    secret.write_text("def leaked_host_secret():\n    return 'token'\n")
    _write(root, NORMAL)
    (root / "app/evil.py").symlink_to(secret)
    (root / "src/zero.php").symlink_to("/dev/zero")
    _commit(root)
    conn = connect(tmp_path / "index.db")
    report = taskindex.refresh(tmp_path / "index.db", root, embedder=None).graph
    assert report is not None and sorted(report.parsed) == ["app/shop.py", "src/Order.php", "web/cart.ts"]
    assert report.left_out == {"app/evil.py": OUTSIDE, "src/zero.php": OUTSIDE}
    assert conn.execute("SELECT count(*) FROM symbols WHERE name = 'leaked_host_secret'").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM chunks WHERE snippet LIKE '%leaked_host_secret%'").fetchone()[0] == 0
    synced = store.sync_files(conn, root, ["app/evil.py", "app/shop.py"])
    assert synced.left_out == {"app/evil.py": OUTSIDE} and synced.unchanged == ["app/shop.py"]


def test_a_file_named_through_a_linked_directory_is_never_read(tmp_path: Path) -> None:
    """A path can reach out through a directory that is a symlink at any depth (`src/lib -> /elsewhere`,
    a diff naming `src/lib/deep/Leak.php`): the index resolves each directory of a listing once, and a
    file under a linked one is checked in full, so one outside the checkout is left out, never read;
    one under a link that stays inside is read under its real path."""
    root = tmp_path / "repo"
    elsewhere = tmp_path / "elsewhere"
    _write(elsewhere, {"deep/Leak.php": "<?php\nfunction leaked_host_secret() { return 1; }\n"})
    _write(root, NORMAL)
    (root / "src/lib").symlink_to(elsewhere)  # a link one level down
    (root / "app/pkg").mkdir()
    (root / "app/pkg/inner").symlink_to(root / "src")  # a link that stays in the checkout
    conn = connect(tmp_path / "index.db")
    report = store.build(conn, root, ["src/Order.php", "src/lib/deep/Leak.php", "src/./lib/deep/Leak.php",
                                      "app/pkg/inner/Order.php", "app/shop.py"])
    assert report.left_out == {"src/lib/deep/Leak.php": OUTSIDE, "src/./lib/deep/Leak.php": OUTSIDE}
    assert sorted(report.parsed) == ["app/shop.py", "src/Order.php"]  # the inner link is src/Order.php
    assert conn.execute("SELECT count(*) FROM symbols WHERE name = 'leaked_host_secret'").fetchone()[0] == 0
    synced = store.sync_files(conn, root, ["src/lib/deep/Leak.php"])
    assert synced.left_out == {"src/lib/deep/Leak.php": OUTSIDE} and synced.parsed == []


def test_a_base_build_tells_the_operator_what_it_left_out(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The service's base index (what every task on a commit starts from) logs its left-out files."""
    root = tmp_path / "repo"
    _write(root, {**NORMAL, "public/app.min.js": "".join(f"function q{i}(a){{return a+{i}}}" for i in range(300))})
    _commit(root)
    with caplog.at_level("INFO", logger="project.index.taskindex"):
        base = taskindex.build_base(tmp_path / "data", "acme/shop", root)
    assert base.is_file()
    assert ("base index of acme/shop: 1 file(s) left out, not hand-written source or not in the checkout: "
            "public/app.min.js (minified or generated: lines of") in caplog.text


def test_files_gitattributes_marks_generated_or_vendored_are_left_out(tmp_path: Path) -> None:
    """The marks GitHub reads (and the project history already did): the index leaves those files out,
    says why, and an edit's re-sync keeps them out."""
    root = tmp_path / "repo"
    _write(root, {**NORMAL, "src/Proxy.php": "<?php\nfunction generated_proxy() {}\n",
                  "lib/jq/query.js": "function vendoredQuery() {}\n",
                  ".gitattributes": "src/Proxy.php linguist-generated\nlib/jq/** linguist-vendored\n"})
    _commit(root)
    data = tmp_path / "data"
    done = _forgebot(data, "index", str(root), "--no-embeddings", "--workers", "1")
    assert "src/Proxy.php (marked generated in .gitattributes)" in done.stderr
    assert "lib/jq/query.js (marked vendored in .gitattributes)" in done.stderr
    assert {row["path"] for row in _symbols(data, root)} == {"app/shop.py", "web/cart.ts", "src/Order.php"}
    conn = connect(next(data.rglob("*.db")))
    (root / "src/Proxy.php").write_text("<?php\nfunction generated_proxy_again() {}\n")
    assert store.sync_files(conn, root, ["src/Proxy.php"]).left_out == {
        "src/Proxy.php": "marked generated in .gitattributes"}
    assert conn.execute("SELECT count(*) FROM symbols WHERE path = 'src/Proxy.php'").fetchone()[0] == 0


def test_hostile_import_configuration_is_never_followed_out_and_stops_nothing(tmp_path: Path) -> None:
    """tsconfig.json and package.json are read for what bare imports name: a committed link to a host
    file is not read (the service's build names it), a nesting bomb and an oversized file are skipped
    and named on stderr, and every source file is indexed; the host file's aliases map nothing."""
    host = tmp_path / "host.json"
    host.write_text('{"compilerOptions": {"paths": {"@x/*": ["web/*"]}}}')
    root = tmp_path / "repo"
    _write(root, {**NORMAL, "web/use.ts": 'import { total } from "@x/cart";\n\nexport const t = () => total();\n',
                  "deep/tsconfig.json": "[" * 200_000,
                  "big/package.json": '{"name": "' + "a" * (1 << 20) + '"}'})
    (root / "tsconfig.json").symlink_to(host)
    _commit(root)
    done = _forgebot(tmp_path / "data", "index", str(root), "--no-embeddings")
    assert done.returncode == 0, done.stderr
    assert "forgebot: deep/tsconfig.json: RecursionError" in done.stderr
    assert "forgebot: big/package.json: over 1048576 bytes: not read" in done.stderr
    assert "graph: 4 parsed" in done.stdout
    callers = _forgebot(tmp_path / "data", "callers", str(root), "web/cart:total")
    assert callers.returncode == 0 and "web/use.ts" not in callers.stdout
    # `forgebot index` lists no link out of the checkout; the service's list (git's) holds it: named, not read
    report = taskindex.refresh(tmp_path / "index.db", root, embedder=None).graph
    assert report is not None and "tsconfig.json: a link to outside the checkout" in report.unread_config
    conn = connect(tmp_path / "index.db")
    assert conn.execute("SELECT count(*) FROM relations WHERE path = 'web/use.ts' AND target_fqn LIKE 'web/cart:%'"
                        ).fetchone()[0] == 0  # `@x/cart` stays as written



def test_a_hostile_component_costs_the_build_that_file_alone(tmp_path: Path) -> None:
    """A Vue component of 43,000 script blocks, each broken, and a Svelte one of 120,000 markup expressions:
    finding the blocks checked each against every earlier one, and each error against every block (the
    build passed 50 s on this one file); now the build reads both at once and goes on."""
    root = tmp_path / "repo"
    blocks = "<script>let (</script>\n" * 43_000  # just under the 1 MiB limit
    markup = "<p>{a(}</p>{b()}\n" * 60_000
    _write(root, {**NORMAL, "web/Hostile.vue": blocks, "web/Hostile.svelte": markup})
    _commit(root)
    data = tmp_path / "data"
    done = _forgebot(data, "index", str(root), "--no-embeddings", "--workers", "1")
    assert done.returncode == 0, done.stderr
    # the component whose scripts are broken is stale; broken markup expressions make none
    assert "graph: 4 parsed, 0 unchanged, 0 removed, 1 stale" in done.stdout


def test_a_generated_chain_of_module_exports_costs_the_build_that_file_alone(tmp_path: Path) -> None:
    """`module.exports = module.exports = …` 3,000 times (under the nesting limit): each link climbed to the
    top of the chain, asking tree-sitter for every parent (2,000 links took 33 s); now one level is read."""
    root = tmp_path / "repo"
    _write(root, {**NORMAL, "web/chain.js": "module.exports =\n" * 3_000 + "x;\n"})  # a line each: not minified
    _commit(root)
    done = _forgebot(tmp_path / "data", "index", str(root), "--no-embeddings", "--workers", "1")
    assert done.returncode == 0, done.stderr
    assert "graph: 4 parsed, 0 unchanged, 0 removed, 0 stale" in done.stdout
