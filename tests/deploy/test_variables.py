"""The per-variable check agrees with the settings model: every setting's default, written as its
variable, passes both; a value one refuses, the other refuses too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from bot.cli.configdoc import rows
from foundation import variables
from foundation.settings import ConfigError, Settings


def _as_variable(value: Any) -> str:
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, dict | list | tuple):
        return json.dumps(value if not isinstance(value, tuple) else list(value))
    return str(value).lower() if isinstance(value, bool) else str(value)


def _defaults() -> list[tuple[str, str]]:
    found = []
    for _, row in rows():
        name = row.env.replace("<ROLE>", "CODER")
        slot = variables.locate(Settings, name)
        assert isinstance(slot, variables.Slot), name
        value: Any = Settings(_env_file=None)  # type: ignore[call-arg]
        for part in name.removeprefix("FORGEBOT_").lower().split("__"):
            value = value.get(part) if isinstance(value, dict) else getattr(value, part, None)
        if value is not None:
            found.append((name, _as_variable(value)))
    return found


@pytest.mark.parametrize(("name", "value"), _defaults())
def test_each_default_written_as_its_variable_passes_the_check_and_the_model(
    name: str, value: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    slot = variables.locate(Settings, name)
    assert isinstance(slot, variables.Slot) and variables.check(value, slot) is None
    monkeypatch.setenv(name, value)
    Settings.load()


@pytest.mark.parametrize(("name", "value"), [
    ("FORGEBOT_MAX_TRIES", "three"), ("FORGEBOT_INTAKE__DEDUPE_HOURS", "1"), ("FORGEBOT_LLM__MAX_RETRIES", "11"),
    ("FORGEBOT_REVIEW__SEVERITY_THRESHOLD", "high"), ("FORGEBOT_LLM__ROLES__CODER__TEMPERATURE", "hot"),
    ("FORGEBOT_LLM__ROLES", '{"coder": {"structured_output": "xml"}}'), ("FORGEBOT_WORKSPACE__GIT_HOSTS", "x"),
])
def test_a_value_the_model_refuses_is_refused_by_name(name: str, value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as raised:
        Settings.load()
    (line,) = raised.value.lines
    assert line.startswith(f"{name}=") and " is not valid: " in line
