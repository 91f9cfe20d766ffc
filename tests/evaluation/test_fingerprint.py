"""Fingerprints: a prompt edit, a model change or a task change shows; secrets never appear."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.evaluation.fingerprint import (
    code_fingerprint,
    config_inputs,
    fingerprints,
    package_dir,
    prompts_fingerprint,
)
from bot.evaluation.taskset import TaskSet
from foundation.settings import LLMSettings, RoleModel, Settings
from tests.evaluation.conftest import STARTER


def test_prompt_template_edit_changes_the_prompts_and_code_fingerprints(tmp_path: Path) -> None:
    copy = tmp_path / "prompts"
    shutil.copytree(package_dir("prompts"), copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert prompts_fingerprint(copy) == prompts_fingerprint()
    dirs = {"prompts": copy, "graph": package_dir("graph")}
    code_before = code_fingerprint(dirs)

    template = copy / "analyzer" / "system.md.j2"
    template.write_text(template.read_text(encoding="utf-8") + "\nBe brief.\n", encoding="utf-8")
    assert prompts_fingerprint(copy) != prompts_fingerprint()
    assert code_fingerprint(dirs) != code_before

    edited = prompts_fingerprint(copy)
    (copy / "catalog.toml").write_text((copy / "catalog.toml").read_text() + "\n# note\n", encoding="utf-8")
    assert prompts_fingerprint(copy) != edited


def test_config_drops_secrets_and_machine_paths() -> None:
    secret = "sk-do-not-leak-0123456789"
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        _secrets_dir=None,
        data_dir=Path("/somewhere/else"),
        llm=LLMSettings(
            api_key=SecretStr(secret), roles={"analyzer": RoleModel(model="m2", api_key=SecretStr(secret))}
        ),
    )
    inputs = config_inputs(settings)
    text = json.dumps(inputs)
    assert secret not in text and "api_key" not in text and "/somewhere" not in text
    assert inputs["llm"]["roles"]["analyzer"]["model"] == "m2"


@pytest.mark.php  # runs PHP tools (the review gates, the checks)
def test_each_part_moves_on_its_own(starter: TaskSet, eval_settings: Settings) -> None:
    base, inputs = fingerprints(eval_settings, starter, STARTER.parent, synthetic=False)
    assert set(base) == {"code", "prompts", "config", "models", "taskset", "checks"}
    assert "sk-" not in json.dumps(inputs)

    other_model = eval_settings.model_copy(update={"llm": LLMSettings(model="another-model")})
    moved, _ = fingerprints(other_model, starter, STARTER.parent, synthetic=False)
    assert {k for k in base if base[k] != moved[k]} == {"config", "models"}

    fewer = starter.model_copy(update={"tasks": starter.tasks[:-1]})
    moved, _ = fingerprints(eval_settings, fewer, STARTER.parent, synthetic=False)
    assert {k for k in base if base[k] != moved[k]} == {"taskset", "checks"}

    synthetic, _ = fingerprints(eval_settings, starter, STARTER.parent, synthetic=True)
    assert {k for k in base if base[k] != synthetic[k]} == {"models"}


@pytest.mark.php  # runs PHP tools (the review gates, the checks)
def test_editing_a_hidden_test_changes_the_checks_only(
    starter: TaskSet, eval_settings: Settings, tmp_path: Path
) -> None:
    copy = tmp_path / "evals"
    shutil.copytree(STARTER.parent, copy)
    base, _ = fingerprints(eval_settings, starter, copy, synthetic=True)
    hidden = copy / "php-starter" / "implement" / "ArrDotTest.php"
    hidden.write_text(hidden.read_text(encoding="utf-8").replace("3306", "3307"), encoding="utf-8")
    moved, _ = fingerprints(eval_settings, starter, copy, synthetic=True)
    assert {k for k in base if base[k] != moved[k]} == {"checks"}
