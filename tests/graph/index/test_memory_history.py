"""History memory on real git repositories written for the test: entry points read off each commit's own
version of the file, ranked under the cap, followed across renames and moves, and a history with a
huge generated file, a vendored minified bundle and objects git cannot read still remembered whole."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from foundation.gitrunner import git
from project.index import memory, memory_sources, taskindex
from project.index.db import Connection, connect
from project.index.entrypoints import at_head

ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent",
       "GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.invalid", "GIT_COMMITTER_NAME": "Dev",
       "GIT_COMMITTER_EMAIL": "dev@example.invalid"}


class Repo:
    """A git repository the test writes commit by commit."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.clock = 1_700_000_000
        root.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        env = {**ENV, "GIT_AUTHOR_DATE": f"{self.clock} +0000", "GIT_COMMITTER_DATE": f"{self.clock} +0000"}
        return subprocess.run(["git", "-C", str(self.root), *args], check=True, capture_output=True, text=True,
                              env=env).stdout

    def write(self, path: str, text: str | bytes) -> None:
        file = self.root / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(text if isinstance(text, bytes) else text.encode())

    def commit(self, message: str) -> str:
        self.clock += 60
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD").strip()


def php_class(namespace: str, name: str, methods: dict[str, str], head: str = "") -> str:
    body = "\n".join(f"    public function {m}()\n    {{\n{code}\n    }}\n" for m, code in methods.items())
    return f"<?php\nnamespace {namespace};\n\n{head}class {name}\n{{\n{body}}}\n"


def remembered(repo: Repo, tmp_path: Path) -> Connection:
    index = tmp_path / "index.db"
    taskindex.refresh(index, repo.root, embedder=None)
    conn = connect(index)
    memory_sources.refresh(conn, repo.root, embedder=None)
    return conn


def symbols_of(conn: Connection, sha: str) -> list[str]:
    row = conn.execute("SELECT symbols FROM memory_items WHERE kind = 'commit' AND source = ?", (sha,)).fetchone()
    return list(json.loads(row[0]))


def test_entry_points_are_read_on_the_file_as_of_each_commit(tmp_path: Path) -> None:
    """An edit to `charge` is `charge`'s, though methods inserted above it since moved it down; HEAD's line
    numbers would name the method now at those lines (`audit`)."""
    repo = Repo(tmp_path / "app")
    methods = {"charge": "        return 1;", "refund": "        return 2;"}
    repo.write("src/Billing.php", php_class("App", "Billing", methods))
    repo.commit("Billing")
    repo.write("src/Billing.php", php_class("App", "Billing", {**methods, "charge": "        return 10;"}))
    edit = repo.commit("Charge ten")
    extra = {f"audit{i}": "        return 0;" for i in range(6)}
    repo.write("src/Billing.php", php_class("App", "Billing", {**extra, **methods, "charge": "        return 10;"}))
    added = repo.commit("Audit methods above charge")
    conn = remembered(repo, tmp_path)
    assert symbols_of(conn, edit) == ["App\\Billing::charge"]
    assert symbols_of(conn, added) == [f"App\\Billing::audit{i}" for i in range(6)]
    (hit,) = [h for h in memory.search(conn, "charge ten", embedder=None, limit=3)[0] if h.source == edit]
    assert hit.symbols == ("App\\Billing::charge",) and hit.entry_points[0].status == "kept"


def test_the_cap_keeps_methods_and_production_code_first(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "app")
    constants = "".join(f"    const LIMIT_{i} = {i};\n" for i in range(14))
    repo.write("src/Limits.php", f"<?php\nnamespace App;\n\nclass Limits\n{{\n{constants}}}\n")
    repo.write("src/Gate.php", php_class("App", "Gate", {"allows": "        return true;"}))
    repo.write("tests/GateTest.php", php_class("Tests", "GateTest", {f"test{i}": "        $this->x();" for i in
                                                                       range(4)}))
    sha = repo.commit("Limits and the gate")
    conn = remembered(repo, tmp_path)
    symbols = symbols_of(conn, sha)
    assert len(symbols) == 12
    assert symbols[0] == "App\\Gate::allows"  # the one production method first, not the 14 constants
    assert not any(s.startswith("Tests\\") for s in symbols)  # tests only when production code leaves room
    touched = conn.execute("SELECT count(*) FROM memory_touches WHERE commit_sha = ?", (sha,)).fetchone()[0]
    assert touched == 14 + 1 + 4 + 3  # every one is kept, the three classes too; only the cap ranks


def test_names_followed_to_head_kept_moved_or_gone(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "app")
    repo.write("src/Old/Mailer.php", php_class("App\\Old", "Mailer", {"send": "        return 1;",
                                                                       "queue": "        return 2;",
                                                                       "legacy": "        return 3;"}))
    first = repo.commit("Mailer")
    (repo.root / "src" / "Mail").mkdir()
    repo.git("mv", "src/Old/Mailer.php", "src/Mail/Mailer.php")
    repo.write("src/Mail/Mailer.php", php_class("App\\Mail", "Mailer", {"send": "        return 1;",
                                                                        "enqueue": "        return 2;"}))
    repo.commit("Move the mailer to App\\Mail, rename queue to enqueue, drop legacy")
    conn = remembered(repo, tmp_path)
    row = conn.execute("SELECT ts FROM memory_items WHERE source = ?", (first,)).fetchone()
    status = {e.name: (e.status, e.head) for e in at_head(conn, symbols_of(conn, first), float(row[0]))}
    assert status["App\\Old\\Mailer::send"] == ("moved", "App\\Mail\\Mailer::send")
    assert status["App\\Old\\Mailer::queue"] == ("moved", "App\\Mail\\Mailer::enqueue")
    assert status["App\\Old\\Mailer::legacy"] == ("gone", "")


def test_a_hard_history_is_remembered_whole(tmp_path: Path) -> None:
    """A vendored minified bundle, a generated file past the size limit, a file `.gitattributes` marks
    generated, and an old blob and a tree git cannot read: every commit is remembered, the unreadable
    parts are counted with their reason, and the rest of each commit keeps its entry points."""
    repo = Repo(tmp_path / "app")
    repo.write(".gitattributes", "src/Generated.php linguist-generated=true\n")
    repo.write("src/Shop.php", php_class("App", "Shop", {"buy": "        return 1;"}))
    repo.write("src/Cart.php", php_class("App", "Cart", {"add": "        return 1;"}))
    repo.commit("Shop and cart")
    repo.write("public/app.min.js", b"var a=" + b"1+" * (256 * 1024) + b"1;")
    repo.write("src/Container.php", "<?php\nreturn '" + "c" * (1200 * 1024) + "';\n")  # a compiled blob
    repo.write("src/Generated.php", php_class("App", "Generated", {"make": "        return 1;"}))
    repo.write("src/Shop.php", php_class("App", "Shop", {"buy": "        return 2;"}))
    bundle = repo.commit("Bundle, container and generated code")
    repo.write("src/Cart.php", php_class("App", "Cart", {"add": "        return 2;"}))
    damaged = repo.commit("Cart adds two")
    lost_blob = repo.git("rev-parse", f"{damaged}:src/Cart.php").strip()
    repo.write("src/Cart.php", php_class("App", "Cart", {"add": "        return 3;", "remove": "        return 0;"}))
    repo.write("src/Shop.php", php_class("App", "Shop", {"buy": "        return 3;"}))
    after = repo.commit("Cart removes, shop buys three")
    repo.write("docs/notes.md", "# Notes\n")
    no_tree = repo.commit("Notes")
    lost_tree = repo.git("rev-parse", f"{no_tree}:docs").strip()
    repo.write("docs/notes.md", "# Notes\n\nShops buy.\n")
    notes = repo.commit("Notes on shops")  # its diff needs the lost tree too
    repo.write("src/Shop.php", php_class("App", "Shop", {"buy": "        return 4;"}))
    last = repo.commit("Shop buys four")
    index = tmp_path / "index.db"
    taskindex.refresh(index, repo.root, embedder=None)  # the graph needs HEAD's files, which stay readable
    for gone in (lost_blob, lost_tree):
        (repo.root / ".git" / "objects" / gone[:2] / gone[2:]).unlink()
    conn = connect(index)
    report = memory_sources.refresh(conn, repo.root, embedder=None)
    assert report.commits_added == 7
    assert symbols_of(conn, bundle) == ["App\\Shop::buy"]  # the bundle and the container were never read
    skipped = {str(r[0]): str(r[1]) for r in conn.execute("SELECT commit_sha, reason FROM memory_skipped")}
    assert "MiB, over the 1 MiB limit" in skipped[bundle] or "generated" in skipped[bundle]
    assert "unreadable" in skipped[damaged] and "unreadable" in skipped[after]
    assert symbols_of(conn, after) == ["App\\Shop::buy"]  # the cart's old version is lost; the shop's edit is not
    assert "unable to read tree" in skipped[no_tree] and "unable to read tree" in skipped[notes]
    assert symbols_of(conn, last) == ["App\\Shop::buy"]
    (note,) = [n for n in report.notes if n.startswith("history:")]
    assert "remembered without part of their diff" in note
    hits, said = memory.search(conn, "shop buys", embedder=None)
    assert note in said and {after, last} <= {h.source for h in hits}


def test_an_interrupted_build_resumes_where_it_stopped(tmp_path: Path) -> None:
    """A build killed after its first batches starts again at the first commit it had not stored."""
    repo = Repo(tmp_path / "app")
    for i in range(60):
        repo.write("src/Counter.php", php_class("App", "Counter", {"value": f"        return {i};"}))
        repo.commit(f"Counter {i}")
    index = tmp_path / "index.db"
    taskindex.refresh(index, repo.root, embedder=None)
    script = ("import sys, project.index.history as h, project.index.memory_history as mh\n"
              "from pathlib import Path\nfrom project.index.db import connect\nfrom project.index import memory\n"
              "h.BATCH = 10\nreal = h._read_batch\ncount = [0]\n"
              "def stop_after_three(*args):\n    count[0] += 1\n    if count[0] > 3:\n        import os\n"
              "        os._exit(9)\n    return real(*args)\nh._read_batch = stop_after_three\n"
              "conn = connect(Path(sys.argv[1]))\nmemory.ensure_schema(conn, None)\n"
              "mh.refresh(conn, Path(sys.argv[2]), 1000)\n")
    root = Path(__file__).resolve().parents[3]
    killed = subprocess.run([sys_executable(), "-c", script, str(index), str(repo.root)], cwd=root,
                            env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True)
    assert killed.returncode == 9, killed.stderr
    conn = connect(index)
    stored = conn.execute("SELECT count(*) FROM memory_items WHERE kind = 'commit'").fetchone()[0]
    assert 20 <= stored < 60  # whole batches only: the cursor is what each batch committed
    report = memory_sources.refresh(conn, repo.root, embedder=None)
    assert report.commits_added == 60 - stored
    assert tuple(conn.execute("SELECT count(DISTINCT source), count(*) FROM memory_items WHERE kind = 'commit'"
                              ).fetchone()) == (60, 60)
    assert conn.execute("SELECT count(*) FROM memory_touches").fetchone()[0] == 61  # the first adds the class too


def sys_executable() -> str:
    import sys

    return sys.executable


@pytest.mark.parametrize("name", ["we ird.php", 'qu"ote.php', "ünï.php", "new\nline.php"])
def test_unusual_file_names_keep_their_hunks(tmp_path: Path, name: str) -> None:
    repo = Repo(tmp_path / "app")
    repo.write(f"src/{name}", php_class("App", "Odd", {"run": "        return 1;"}))
    repo.commit("Odd")
    repo.write(f"src/{name}", php_class("App", "Odd", {"run": "        return 2;"}))
    sha = repo.commit("Odd runs two")
    conn = remembered(repo, tmp_path)
    assert symbols_of(conn, sha) == ["App\\Odd::run"]
    assert git(repo.root, "rev-parse", "HEAD").strip() == sha


def test_a_killed_base_build_resumes_from_the_repositorys_journal(tmp_path: Path) -> None:
    """A base index is built in a throw-away file; its history also goes, batch by batch, to the
    repository's journal, so the next build of that base reads from git only what the killed one had not."""
    repo = Repo(tmp_path / "app")
    for i in range(50):
        repo.write("src/Counter.php", php_class("App", "Counter", {"value": f"        return {i};"}))
        repo.commit(f"Counter {i}")
    data = tmp_path / "data"
    script = ("import sys, json, project.index.history as h\nfrom pathlib import Path\n"
              "from project.index import taskindex\nh.BATCH = 10\nreal = h._read_batch\nseen = []\n"
              "def watched(root, shas, *rest):\n    seen.extend(shas)\n"
              "    if sys.argv[3] == 'kill' and len(seen) > 30:\n        import os\n        os._exit(9)\n"
              "    return real(root, shas, *rest)\nh._read_batch = watched\n"
              "taskindex.build_base(Path(sys.argv[1]), 'demo', Path(sys.argv[2]))\nprint(json.dumps(seen))\n")
    root = Path(__file__).resolve().parents[3]

    def build(mode: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys_executable(), "-c", script, str(data), str(repo.root), mode], cwd=root,
                              env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True)

    assert build("kill").returncode == 9
    journal = data / "indexes" / "base" / "demo" / taskindex.HISTORY_JOURNAL
    with connect(journal) as kept:
        first = {str(r[0]) for r in kept.execute("SELECT source FROM memory_items WHERE kind = 'commit'")}
    assert 10 <= len(first) <= 30 and not list(journal.parent.glob("*.db"))  # batches kept; no base finished
    done = build("finish")
    assert done.returncode == 0, done.stderr
    read_again = set(json.loads(done.stdout.splitlines()[-1]))
    assert len(read_again) == 50 - len(first) and not read_again & first  # only what the killed one had not read
    (base,) = journal.parent.glob("*.db")
    with connect(base) as conn:
        assert conn.execute("SELECT count(DISTINCT source) FROM memory_items WHERE kind = 'commit'").fetchone()[0] == 50
        assert conn.execute("SELECT count(*) FROM memory_touches").fetchone()[0] == 51


def test_a_lost_commit_object_cuts_history_there_and_says_so(tmp_path: Path) -> None:
    """git rev-list fails on a missing commit; the history is then walked through the readable commit
    objects: the commits after the lost one are remembered, and the note says what was not read."""
    repo = Repo(tmp_path / "app")
    shas = []
    for i in range(5):
        repo.write("src/Counter.php", php_class("App", "Counter", {"value": f"        return {i};"}))
        shas.append(repo.commit(f"Counter {i}"))
    index = tmp_path / "index.db"
    taskindex.refresh(index, repo.root, embedder=None)
    (repo.root / ".git" / "objects" / shas[1][:2] / shas[1][2:]).unlink()
    conn = connect(index)
    report = memory_sources.refresh(conn, repo.root, embedder=None)
    remembered = {str(r[0]) for r in conn.execute("SELECT source FROM memory_items WHERE kind = 'commit'")}
    assert remembered == set(shas[2:])  # behind the lost commit nothing is reachable
    assert any("history listed without git rev-list" in note and "1 commit objects missing" in note
               for note in report.notes)
    notes = memory.search(conn, "counter", embedder=None)[1]  # and every answer says so, not only this refresh
    assert any("1 commit objects missing, history behind them not read" in note for note in notes)
    skipped = {str(r[0]) for r in conn.execute("SELECT commit_sha FROM memory_skipped")}
    assert skipped == {shas[2]}  # its diff needs its parent, the lost commit: its message is kept
    assert symbols_of(conn, shas[3]) == ["App\\Counter::value"]


def test_trees_let_go_change_no_touch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A version's syntax tree takes about 33 bytes of memory per byte of source; 2,048 cached versions of
    sympy's files held 1.5 GB. Without any tree kept (each version parsed whole, PHP's read again from its
    source) the history read is the same, on a history with Python, TypeScript and PHP files, a branch
    from an older version and its merge."""
    repo = Repo(tmp_path / "app")
    for i in range(4):
        repo.write("shop/cart.py", "class Cart:\n" + "".join(
            f"    def m{j}(self):\n        return {j if j != i else 100 + i}\n\n" for j in range(6)))
        repo.write("web/cart.ts", "export class Cart {\n" + "".join(
            f"  m{j}(): number {{\n    return {j if j != i else 100 + i};\n  }}\n" for j in range(6)) + "}\n")
        repo.write("src/Billing.php", php_class("App", "Billing", {f"m{j}": f"        return {j + 10 * i};"
                                                                   for j in range(i + 2)}))
        repo.commit(f"Change {i}")
    repo.git("checkout", "-q", "-b", "side", "HEAD~2")
    repo.write("shop/cart.py", "class Cart:\n    def side(self):\n        return 1\n")
    repo.commit("Side")
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-edit", "-X", "theirs", "side")

    def touches(conn: Connection) -> list[tuple[object, ...]]:
        return [tuple(r) for r in conn.execute(
            "SELECT commit_sha, fqn, change, old_start, old_end, new_start, new_end, words FROM memory_touches "
            "ORDER BY commit_sha, fqn")]

    kept = touches(remembered(repo, tmp_path / "kept"))
    monkeypatch.setattr("project.index.entrypoints.TREE_BYTES", 0)
    assert touches(remembered(repo, tmp_path / "none")) == kept
    assert {fqn for _, fqn, *_ in kept} >= {"shop.cart.Cart::m1", "web/cart:Cart::m2", "App\\Billing::m3",
                                             "shop.cart.Cart::side"}
