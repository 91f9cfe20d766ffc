"""Workspaces from real /usr/share/php packages: setup applied, hidden tests fail before."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bot.evaluation.taskrepos import PHP_ROOT, WorkspaceError, build_workspace, changed_files
from bot.evaluation.taskset import ExpectedFindings, HiddenTests, Task, TaskSet
from bot.evaluation.verification import run_hidden_tests
from tests.evaluation.conftest import STARTER

pytestmark = [pytest.mark.php, pytest.mark.usefixtures("php_tools")]


def _task(starter: TaskSet, task_id: str) -> Task:
    return next(t for t in starter.tasks if t.id == task_id)


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def test_implement_workspace_fails_hidden_tests_until_the_body_is_back(starter: TaskSet, tmp_path: Path) -> None:
    task = _task(starter, "inflector-tableize")
    assert isinstance(task.verify, HiddenTests)
    ws = build_workspace(task, tmp_path / "ws")
    target = ws.root / "Doctrine/Inflector/Inflector.php"
    source = target.read_text(encoding="utf-8")
    assert "throw new \\LogicException('Not implemented: Inflector::tableize');" in source
    (edit,) = ws.edits
    assert "function tableize" in source.splitlines()[edit.start_line - 2]
    assert _git(ws.root, "rev-list", "--count", "HEAD").strip() == "1"  # the removed body is not in history
    assert changed_files(ws) == []

    before = run_hidden_tests(task.verify, ws.root, STARTER.parent)
    assert not before.passed and before.tests == 3 and before.errors == 3

    # the workspace's own copy is what the tests load: restoring it (a correct implementation) passes
    shutil.copyfile(PHP_ROOT / "Doctrine/Inflector/Inflector.php", target)
    after = run_hidden_tests(task.verify, ws.root, STARTER.parent)
    assert after.passed and after.tests == 3 and after.failures == after.errors == 0
    assert changed_files(ws) == ["Doctrine/Inflector/Inflector.php"]


def test_every_starter_implement_task_fails_before(starter: TaskSet, tmp_path: Path) -> None:
    for task in starter.tasks:
        if isinstance(task.verify, HiddenTests):
            ws = build_workspace(task, tmp_path / task.id)
            run = run_hidden_tests(task.verify, ws.root, STARTER.parent)
            assert not run.passed and run.tests > 0, task.id


def test_review_workspace_puts_the_change_on_a_branch(starter: TaskSet, tmp_path: Path) -> None:
    task = _task(starter, "review-symfony-truncate")
    ws = build_workspace(task, tmp_path / "ws")
    assert _git(ws.root, "branch", "--show-current").strip() == "change"
    assert ws.base_commit != ws.start_commit
    diff = _git(ws.root, "diff", "main", "change")
    assert "-        if ($stringLength <= $length) {" in diff and "+        if ($stringLength < $length) {" in diff


def test_review_expectations_cover_the_seeded_lines(starter: TaskSet, tmp_path: Path) -> None:
    """The expected line ranges are data; this pins them to where the setup edit really lands."""
    for task in starter.tasks:
        if isinstance(task.verify, ExpectedFindings):
            ws = build_workspace(task, tmp_path / task.id)
            for edit in ws.edits:
                assert any(
                    f.path == edit.file and f.start_line <= edit.start_line and edit.end_line <= f.end_line
                    for f in task.verify.findings
                ), (task.id, edit)


def test_setup_problems_are_clear_errors(starter: TaskSet, tmp_path: Path) -> None:
    task = _task(starter, "review-symfony-truncate")
    with pytest.raises(WorkspaceError, match="was written for 0.0-1"):
        build_workspace(task.model_copy(update={"version": "0.0-1"}), tmp_path / "a")
    with pytest.raises(WorkspaceError, match="php-not-a-package is not installed"):
        build_workspace(task.model_copy(update={"package": "php-not-a-package"}), tmp_path / "b")
    wrong = task.setup[0].model_copy(update={"old": "return"})
    with pytest.raises(WorkspaceError, match=r"occurs \d+ times"):
        build_workspace(task.model_copy(update={"setup": (wrong,)}), tmp_path / "c")
    missing = task.setup[0].model_copy(update={"file": "Symfony/Nope.php"})
    with pytest.raises(WorkspaceError, match="not in the package"):
        build_workspace(task.model_copy(update={"setup": (missing,)}), tmp_path / "d")
    implement = _task(starter, "inflector-urlize")
    absent = implement.setup[0].model_copy(update={"method": "Inflector::slugify"})
    with pytest.raises(WorkspaceError, match="no method Inflector::slugify with a body"):
        build_workspace(implement.model_copy(update={"setup": (absent,)}), tmp_path / "f")
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "x").write_text("", encoding="utf-8")
    with pytest.raises(WorkspaceError, match="is not empty"):
        build_workspace(task, tmp_path / "e")
