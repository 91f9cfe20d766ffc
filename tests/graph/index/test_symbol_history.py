"""Symbol history on a real git repository: a method followed through edits, a merged pull request, a
rename in place and its file's move to another namespace; "why is this line here" answered from it;
and the command line (`forgebot history`, `forgebot memory --batch`, no refresh when nothing changed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from project.index import memory
from project.index.symbol_history import history, render
from tests.graph.index.test_memory_history import Repo, php_class, remembered

ROOT = Path(__file__).resolve().parents[3]
SEND = "        $tries = 0;\n" * 8 + "        return %d;"


@pytest.fixture
def mailer(tmp_path: Path) -> tuple[Repo, dict[str, str]]:
    repo = Repo(tmp_path / "app")
    shas = {}
    repo.write("src/Old/Mailer.php", php_class("App\\Old", "Mailer", {"queue": "        return $this->push(1);",
                                                                       "send": SEND % 0}))
    shas["added"] = repo.commit("Mailer with a queue")
    repo.write("src/Old/Mailer.php", php_class("App\\Old", "Mailer", {"queue": "        return $this->push(2);",
                                                                       "send": SEND % 0}))
    shas["edited"] = repo.commit("Queue pushes twice")
    repo.git("checkout", "-q", "-b", "retry")
    repo.write("src/Old/Mailer.php", php_class("App\\Old", "Mailer", {
        "queue": "        return $this->push(2) ?: $this->retryLater($this->backoffSeconds);", "send": SEND % 0}))
    shas["retry"] = repo.commit("Retry a failed push later, after the backoff")
    repo.git("checkout", "-q", "main")
    repo.clock += 60
    repo.git("merge", "-q", "--no-ff", "retry", "-m", "Merge pull request #42 from dev/retry\n\nRetry failed pushes")
    (repo.root / "src" / "Mail").mkdir()
    repo.git("mv", "src/Old/Mailer.php", "src/Mail/Mailer.php")
    repo.write("src/Mail/Mailer.php", php_class("App\\Mail", "Mailer", {
        "enqueue": "        return $this->push(2) ?: $this->retryLater($this->backoffSeconds);", "send": SEND % 0}))
    shas["moved"] = repo.commit("Mailer moves to App\\Mail; queue is enqueue now")
    repo.write("src/Mail/Mailer.php", php_class("App\\Mail", "Mailer", {
        "enqueue": "        return $this->push(3) ?: $this->retryLater($this->backoffSeconds);", "send": SEND % 1}))
    shas["last"] = repo.commit("Push three times")
    return repo, shas


def test_a_method_followed_through_its_renames_and_moves(mailer: tuple[Repo, dict[str, str]], tmp_path: Path) -> None:
    repo, shas = mailer
    conn = remembered(repo, tmp_path)
    answer = history(conn, repo.root, "Mailer::enqueue")
    assert answer.name == "App\\Mail\\Mailer::enqueue" and answer.exists
    assert answer.names == ("App\\Mail\\Mailer::enqueue", "App\\Old\\Mailer::queue")
    assert [s.sha for s in answer.steps] == [shas[k] for k in ("last", "moved", "retry", "edited", "added")]
    retry = answer.steps[2]
    assert retry.name == "App\\Old\\Mailer::queue" and retry.links == ("change 42",)  # through the merge
    assert "+        return $this->push(2) ?: $this->retryLater($this->backoffSeconds);" in retry.hunk
    assert "return 1;" not in answer.steps[0].hunk  # only the hunks that touched this method
    assert history(conn, repo.root, "App\\Nope::x").notes == ("App\\Nope::x: no such symbol in the code graph or the "
                                                             "history",)


def test_why_is_this_line_here_finds_the_commit_that_wrote_it(mailer: tuple[Repo, dict[str, str]],
                                                               tmp_path: Path) -> None:
    repo, shas = mailer
    conn = remembered(repo, tmp_path)
    hits, _ = memory.search(conn, "why does Mailer::enqueue call retryLater with backoffSeconds", embedder=None)
    assert hits[0].source == shas["retry"] and "history" in hits[0].legs
    hits, _ = memory.search(conn, "Mailer::enqueue push three", embedder=None)
    assert hits[0].source == shas["last"]


def _forgebot(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("FORGEBOT_")},
           "FORGEBOT_DATA_DIR": str(tmp_path / "data")}
    return subprocess.run([sys.executable, "-m", "bot", *args], env=env, capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


def test_the_command_line_answers_history_and_batches_without_refreshing(
    mailer: tuple[Repo, dict[str, str]], tmp_path: Path
) -> None:
    repo, shas = mailer
    done = _forgebot(tmp_path, "history", str(repo.root), "App\\Mail\\Mailer::enqueue", "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert [s["sha"] for s in answer["steps"]][:2] == [shas["last"], shas["moved"]]
    assert answer["steps"][2]["links"] == ["change 42"]
    index = next((tmp_path / "data" / "indexes").glob("*/index.db"))
    files = [p for p in sorted(index.parent.iterdir()) if not p.name.endswith("-shm")]  # readers write -shm
    before = {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in files}
    questions = tmp_path / "questions.txt"
    questions.write_text("why does Mailer::enqueue call retryLater\n\nwhen did the mailer move\n")
    done = _forgebot(tmp_path, "memory", str(repo.root), "--batch", str(questions), "--json", "--no-embeddings")
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["query"] for a in answers] == ["why does Mailer::enqueue call retryLater", "when did the mailer move"]
    assert answers[0]["hits"][0]["source"] == shas["retry"] and answers[1]["hits"][0]["source"] == shas["moved"]
    assert {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in files} == before  # nothing refreshed or written
    repo.git("update-ref", "refs/remotes/origin/main", shas["added"])  # an upstream, far behind: not the checkout
    repo.git("config", "branch.main.remote", "origin")
    repo.git("config", "branch.main.merge", "refs/heads/main")
    assert _forgebot(tmp_path, "memory", str(repo.root), "mailer", "--no-embeddings").returncode == 0
    assert {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in files} == before
    repo.write("src/Mail/Mailer.php", (repo.root / "src/Mail/Mailer.php").read_text().replace("push(3)", "push(4)"))
    done = _forgebot(tmp_path, "history", str(repo.root), "Mailer::send", "-n", "1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("App\\Mail\\Mailer::send  — formerly App\\Old\\Mailer::send\n")
    assert {p: p.stat().st_mtime_ns for p in files} != {p: m for p, (m, _) in before.items()}  # an edit refreshes
    missing = _forgebot(tmp_path, "history", str(repo.root), "Nowhere::nothing")
    assert missing.returncode == 1 and "no such symbol" in missing.stdout
    # the index is searched while git status runs; a checkout that changed meanwhile is answered afresh
    repo.write("src/Mail/Mailer.php", (repo.root / "src/Mail/Mailer.php").read_text().replace("push(4)", "push(5)"))
    fresh = repo.commit("Push five times: the relay drops every fourth message")
    done = _forgebot(tmp_path, "memory", str(repo.root), "relay drops messages", "--json", "--no-embeddings")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hits"][0]["source"] == fresh


def test_the_command_line_answers_on_a_damaged_history(tmp_path: Path) -> None:
    """An object lost from a clone is said in the answer's notes; the command line does not fail on it."""
    repo = Repo(tmp_path / "app")
    repo.write("src/Cart.php", php_class("App", "Cart", {"add": "        return 1;"}))
    repo.commit("Cart")
    repo.write("src/Cart.php", php_class("App", "Cart", {"add": "        return 2;"}))
    lost = repo.commit("Cart adds two")
    blob = repo.git("rev-parse", f"{lost}:src/Cart.php").strip()
    repo.write("src/Cart.php", php_class("App", "Cart", {"add": "        return 3;"}))
    repo.commit("Cart adds three")
    (repo.root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    done = _forgebot(tmp_path, "memory", str(repo.root), "cart adds", "--json", "--no-embeddings")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    answer = json.loads(done.stdout)
    assert len([h for h in answer["hits"] if h["kind"] == "commit"]) == 3
    assert any("unreadable" in note for note in answer["notes"])
    history_done = _forgebot(tmp_path, "history", str(repo.root), "Cart::add", "--json")
    assert history_done.returncode == 0 and "Traceback" not in history_done.stderr


def test_the_history_of_a_python_method_asked_as_python_writes_it(tmp_path: Path) -> None:
    """`Ledger.close` and `billing.refunds.Ledger.close` are the graph's `billing.refunds.Ledger::close`; before,
    both were "no such symbol" and only the graph's own spelling was answered, and a memory question naming
    `Ledger.close` did not reach the method's history."""
    repo = Repo(tmp_path / "shop")
    repo.write("billing/refunds.py", "class Ledger:\n    def close(self):\n        return 1\n")
    added = repo.commit("Ledgers close")
    repo.write("billing/refunds.py", "class Ledger:\n    def close(self):\n        return 2\n")
    changed = repo.commit("Closing returns two")
    for asked in ("Ledger.close", "billing.refunds.Ledger.close", "Ledger::close"):
        done = _forgebot(tmp_path, "history", str(repo.root), asked, "--json")
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        assert answer["name"] == "billing.refunds.Ledger::close"
        assert [s["sha"] for s in answer["steps"]] == [changed, added]
    assert _forgebot(tmp_path, "history", str(repo.root), "Ledgr.close").returncode == 1
    # a question naming it so reaches its history too (before, only `Ledger::close` did)
    done = _forgebot(tmp_path, "memory", str(repo.root), "why does Ledger.close return two", "--json",
                     "--no-embeddings")
    assert done.returncode == 0, done.stderr
    assert all("history" in hit["legs"] for hit in json.loads(done.stdout)["hits"][:2])


def test_a_squash_merge_naming_a_hundred_changes_shows_the_first_eight(tmp_path: Path) -> None:
    """A squash merge's message can name every change it gathers (zod's "Zod 4 (#4074)" names 99): the
    text line of that commit keeps the first eight, in the message's order, and says how many more; the
    JSON keeps them all."""
    repo = Repo(tmp_path / "app")
    repo.write("src/Mailer.php", php_class("App", "Mailer", {"send": SEND % 0}))
    repo.commit("Mailer")
    repo.write("src/Mailer.php", php_class("App", "Mailer", {"send": SEND % 1}))
    body = "\n".join(f"* Fix the retry of a queued mail (#{number})" for number in range(100, 130))
    repo.commit(f"Mailer 2 (#4074)\n\n{body}")
    conn = remembered(repo, tmp_path)
    answer = history(conn, repo.root, "App\\Mailer::send")
    squash = answer.steps[0]
    assert squash.links[:3] == ("change 4074", "change 100", "change 101") and len(squash.links) == 31
    line = render(answer).splitlines()[3]
    assert line.endswith("; change 4074; change 100; change 101; change 102; change 103; change 104; change 105; "
                         "change 106; 23 more"), line
