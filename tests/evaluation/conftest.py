"""Fixtures for the evaluation tests: PHP tools present (or a skip), the starter set, settings."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.evaluation.taskset import TaskSet, load_taskset
from foundation.settings import EmbedderSettings, Settings
from tests.tools import need

STARTER = Path(__file__).resolve().parents[2] / "evals" / "php-starter.toml"
TOOLS = ("php", "phpunit", "dpkg-query", "git")


@pytest.fixture
def php_tools() -> None:
    """Skip when PHP, PHPUnit or dpkg are missing, unless FORGEBOT_REQUIRE_TOOLS=1 (then fail)."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if not Path("/usr/share/php/Doctrine/Inflector").is_dir():
        missing.append("php-doctrine-inflector")
    need(not missing, ", ".join(missing))


@pytest.fixture
def starter() -> TaskSet:
    return load_taskset(STARTER)


@pytest.fixture
def eval_settings(tmp_path: Path) -> Settings:
    """The harness on the lexical and graph legs: the offline model would embed the task's project in
    every test (~4 CPU-s each); test_vector_builds.py names its embedder."""
    return Settings(_env_file=None, _secrets_dir=None, data_dir=tmp_path / "data",  # type: ignore[call-arg]
                    embedder=EmbedderSettings(kind="off"))
