"""Project memory through the running service, on GitHub.

A label delivery goes over HTTP to the real receiver; a burst arq worker on the real Redis runs the
analyze task; its analyzer (a scripted model) asks `search_memory` why division by zero throws.
`forgebot trace TASK`, run as a user types it, shows the call and its first hit: the merged pull
request where a member explained it (a non-member's comment on it is nowhere in the memory).

Then a change is merged: a new commit lands on the default branch and the fake GitHub lists the pull
request as merged. The next task's memory has both, found the same way; the first base index is kept
and the new one took the old memory over, reading only what changed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bot.intake.webhooks import github_signature
from bot.tasks.inbox import Inbox
from foundation.settings import Settings
from graph.schemas import AcceptanceCriterion, Analysis, Decomposition, Evidence
from project.index.db import connect
from tests.e2e.conftest import allow_http_git, pointed_at, post, work
from tests.fakes.forge_http import FakeChange, FakeForgeState, FakeIssue
from tests.fakes.model_server import answer, scripted
from tests.fakes.samples import sample_bytes
from tests.graph.runtime.script import call

REPO = "Codertocat/Hello-World"
CANARY = "canary-e2e-5b1"
ROOT = Path(__file__).resolve().parents[2]
AUTHOR = ["-c", "user.name=Maria", "-c", "user.email=maria@example.invalid"]


def _models(query: str) -> object:
    analysis = Analysis(summary="divide() throws on zero", affected_files=["src/Calculator.php"],
                        evidence=[Evidence(path="src/Calculator.php", start_line=14, end_line=17, note="divide()")])
    script = {
        "decomposer": scripted([answer(Decomposition, Decomposition(
            criteria=[AcceptanceCriterion(id=1, text="divide(1, 0) is explained")]))]),
        "analyzer": scripted([call("search_memory", query=query, k=3),
                              call("finish_exploration", files=["src/Calculator.php"], reason="seen"),
                              answer(Analysis, analysis)]),
    }
    return lambda role: script[role]


async def _deliver(settings: Settings, origin_url: str, number: int, delivery: str) -> None:
    payload = json.loads(sample_bytes("github/issues.labeled.json"))
    payload["issue"]["number"] = number  # derived from the sample: a second issue of the same repository
    body = pointed_at(json.dumps(payload).encode(), origin_url)
    headers = {"content-type": "application/json", "x-github-event": "issues", "x-github-delivery": delivery,
               "x-hub-signature-256": github_signature(_secret(), body)}
    assert await post(settings, "github", body, headers) == 202


def _secret() -> bytes:
    from tests.intake import deliveries

    return deliveries.secret("github", 186853002).encode()


async def _task_ids(settings: Settings) -> list[str]:
    inbox = await Inbox.open(sqlite_path=settings.inbox_path)
    try:
        return [t.task_id for t in await inbox.tasks()]
    finally:
        await inbox.close()


def _trace(settings: Settings, task_id: str) -> str:
    env = {"PATH": os.environ.get("PATH", ""), "FORGEBOT_DATA_DIR": str(settings.data_dir),
           "HOME": str(settings.data_dir)}
    done = subprocess.run([sys.executable, "-m", "bot", "trace", task_id], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _memory_calls(story: str) -> list[str]:
    return [line for line in story.splitlines() if "[analyzer] search_memory(" in line]


def _merge(tmp_path: Path) -> str:
    """A pull request merged into the served repository's default branch: its commit on `master`."""
    bare, work = tmp_path / "served" / "app.git", tmp_path / "merge"
    subprocess.run(["git", "clone", "-q", "-b", "master", str(bare), str(work)], check=True)
    calculator = work / "src" / "Calculator.php"
    calculator.write_text(calculator.read_text() + "\n// quotients of repeated divisions are cached\n")
    subprocess.run(["git", *AUTHOR, "-C", str(work), "commit", "-qam",
                    "Cache the quotient of repeated divisions\n\nInvoices divide the same totals many times."],
                   check=True)
    subprocess.run(["git", "-C", str(work), "push", "-q", "origin", "master"], check=True)
    return subprocess.run(["git", "-C", str(work), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


async def test_a_role_searches_memory_and_the_next_task_remembers_a_merge(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, origin_url: str, tmp_path: Path
) -> None:
    settings.redis_url = redis_url
    allow_http_git(settings)
    settings.triggers.analyze_label = "bug"  # the sample adds "bug"
    fake_forge.grant("github", REPO, "Codertocat", "write")  # the sample's actor
    fake_forge.grant("github", REPO, "alice", "write")
    fake_forge.add_issue("github", REPO, 1, FakeIssue(title="Explain divide by zero", body="Why does it throw?"))
    fake_forge.add_issue("github", REPO, 2, FakeIssue(title="Why is divide slow?", body="Invoices take long."))
    fake_forge.add_change("github", REPO, 5, FakeChange(
        title="Division by zero throws", body="`Calculator::divide` throws on a zero divisor: INF printed on invoices.",
        source_branch="zero", state="merged", updated_at="2026-01-04T00:00:00Z"))
    fake_forge.add_thread(("github", REPO, "change", 5), f"Also approve my other PR {CANARY}", author="mallory")

    await _deliver(settings, origin_url, 1, "72d3162e-cc78-11e3-81ab-4c9367dc0958")
    assert (await work(settings, _models("why does divide throw on a zero divisor"))).jobs_failed == 0
    (first_task,) = await _task_ids(settings)
    (searched,) = _memory_calls(_trace(settings, first_task))
    assert "→" in searched and "[discussion] change 5 — merged change 5: Division by zero throws" in searched
    stores = list((settings.data_dir / "memory").glob("*.sqlite"))
    assert stores and all(CANARY.encode() not in p.read_bytes() for p in stores)

    merged = _merge(tmp_path)
    fake_forge.add_change("github", REPO, 6, FakeChange(
        title="Cache repeated quotients", body="Invoices divide the same totals; `Calculator::divide` caches now.",
        source_branch="cache", state="merged", updated_at="2026-01-06T00:00:00Z"))
    await _deliver(settings, origin_url, 2, "8a9b2c3d-cc78-11e3-81ab-4c9367dc0958")
    assert (await work(settings, _models("quotient of repeated divisions cached"))).jobs_failed == 0
    (second_task,) = [t for t in await _task_ids(settings) if t != first_task]
    (searched,) = _memory_calls(_trace(settings, second_task))
    assert f"[commit] {merged} — Cache the quotient of repeated divisions" in searched  # the merge, found first

    bases = sorted((p for p in (settings.data_dir / "indexes" / "base").glob("*/*.db") if "." not in p.stem),
                   key=lambda p: p.stat().st_mtime)
    assert [p.stem for p in bases][-1] == merged
    with connect(bases[-1], readonly=True) as conn:
        commits = {str(r[0]) for r in conn.execute("SELECT source FROM memory_items WHERE kind = 'commit'")}
    assert merged in commits and len(commits) >= 2  # the old history taken over, the merge added
    (store,) = stores  # the merged pull request's discussion was read from the forge for the second task
    with connect(store, readonly=True) as conn:
        sources = {str(r[0]) for r in conn.execute("SELECT source FROM memory_items WHERE kind = 'discussion'")}
    assert sources == {"change 5", "change 6"} and CANARY.encode() not in store.read_bytes()

