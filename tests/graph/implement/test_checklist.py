"""complete_item and finish decided by code on a real worktree, with php -l as the lint."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
from pydantic import SecretStr

from foundation.gitrunner import GitError
from foundation.settings import SandboxSettings, Settings
from foundation.signing import Committer
from graph.coder import gitstate
from graph.coder.checklist import Checklist, ItemRejected
from graph.nodes import gates
from graph.schemas import Plan
from project.checks import run_lints
from tests.graph.implement.conftest import CALCULATOR, Project, git, make_project

CALC = "src/Calculator.php"
AUTHOR = Committer("forgebot", "forgebot@users.noreply.invalid")


def _settings(tmp_path: Path) -> Settings:
    return Settings(_env_file=None, _secrets_dir=None, data_dir=tmp_path / "data",  # type: ignore[call-arg]
                    sandbox=SandboxSettings(allow_root=True))
TEST = "tests/CalculatorTest.php"


def _checklist(project: Project, tmp_path: Path, items: list[dict[str, object]], **kw: object) -> Checklist:
    plan = Plan.model_validate({"items": items, "scope": {"writable": [CALC, TEST]}})
    state = {"workspace": str(project.root), "base": project.base}
    context = gates.check_context(state, _settings(tmp_path), [])  # type: ignore[arg-type]

    def lint(files: Sequence[str]) -> list[str]:
        return gates.lint_problems(context.model_copy(update={"changed_files": tuple(files)}))

    return Checklist(root=project.root, plan=plan, base=project.base, lint=lint, author=AUTHOR, **kw)  # type: ignore[arg-type]


def _item(n: int, kind: str = "change") -> dict[str, object]:
    return {"id": n, "title": f"item number {n}", "criteria": [1], "paths": [CALC] if kind == "change" else [],
            "kind": kind}


def _edit(project: Project, old: str, new: str) -> None:
    path = project.root / CALC
    path.write_text(path.read_text().replace(old, new))


def test_finish_refused_while_items_are_open(project: Project, tmp_path: Path) -> None:
    checklist = _checklist(project, tmp_path, [_item(1)])
    with pytest.raises(ItemRejected, match="items still open: 1"):
        checklist.finish()
    _edit(project, "$a + $b", "$b + $a")
    assert "closed" in checklist.complete(1, "swap")
    assert git(project.root, "log", "-1", "--format=%s").strip() == "item number 1"
    (project.root / "stray.txt").write_text("x")
    with pytest.raises(ItemRejected, match="uncommitted"):
        checklist.finish()
    (project.root / "stray.txt").unlink()
    assert "Finished" in checklist.finish() and checklist.end == "finished"


def test_same_failure_on_unchanged_diff_ends_the_session_as_looping(project: Project, tmp_path: Path) -> None:
    checklist = _checklist(project, tmp_path, [_item(1)])
    with pytest.raises(ItemRejected, match="nothing changed"):
        checklist.complete(1, "")
    _edit(project, "return $a + $b;", "return $a + $b")  # a syntax error: lint fails, edits kept
    with pytest.raises(ItemRejected, match="lint failed"):
        checklist.complete(1, "")
    assert "return $a + $b\n" in project.text(CALC)
    assert not checklist.end  # a changed diff is a new attempt, not a loop
    assert "looping" in checklist.complete(1, "")
    assert str(checklist.end) == "looping" and "lint failed" in checklist.end_reason


def test_todo_only_patch_is_rejected(project: Project, tmp_path: Path) -> None:
    checklist = _checklist(project, tmp_path, [_item(1)])
    _edit(project, "        return $a + $b;\n", "        // TODO: multiply\n        return $a + $b;\n")
    with pytest.raises(ItemRejected, match="TODO"):
        checklist.complete(1, "")


def test_report_item_needs_a_report_and_no_outstanding_edits(project: Project, tmp_path: Path) -> None:
    checklist = _checklist(project, tmp_path, [_item(1, "report")])
    with pytest.raises(ItemRejected, match="report"):
        checklist.complete(1, "")
    _edit(project, "$a + $b", "$b + $a")
    with pytest.raises(ItemRejected, match="no outstanding edits"):
        checklist.complete(1, "", report="add is commutative")
    git(project.root, "checkout", "--", CALC)
    checklist.complete(1, "", report="add is commutative")
    assert checklist.reports == {1: "add is commutative"}


def test_already_done_tells_earlier_task_work_from_code_predating_the_task(project: Project, tmp_path: Path) -> None:
    checklist = _checklist(project, tmp_path, [_item(1), _item(2)])
    with pytest.raises(ItemRejected, match="path:line"):
        checklist.complete(1, "", already_done="it is there")
    # checked like a plan blocker's evidence: a real line of a real file inside the worktree
    for bogus, reason in ((f"{CALC}:999", "a line in 1.."), ("src/Nowhere.php:3", "is not a file"),
                          ("../outside.php:1", "not allowed"), ("see it:4", "is not a file")):
        checklist._last_failure = None
        with pytest.raises(ItemRejected, match=reason):
            checklist.complete(1, "", already_done=bogus)
    assert "predates the task" in checklist.complete(1, "", already_done=f"{CALC}:9")
    assert checklist.decisions[-1]["kind"] == "already_done"
    _edit(project, "$a + $b", "$b + $a")
    gitstate.commit_all(project.root, "earlier in the task", Committer("forgebot", "f@example.invalid"))
    checklist.baseline = gitstate.snapshot(project.root)
    assert "committed earlier in this task" in checklist.complete(2, "", already_done="step 1 of the first session")
    assert CALCULATOR != project.text(CALC)


def test_lint_uses_the_profile(project: Project, tmp_path: Path) -> None:
    state = {"workspace": str(project.root), "base": project.base}
    context = gates.check_context(state, _settings(tmp_path), [CALC])  # type: ignore[arg-type]
    assert [r.name for r in run_lints(context)] == ["php-lint"]


def test_edits_left_by_an_earlier_session_count_for_the_open_item(project: Project, tmp_path: Path) -> None:
    _edit(project, "$a + $b", "$b + $a")  # left on disk by a looping session
    checklist = _checklist(project, tmp_path, [_item(1)])
    assert "changed src/Calculator.php" in checklist.complete(1, "")


def test_a_restored_checklist_goes_on_from_its_snapshot(project: Project, tmp_path: Path) -> None:
    """The session journal's view of the checklist: a restored one (a new worker after a kill, whose
    checklist was built again at the node's start) decides the next item from where the first stood."""
    checklist = _checklist(project, tmp_path, [_item(1), _item(2, "report")])
    _edit(project, "$a + $b", "$b + $a")
    checklist.complete(1, "swap")
    with pytest.raises(ItemRejected):
        checklist.complete(2, "", report="")  # a failure the next identical one would end as looping
    saved = json.loads(json.dumps(checklist.snapshot()))  # what the journal stores: JSON
    fresh = _checklist(project, tmp_path, [_item(1), _item(2, "report")])
    fresh.restore(saved)
    assert fresh.progress() == checklist.progress() and fresh.commits == checklist.commits
    assert fresh.baseline == checklist.baseline and fresh.current() is not None and fresh.current().id == 2
    assert "looping" in fresh.complete(2, "", report="")  # the failure before the kill counts
    with pytest.raises(ValueError, match="not a session end"):
        fresh.restore({**saved, "end": "pwned"})


def test_a_key_that_cannot_sign_fails_the_commit_naming_the_setting_and_leaves_no_key_file(
    tmp_path: Path, worker_tmp: Path
) -> None:
    """A passphrase-protected signing key (the bot signs unattended) fails the commit with a GitError naming
    FORGEBOT_WORKSPACE__SIGNING_KEY, not a prompt that waits forever or an unsigned commit the forge refuses;
    the key's file is gone either way."""
    project = make_project(tmp_path)
    key = tmp_path / "locked"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "a passphrase", "-f", str(key)], check=True,
                   stdin=subprocess.DEVNULL)
    before = gitstate.head(project.root)
    _edit(project, "$a + $b", "$b + $a")
    locked = Committer("forgebot", "f@example.invalid", SecretStr(key.read_text()))
    with pytest.raises(GitError, match="signing the commit with FORGEBOT_WORKSPACE__SIGNING_KEY failed") as raised:
        gitstate.commit_all(project.root, "step", locked)
    assert "PRIVATE KEY" not in str(raised.value)
    assert gitstate.head(project.root) == before and not list(worker_tmp.glob("forgebot-signing-*"))
