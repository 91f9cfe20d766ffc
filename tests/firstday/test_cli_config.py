"""Configuration mistakes as an operator meets them: every command, the doctor included, answers a
malformed `FORGEBOT_*` value with one line naming the variable and what it accepts (no traceback),
names a misspelt variable instead of ignoring it, and `--help` works whatever the environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.firstday.cli import forgebot

pytestmark = pytest.mark.timeout(300)
BAD = {"FORGEBOT_LLM__PROVIDER": "openia", "FORGEBOT_PORT": "eighty"}
COMMANDS = [
    ["check"], ["serve"], ["web"], ["worker"], ["tasks"], ["trace", "0123456789abcdef"], ["hooks"],
    ["run", "--repo", ".", "--mode", "analyze", "--task", "x"], ["index", "."],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: argv[0])
def test_a_malformed_value_is_one_line_per_variable_from_every_command(argv: list[str], tmp_path: Path) -> None:
    seen = forgebot(*argv, cwd=tmp_path, FORGEBOT_DATA_DIR=str(tmp_path / "data"), **BAD)
    assert seen.code == 2 and seen.out == []
    assert seen.err == [
        "forgebot: FORGEBOT_LLM__PROVIDER='openia' is not valid: allowed values: openai, anthropic or ollama",
        "forgebot: FORGEBOT_PORT='eighty' is not valid: expected a whole number",
    ]
    assert not (tmp_path / "data").exists()  # nothing was started or written


def test_help_answers_whatever_the_environment(tmp_path: Path) -> None:
    seen = forgebot("--help", cwd=tmp_path, **BAD)
    assert seen.code == 0 and seen.err == []
    assert any(line.split()[:1] == ["check"] for line in seen.out)


def test_each_malformed_json_value_is_named_and_no_secret_is_echoed(tmp_path: Path) -> None:
    seen = forgebot(
        "tasks", cwd=tmp_path, FORGEBOT_INTAKE__ALLOWED_PROJECTS="group/app", FORGEBOT_LLM__PRICES="cheap",
        FORGEBOT_DATABASES="postgresql://app:hunter2@db/app", FORGEBOT_SANDBOX__ALLOW_UNISOLATED="maybe",
    )
    assert seen.code == 2 and seen.out == []
    assert seen.err == [
        'forgebot: FORGEBOT_DATABASES=(secret value) is not valid: expected a JSON object such as {"key": "value"}',
        "forgebot: FORGEBOT_INTAKE__ALLOWED_PROJECTS='group/app' is not valid: expected a JSON list such as "
        '["a", "b"]',
        'forgebot: FORGEBOT_LLM__PRICES=\'cheap\' is not valid: expected a JSON object such as {"key": "value"}',
        "forgebot: FORGEBOT_SANDBOX__ALLOW_UNISOLATED='maybe' is not valid: expected true or false "
        "(also 1/0, yes/no, on/off)",
    ]
    assert "hunter2" not in seen.text


def test_a_rule_over_several_settings_and_a_bad_secret_file_are_one_line_each(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "gitlab__bot_user_id").write_text("forgebot\n")
    seen = forgebot("tasks", cwd=tmp_path, FORGEBOT_SECRETS_DIR=str(secrets), FORGEBOT_EMBEDDER__KIND="http")
    assert seen.code == 2 and seen.out == []
    assert sorted(seen.err) == [
        "forgebot: FORGEBOT_EMBEDDER__*: embedder kind `http` needs base_url, model, dimension",
        f"forgebot: secret file {secrets / 'gitlab__bot_user_id'}: expected a whole number",
    ]


def test_a_misspelt_variable_is_named_with_the_likely_spelling_and_the_command_goes_on(tmp_path: Path) -> None:
    seen = forgebot("tasks", cwd=tmp_path, FORGEBOT_DATA_DIR=str(tmp_path / "data"), FORGEBOT_GITLAB__TOKN="x",
                    FORGEBOT_LLM__ROLES__CODER__MODL="qwen", FORGEBOT_GITHUB_TOKEN="y", FORGEBOT_NONSENSE="z")
    assert seen.code == 0, seen.err
    assert seen.err == [
        "forgebot: FORGEBOT_GITHUB_TOKEN is not a forgebot setting and is ignored (did you mean "
        "FORGEBOT_GITHUB__TOKEN?)",
        "forgebot: FORGEBOT_GITLAB__TOKN is not a forgebot setting and is ignored (did you mean "
        "FORGEBOT_GITLAB__TOKEN?)",
        "forgebot: FORGEBOT_LLM__ROLES__CODER__MODL is not a forgebot setting and is ignored (did you mean "
        "FORGEBOT_LLM__ROLES__CODER__MODEL?)",
        "forgebot: FORGEBOT_NONSENSE is not a forgebot setting and is ignored (docs/configuration.md lists "
        "every setting)",
    ]
    assert seen.out[0].split()[:2] == ["TASK", "STATE"]


def test_a_log_level_logging_does_not_know_is_refused_by_name(tmp_path: Path) -> None:
    seen = forgebot("tasks", cwd=tmp_path, FORGEBOT_LOG_LEVEL="verbose")
    assert seen.code == 2
    assert seen.err == ["forgebot: FORGEBOT_LOG_LEVEL='verbose' is not valid: allowed values: DEBUG, INFO, "
                        "WARNING, ERROR or CRITICAL"]


@pytest.mark.parametrize("command", [["tasks"], ["serve"], ["index", ".", "--no-embeddings"]])
def test_a_data_directory_that_cannot_be_written_is_one_line(tmp_path: Path, command: list[str]) -> None:
    """A volume owned by another user or mounted read-only (a container's first-day mistake): every
    command ended in a PermissionError traceback. /sys refuses a new directory even to root."""
    (tmp_path / "a.py").write_text("x = 1\n")
    seen = forgebot(*command, cwd=tmp_path, FORGEBOT_DATA_DIR="/sys/forgebot-data")
    assert seen.code == 2 and not [line for line in seen.err if "Traceback" in line], seen.err
    assert seen.err[-1] == (
        f"forgebot {command[0]}: the data directory /sys/forgebot-data cannot be written (Operation not permitted: "
        f"/sys/forgebot-data): set FORGEBOT_DATA_DIR to a directory this user (uid {os.getuid()}) may write, or "
        "fix its owner or mount")


def test_a_misspelt_task_state_is_refused_naming_the_states(tmp_path: Path) -> None:
    """`forgebot tasks --state faild` listed nothing, as if no task had failed."""
    seen = forgebot("tasks", "--state", "faild", cwd=tmp_path, FORGEBOT_DATA_DIR=str(tmp_path / "data"))
    assert seen.code == 2 and seen.out == []
    assert seen.err[-1] == ("forgebot tasks: error: argument --state: invalid choice: 'faild' (choose from 'queued', "
                            "'running', 'waiting', 'done', 'failed', 'cancelled')")
