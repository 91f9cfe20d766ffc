"""Syntax errors and unresolved symbols introduced by a run, on a real package workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.evaluation.quality import assess
from bot.evaluation.taskrepos import build_workspace, changed_files
from bot.evaluation.taskset import TaskSet

pytestmark = [pytest.mark.php, pytest.mark.usefixtures("php_tools")]


def test_introduced_unknown_names_and_syntax_errors_are_reported(starter: TaskSet, tmp_path: Path) -> None:
    task = next(t for t in starter.tasks if t.id == "inflector-tableize")
    ws = build_workspace(task, tmp_path / "ws")
    inflector = ws.root / "Doctrine/Inflector/Inflector.php"
    text = inflector.read_text(encoding="utf-8")
    body = "throw new \\LogicException('Not implemented: Inflector::tableize');"
    # one unknown class, one unknown function, and names that do exist (must not be reported)
    implementation = "return snake_case_it(new Rules\\Snake(new CachedWordInflector(new NoopWordInflector())));"
    inflector.write_text(text.replace(body, implementation), encoding="utf-8")
    (ws.root / "Doctrine/Inflector/Broken.php").write_text("<?php\nclass Broken {\n", encoding="utf-8")

    changed = changed_files(ws)
    assert changed == ["Doctrine/Inflector/Broken.php", "Doctrine/Inflector/Inflector.php"]
    quality = assess(ws, changed, "Doctrine/Inflector/autoload.php")
    assert quality.php_files_changed == 2
    assert len(quality.syntax_errors) == 1 and quality.syntax_errors[0].startswith("Doctrine/Inflector/Broken.php:")
    line = text.splitlines().index(next(x for x in text.splitlines() if body in x)) + 1
    assert sorted(quality.unresolved_symbols) == [
        f"Doctrine\\Inflector\\Rules\\Snake@Doctrine/Inflector/Inflector.php:{line}",
        f"Doctrine\\Inflector\\snake_case_it()@Doctrine/Inflector/Inflector.php:{line}",
    ]


def test_an_unchanged_workspace_has_nothing_to_report(starter: TaskSet, tmp_path: Path) -> None:
    task = next(t for t in starter.tasks if t.id == "review-brick-gcd-sign")
    ws = build_workspace(task, tmp_path / "ws")
    quality = assess(ws, changed_files(ws), None)
    assert quality.php_files_changed == 0 and not quality.syntax_errors and not quality.unresolved_symbols


def test_a_failing_symbol_check_is_reported_not_counted_as_zero(starter: TaskSet, tmp_path: Path) -> None:
    task = next(t for t in starter.tasks if t.id == "inflector-urlize")
    ws = build_workspace(task, tmp_path / "ws")
    # an autoloader that dies when loaded stands for a broken environment
    (ws.root / "Doctrine/Inflector/autoload.php").write_text("<?php\nexit(7);\n", encoding="utf-8")
    quality = assess(ws, changed_files(ws), "Doctrine/Inflector/autoload.php")
    assert quality.unresolved_symbols == [] and quality.note.startswith("unresolved-symbol check did not run")
