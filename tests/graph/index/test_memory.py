"""Project memory on a real git repository with ADRs, docs and commits written for the test: "why" and
"where decided" questions find the document and the commit, their entry points exist in the code graph,
and a new commit, an edited document or a removed one updates only what changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from foundation.gitrunner import git
from project.index import memory, memory_sources, taskindex
from project.index.db import connect
from tests.fakes.embedder import HashingEmbedder

AUTHOR = ["-c", "user.name=Dev", "-c", "user.email=dev@example.invalid"]
LOCKS = """<?php
namespace App\\Lock;

class LockManager
{
    public function acquire(string $key): bool
    {
        return $this->store->add($key, 1, $this->timeoutSeconds());
    }

    public function release(string $key): void
    {
        $this->store->delete($key);
    }

    public function timeoutSeconds(): int
    {
        return %d;
    }
}
"""
CACHE = """<?php
namespace App\\Cache;

class CacheStore
{
    public function get(string $key): mixed
    {
        return $this->items[$key] ?? %s;
    }
}
"""
ADR = """# ADR 0001: Lock timeouts

## Context

Workers that crash while holding a distributed lock block every other worker until the lock expires.

## Decision

`LockManager::timeoutSeconds` returns 30: long enough for the slowest job step, short enough that a
crashed worker's lock is freed within a minute.
"""


def _commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    subprocess.run(["git", *AUTHOR, "commit", "-q", "-m", message], cwd=root, check=True)
    return git(root, "rev-parse", "HEAD").strip()


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "project"
    (root / "src" / "Lock").mkdir(parents=True)
    (root / "src" / "Cache").mkdir(parents=True)
    (root / "docs" / "adr").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    (root / "README.md").write_text("# Demo\n\nA demo project with locks and a cache.\n")
    (root / "src" / "Lock" / "LockManager.php").write_text(LOCKS % 10)
    (root / "src" / "Cache" / "CacheStore.php").write_text(CACHE % "null")
    shas = {"initial": _commit(root, "Initial import")}
    (root / "src" / "Lock" / "LockManager.php").write_text(LOCKS % 30)
    (root / "docs" / "adr" / "0001-lock-timeouts.md").write_text(ADR)
    shas["timeout"] = _commit(root, "Raise the distributed lock timeout to 30 seconds\n\n"
                                    "Crashed workers held locks for too long; see ADR 0001.")
    (root / "src" / "Cache" / "CacheStore.php").write_text(CACHE % "$this->load($key)")
    shas["cache"] = _commit(root, "Load cache misses from the backing store\n\nA miss returned null before.")
    return root, shas


def _indexed(root: Path, tmp_path: Path) -> object:
    index = tmp_path / "index.db"
    taskindex.refresh(index, root, embedder=None)
    return connect(index)


def test_why_questions_find_the_decision_and_its_entry_points(project: tuple[Path, dict[str, str]],
                                                              tmp_path: Path) -> None:
    root, shas = project
    conn = _indexed(root, tmp_path)
    report = memory_sources.refresh(conn, root, embedder=HashingEmbedder())
    assert report.commits_added == 3 and report.documents == 2
    hits, notes = memory.search(conn, "why is the lock timeout 30 seconds", embedder=HashingEmbedder(), limit=5)
    assert notes == []
    top = {(h.kind, h.source) for h in hits[:3]}
    assert ("commit", shas["timeout"]) in top
    assert ("document", "docs/adr/0001-lock-timeouts.md") in top
    symbols = {s for h in hits[:3] for s in h.symbols}
    assert "App\\Lock\\LockManager::timeoutSeconds" in symbols
    graph = {str(r[0]) for r in conn.execute("SELECT fqn FROM symbols")}
    assert {s for h in hits for s in h.symbols} <= graph  # every entry point exists in the graph
    (cache,) = [h for h in memory.search(conn, "cache miss", embedder=None, limit=10)[0] if h.kind == "commit"]
    assert cache.source == shas["cache"] and cache.symbols == ("App\\Cache\\CacheStore::get",)


def test_delta_sync_reads_only_what_changed(project: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    root, _ = project
    conn = _indexed(root, tmp_path)
    memory_sources.refresh(conn, root, embedder=None)
    again = memory_sources.refresh(conn, root, embedder=None)
    assert (again.commits_added, again.sections_added, again.documents_removed) == (0, 0, 0)

    (root / "docs" / "adr" / "0001-lock-timeouts.md").write_text(ADR.replace("30", "45"))
    (root / "README.md").unlink()
    new = _commit(root, "Lock timeout 45 s for the slow import job")
    report = memory_sources.refresh(conn, root, embedder=None)
    assert report.commits_added == 1 and report.documents_removed == 1
    assert report.sections_added == 1  # only the ADR's changed section ("Decision") is new
    assert not [h for h in memory.search(conn, "demo project", embedder=None)[0] if h.source == "README.md"]
    newest = memory.search(conn, "slow import job", embedder=None, limit=1)[0][0]
    assert newest.source == new


def test_rewritten_history_drops_what_left_it(project: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    root, shas = project
    conn = _indexed(root, tmp_path)
    memory_sources.refresh(conn, root, embedder=None)
    git(root, "reset", "-q", "--hard", shas["initial"])
    (root / "NOTES.md").write_text("# Notes\n\nRewritten.\n")
    rewritten = _commit(root, "Start over from the initial import")
    report = memory_sources.refresh(conn, root, embedder=None)
    assert report.rebuilt_history and report.history.dropped == 2
    assert report.commits_added == 1  # the commit still in history is kept, not read again
    assert {h.source for h in memory.search(conn, "lock timeout cache", embedder=None)[0] if h.kind == "commit"} <= \
        {shas["initial"], rewritten}
    assert memory.count(conn) == {"commit": 2, "document": 2}
    assert conn.execute("SELECT count(*) FROM memory_touches WHERE commit_sha IN (?, ?)",
                        (shas["timeout"], shas["cache"])).fetchone()[0] == 0


def test_vectors_follow_the_embedding_model(project: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    root, _ = project
    conn = _indexed(root, tmp_path)
    first = memory_sources.refresh(conn, root, embedder=HashingEmbedder(32))
    assert first.embedded > 0
    assert memory_sources.refresh(conn, root, embedder=HashingEmbedder(32)).embedded == 0
    assert memory_sources.refresh(conn, root, embedder=HashingEmbedder(48)).embedded == first.embedded
    hits, notes = memory.search(conn, "lock", embedder=None)
    assert notes == ["vector leg absent: no embedder configured; lexical memory search only"]


def test_vectors_of_another_model_are_not_read(project: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """Asked with another embedder than the one that made the vectors (a changed setting, and no `--embed`
    to make them again), the vector leg is absent and says why: the matrix product failed on the sizes."""
    root, _ = project
    conn = _indexed(root, tmp_path)
    memory_sources.refresh(conn, root, embedder=HashingEmbedder(32))
    hits, notes = memory.search(conn, "lock timeout", embedder=HashingEmbedder(48))
    assert hits and [n for n in notes if n.startswith("vector leg absent: memory embedded by ")]


def test_forgebot_memory_on_the_command_line(project: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    root, shas = project
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("FORGEBOT_")},
           "FORGEBOT_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-m", "bot", "memory", str(root), "where was the lock timeout decided",
                           "--json", "--no-embeddings", "-k", "3"], env=env, capture_output=True, text=True, check=True)
    answer = json.loads(done.stdout)
    assert {h["source"] for h in answer["hits"]} & {shas["timeout"], "docs/adr/0001-lock-timeouts.md"}
    assert any("vector leg absent" in n for n in answer["notes"])
    refused = subprocess.run([sys.executable, "-m", "bot", "memory", str(tmp_path), "x"], env=env,
                             capture_output=True, text=True)
    assert refused.returncode == 2 and refused.stderr.startswith("forgebot memory:")


def test_a_question_never_waits_for_vectors_unless_asked(project: tuple[Path, dict[str, str]],
                                                         tmp_path: Path) -> None:
    """As `forgebot search`: the memory is embedded before answering only with `--embed` (20,000 commits
    of history are minutes to embed); until then the answer comes from the other legs at once and says
    how many items wait and how to embed them. The offline model, as installed."""
    root, _ = project
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("FORGEBOT_")},
           "FORGEBOT_DATA_DIR": str(tmp_path / "data")}

    def ask(*flags: str) -> dict[str, Any]:
        done = subprocess.run([sys.executable, "-m", "bot", "memory", str(root), "why is the lock timeout 30 seconds",
                               "--json", *flags], env=env, capture_output=True, text=True, check=True)
        return dict(json.loads(done.stdout))

    first = ask()
    waiting = [n for n in first["notes"] if "have no vector yet" in n]
    assert waiting and waiting[0].endswith("`forgebot memory --embed` embeds them (can take minutes)")
    assert first["hits"] and not any("vector" in h["legs"] for h in first["hits"])
    embedded = ask("--embed")
    assert not [n for n in embedded["notes"] if "no vector" in n or "vector leg absent" in n]
    assert any("vector" in h["legs"] for h in embedded["hits"])
    again = ask()  # the vectors made stay, and are read
    assert any("vector" in h["legs"] for h in again["hits"]) and not [n for n in again["notes"] if "no vector" in n]


def test_a_first_run_says_how_far_it_is(project: tuple[Path, dict[str, str]], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A first question on a long history waits minutes (sympy: 20,000 commits): the command says how far
    the history and the vectors are (every 10 s; here at every step) instead of falling silent."""
    from bot.cli.main import main
    from project.index import progress

    root, shas = project
    for name in [n for n in os.environ if n.startswith("FORGEBOT_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("FORGEBOT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(progress, "PROGRESS_SECONDS", 0.0)
    assert main(["memory", str(root), "where was the lock timeout decided", "--no-embeddings"]) == 0
    said = capsys.readouterr().err.splitlines()
    assert said[0].startswith("forgebot memory: remembering the history of")
    assert f"forgebot memory: history: {len(shas)} of {len(shas)} commits read" in said
    steps: list[str] = []
    memory_sources.refresh(_indexed(root, tmp_path), root, embedder=HashingEmbedder(), progress=steps.append)
    assert steps[0] == f"history: {len(shas)} of {len(shas)} commits read" and steps[-1].startswith("vectors: ")
    done, total = steps[-1].removeprefix("vectors: ").removesuffix(" items").split(" of ")
    assert done == total and int(total) > len(shas)  # the documents' sections and the commits


def test_a_new_base_starts_from_the_previous_one(project: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    root, shas = project
    data = tmp_path / "data"
    commits = "SELECT source, id FROM memory_items WHERE kind = 'commit'"
    first = taskindex.build_base(data, "demo", root)
    with connect(first) as conn:
        before = {str(r[0]): int(r[1]) for r in conn.execute(commits)}
    assert set(before) == set(shas.values())
    (root / "README.md").unlink()
    new = _commit(root, "Drop the README: the ADRs say it all")
    second = taskindex.build_base(data, "demo", root)
    with connect(second) as conn:
        after = {str(r[0]): int(r[1]) for r in conn.execute(commits)}
        documents = {str(r[0]) for r in conn.execute("SELECT source FROM memory_items WHERE kind = 'document'")}
        hit = memory.search(conn, "drop the readme", embedder=None, limit=1)[0][0]
    assert {k: after[k] for k in before} == before  # adopted rows, not read again
    assert new in after and hit.source == new
    assert documents == {"docs/adr/0001-lock-timeouts.md"}  # the removed document left the memory
    with connect(first) as conn:  # the older base is untouched
        assert {str(r[0]) for r in conn.execute(commits)} == set(before)


def test_a_broken_previous_base_is_not_taken_over(project: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    root, shas = project
    broken = tmp_path / "data" / "indexes" / "base" / "demo" / f"{'0' * 40}.db"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"not a database" * 100)
    with connect(taskindex.build_base(tmp_path / "data", "demo", root)) as conn:
        commits = {str(r[0]) for r in conn.execute("SELECT source FROM memory_items WHERE kind = 'commit'")}
    assert commits == set(shas.values())  # remembered from nothing


def test_a_history_longer_than_the_limit_says_what_is_left_out(project: tuple[Path, dict[str, str]],
                                                               tmp_path: Path) -> None:
    """phpunit has 26,000 commits and memory keeps the newest 20,000: a question about an older decision
    found nothing and nothing said why. Every answer now says how much of the history is remembered."""
    root, shas = project
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("FORGEBOT_")},
           "FORGEBOT_DATA_DIR": str(tmp_path / "data")}

    def ask(*flags: str) -> dict[str, Any]:
        done = subprocess.run([sys.executable, "-m", "bot", "memory", str(root), "why is the lock timeout 30 seconds",
                               "--json", "--no-embeddings", *flags], env=env, capture_output=True, text=True,
                              check=True)
        return dict(json.loads(done.stdout))

    cut = ask("--max-commits", "2")
    assert "history: the newest 2 of HEAD's 3 commits are remembered; the older 1 are not searched" in cut["notes"]
    assert shas["initial"] not in {h["source"] for h in cut["hits"]}
    (root / "NOTES.md").write_text("Lock notes.\n")
    _commit(root, "Add notes")
    whole = ask()  # the default limit holds the whole history: no note
    assert not [n for n in whole["notes"] if n.startswith("history: the newest")]


def test_a_commit_touching_many_symbols_stays_one_readable_line(tmp_path: Path) -> None:
    """A refactoring's commit touches a dozen methods: its line named them all (1,300 characters on
    phpunit's TestDox commits). The text names four and how many more; `--json` keeps them all."""
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    methods = "\n".join(f"    public function step{i}(): int {{ return {{}}; }}" for i in range(9))
    (root / "src" / "Printer.php").write_text("<?php\nclass Printer\n{\n" + methods.replace("{}", "1") + "\n}\n")
    _commit(root, "Add the printer")
    (root / "src" / "Printer.php").write_text("<?php\nclass Printer\n{\n" + methods.replace("{}", "2") + "\n}\n")
    _commit(root, "Rework every step of the printer")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("FORGEBOT_")},
           "FORGEBOT_DATA_DIR": str(tmp_path / "data")}
    command = [sys.executable, "-m", "bot", "memory", str(root), "why was every printer step reworked",
               "--no-embeddings", "-k", "1"]
    text = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout.splitlines()
    assert text[0].startswith("commit ") and "Rework every step of the printer" in text[0]
    assert text[1] == ("          → Printer::step0, Printer::step1, Printer::step2, Printer::step3, "
                       "5 more (--json lists them)")
    listed = json.loads(subprocess.run([*command, "--json"], env=env, capture_output=True, text=True,
                                       check=True).stdout)
    assert len(listed["hits"][0]["symbols"]) == 9
