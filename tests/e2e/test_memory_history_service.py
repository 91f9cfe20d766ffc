"""Project memory of a hard history through the running service, on GitHub.

The served repository's history holds a 100 MB minified bundle (added, then dropped), and the worker's
mirror of it is damaged: it has lost one old blob (`Calculator.php` at one commit) and its first commit
object.
A label delivery goes over HTTP to the real receiver; a burst arq worker on the real Redis builds the
base index and its memory, and the analyzer (a scripted model) asks `symbol_history` how `divide`
came to be, then `search_memory` why it throws. Every commit but the lost one is remembered; the two
whose diff needs the lost blob, and the one whose parent is lost, keep their message and say what was
not read; the others have their entry points; every memory answer says where history was cut and what
was not read; and `forgebot trace TASK` shows the analyzer's `symbol_history` call and its answer.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from foundation.settings import Settings
from foundation.workspace import repo_key
from graph.schemas import AcceptanceCriterion, Analysis, Decomposition, Evidence
from project.index import memory
from project.index.db import connect
from tests.e2e.conftest import allow_http_git, work
from tests.e2e.test_memory_service import REPO, _deliver, _task_ids, _trace
from tests.fakes.forge_http import FakeForgeState, FakeIssue
from tests.fakes.git_http import create_git_server
from tests.fakes.model_server import answer, scripted
from tests.fakes.server import serving
from tests.graph.conftest import FIXTURES, init_repo
from tests.graph.runtime.script import call
from tests.intake.payloads import serve_samples

AUTHOR = ["-c", "user.name=Maria", "-c", "user.email=maria@example.invalid"]
BUNDLE_BYTES = 100 * 1024 * 1024


def _commit(work: Path, message: str) -> str:
    subprocess.run(["git", *AUTHOR, "-C", str(work), "add", "-A"], check=True)
    subprocess.run(["git", *AUTHOR, "-C", str(work), "commit", "-qm", message], check=True)
    return subprocess.run(["git", "-C", str(work), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.fixture
def hard_origin(tmp_path: Path, settings: Settings, fake_forge: FakeForgeState) -> Iterator[tuple[str, dict[str, str]]]:
    work = init_repo(shutil.copytree(FIXTURES / "php_project", tmp_path / "work"))
    calculator = work / "src" / "Calculator.php"
    shas: dict[str, str] = {}
    (work / "public").mkdir()
    with (work / "public" / "app.min.js").open("wb") as bundle:  # one 100 MB line, as minifiers write them
        bundle.write(b"!function(){var a=0;")
        bundle.write(b"a+=1;" * ((BUNDLE_BYTES - 40) // 5))
        bundle.write(b"}();\n")
    shas["bundle"] = _commit(work, "Vendor the frontend bundle")
    _edit(calculator, "return $a / $b;", "return round($a / $b, 4);")
    shas["rounds"] = _commit(work, "Divide rounds to four places")
    _edit(calculator, "'Division by zero'", "\"Division of {$a} by zero\"")
    shas["names"] = _commit(work, "Division by zero names the dividend")
    (work / "public" / "app.min.js").unlink()
    shas["drop"] = _commit(work, "Drop the bundle: assets come from the CDN")
    _edit(calculator, "    public function divide", "    public function multiply(int $a, int $b): int\n    {\n"
                                                      "        return $a * $b;\n    }\n\n    public function divide")
    shas["multiply"] = _commit(work, "Calculators multiply")
    _edit(calculator, "        if ($b === 0) {", "        // a zero divisor is the caller's error, not INF\n"
                                                 "        if ($b === 0) {")
    shas["explains"] = _commit(work, "Divide explains why zero throws\n\nInvoices printed INF when a total was zero.")
    served = tmp_path / "served"
    served.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(served / "app.git")], check=True)
    subprocess.run(["git", "-C", str(served / "app.git"), "branch", "master", "main"], check=True)
    shas["lost_blob"] = subprocess.run(["git", "-C", str(work), "rev-parse", f"{shas['rounds']}:src/Calculator.php"],
                                       capture_output=True, text=True, check=True).stdout.strip()
    shas["lost_commit"] = subprocess.run(["git", "-C", str(work), "rev-list", "--max-parents=0", "HEAD"],
                                         capture_output=True, text=True, check=True).stdout.strip()
    with serving(create_git_server(served, None)) as server:
        settings.workspace.git_hosts = (server.url,)
        serve_samples(fake_forge, settings, clone_url=f"{server.url}/app.git", git_dir=str(served / "app.git"))
        yield f"{server.url}/app.git", shas


def _damaged_mirror(settings: Settings, url: str, source: Path, lost: list[str]) -> None:
    """The worker's mirror as a damaged clone leaves it: every object loose, some old ones gone."""
    mirror = settings.data_dir / "workspaces" / "mirrors" / f"{repo_key('github', REPO)}.git"
    mirror.parent.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "--bare", str(mirror)], check=True)
    subprocess.run(["git", "-C", str(mirror), "remote", "add", "origin", url], check=True)
    subprocess.run(["git", "-C", str(mirror), "config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"],
                   check=True)
    subprocess.run(["git", "-C", str(mirror), "-c", "fetch.unpackLimit=100000", "fetch", "-q", str(source),
                    "+refs/heads/*:refs/remotes/origin/*"], check=True)
    for sha in lost:
        (mirror / "objects" / sha[:2] / sha[2:]).unlink()


def _models() -> object:
    analysis = Analysis(summary="divide() throws on zero on purpose", affected_files=["src/Calculator.php"],
                        evidence=[Evidence(path="src/Calculator.php", start_line=19, end_line=24, note="divide()")])
    script = {
        "decomposer": scripted([answer(Decomposition, Decomposition(
            criteria=[AcceptanceCriterion(id=1, text="divide(1, 0) is explained")]))]),
        "analyzer": scripted([call("symbol_history", symbol="Calculator::divide", limit=5),
                              call("search_memory", query="why does divide throw on a zero divisor", k=3),
                              call("finish_exploration", files=["src/Calculator.php"], reason="seen"),
                              answer(Analysis, analysis)]),
    }
    return lambda role: script[role]


async def test_a_hard_history_is_remembered_through_the_service_and_read_by_a_role(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, hard_origin: tuple[str, dict[str, str]],
    tmp_path: Path,
) -> None:
    url, shas = hard_origin
    settings.redis_url = redis_url
    allow_http_git(settings)
    settings.triggers.analyze_label = "bug"
    fake_forge.grant("github", REPO, "Codertocat", "write")  # the sample's actor
    fake_forge.grant("github", REPO, "alice", "write")  # the issue's author
    fake_forge.add_issue("github", REPO, 1, FakeIssue(title="Why does divide throw?", body="Invoices need a number."))
    _damaged_mirror(settings, url, tmp_path / "served" / "app.git", [shas["lost_blob"], shas["lost_commit"]])

    await _deliver(settings, url, 1, "72d3162e-cc78-11e3-81ab-4c9367dc0958")
    assert (await work(settings, _models())).jobs_failed == 0
    (task,) = await _task_ids(settings)

    (base,) = [p for p in (settings.data_dir / "indexes" / "base").glob("*/*.db") if "." not in p.stem]
    with connect(base, readonly=True) as conn:
        commits = {str(r[0]): json.loads(r[1]) for r in conn.execute(
            "SELECT source, symbols FROM memory_items WHERE kind = 'commit'")}
        skipped = {str(r[0]): str(r[1]) for r in conn.execute("SELECT commit_sha, reason FROM memory_skipped")}
        notes = memory.search(conn, "why does divide throw", embedder=None)[1]
    assert set(commits) == set(shas.values()) - {shas["lost_blob"], shas["lost_commit"]}  # all but the lost one
    lost = {sha: reason for sha, reason in skipped.items() if "unreadable" in reason}
    assert set(lost) == {shas["rounds"], shas["names"]}  # the two whose diff needs the lost blob
    assert "unable to parse commit" in skipped[shas["bundle"]]  # its parent is the lost commit
    # the bundle, where a language of the code graph reads .js, is left out by its size, never read
    assert "over the 1 MiB limit" in skipped[shas["drop"]] and set(skipped) == {*lost, shas["bundle"], shas["drop"]}
    assert any("1 commit objects missing" in note for note in notes)  # every answer says where history was cut
    assert any(note.startswith("history: 4 commits remembered without part of their diff") for note in notes)
    assert commits[shas["multiply"]][0] == "App\\Calculator::multiply"
    assert commits[shas["explains"]] == ["App\\Calculator::divide"]
    assert commits[shas["bundle"]] == [] and commits[shas["drop"]] == []  # the bundle was never read

    story = _trace(settings, task)
    (history,) = [line for line in story.splitlines() if "[analyzer] symbol_history(" in line]
    assert "Calculator::divide" in history and "→" in history
    assert "Divide explains why zero throws" in history
    (searched,) = [line for line in story.splitlines() if "[analyzer] search_memory(" in line]
    assert "→" in searched
