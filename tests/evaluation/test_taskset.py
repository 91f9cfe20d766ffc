"""Task set files: the starter set is valid; every kind of mistake is a clear error."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.evaluation.taskset import HiddenTests, TaskSet, TaskSetError, load_taskset
from tests.evaluation.conftest import STARTER


def test_starter_set_covers_three_modes_with_at_least_ten_tasks(starter: TaskSet) -> None:
    assert len(starter.tasks) >= 10
    assert {t.mode for t in starter.tasks} == {"analyze", "implement", "review"}
    for task in starter.tasks:
        if isinstance(task.verify, HiddenTests):
            assert all((STARTER.parent / f).is_file() for f in task.verify.files)


def _write(tmp_path: Path, data: dict[str, Any], suffix: str = ".yaml") -> Path:
    path = tmp_path / f"set{suffix}"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _task(**changes: Any) -> dict[str, Any]:
    task: dict[str, Any] = {
        "id": "t1",
        "mode": "analyze",
        "package": "php-doctrine-inflector",
        "version": "2.0.6-1",
        "text": "Where is tableize implemented?",
        "verify": {"kind": "locations", "files": ["Doctrine/Inflector/Inflector.php"]},
    }
    task.update(changes)
    return task


def test_yaml_task_set_loads(tmp_path: Path) -> None:
    loaded = load_taskset(_write(tmp_path, {"name": "y", "tasks": [_task()]}))
    assert loaded.tasks[0].verify.kind == "locations"


@pytest.mark.parametrize(
    ("task", "message"),
    [
        (_task(colour="red"), "Extra inputs are not permitted"),
        (_task(mode="implement"), "verified by kind"),
        (_task(verify={"kind": "locations", "files": ["../etc/passwd"]}), "without '..'"),
        (_task(verify={"kind": "locations"}), "at least one file or symbol"),
        (_task(mode="review", verify={"kind": "findings", "findings": [{"path": "a.php", "start_line": 3,
                                                                        "end_line": 4}]}), "needs a setup change"),
        (_task(setup=[{"kind": "remove_body", "file": "a.php", "method": "tableize"}]), "should match pattern"),
        (_task(package="doctrine-inflector"), "should match pattern"),
    ],
)
def test_invalid_tasks_are_refused(tmp_path: Path, task: dict[str, Any], message: str) -> None:
    with pytest.raises(TaskSetError, match=message):
        load_taskset(_write(tmp_path, {"name": "bad", "tasks": [task]}))


def test_duplicate_ids_and_missing_hidden_tests_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TaskSetError, match="duplicate task ids: t1"):
        load_taskset(_write(tmp_path, {"name": "dup", "tasks": [_task(), _task()]}))
    implement = _task(
        mode="implement",
        setup=[{"kind": "remove_body", "file": "Doctrine/Inflector/Inflector.php", "method": "Inflector::urlize"}],
        verify={"kind": "phpunit", "files": ["hidden/MissingTest.php"], "bootstrap": "Doctrine/autoload.php"},
    )
    with pytest.raises(TaskSetError, match="hidden test files not found: hidden/MissingTest.php"):
        load_taskset(_write(tmp_path, {"name": "m", "tasks": [implement]}))


def test_unreadable_or_unknown_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(TaskSetError, match="cannot read"):
        load_taskset(tmp_path / "absent.toml")
    (tmp_path / "set.json").write_text("{}", encoding="utf-8")
    with pytest.raises(TaskSetError, match=r"\.toml, \.yaml or \.yml"):
        load_taskset(tmp_path / "set.json")
    (tmp_path / "broken.toml").write_text("name = ", encoding="utf-8")
    with pytest.raises(TaskSetError, match="not valid toml"):
        load_taskset(tmp_path / "broken.toml")


def test_starter_toml_round_trips_through_the_model() -> None:
    data = tomllib.loads(STARTER.read_text(encoding="utf-8"))
    assert TaskSet.model_validate(data).model_dump(mode="json")["name"] == "php-starter"
