"""An evaluation run removes its workspaces; the background vector build of a task must be over by
then. Before, `forgebot eval` returned while the build still wrote into a file under the removed
temporary directory, and the build ended with "attempt to write a readonly database"."""

from __future__ import annotations

import argparse
import logging
import threading
from pathlib import Path

import pytest
import yaml

from bot.cli.eval_cli import register
from foundation.settings import EmbedderSettings, Settings
from tests.evaluation.test_run import ANALYZE
from tests.fakes.embeddings_http import EmbeddingsState, create_embeddings_app
from tests.fakes.server import serving

pytestmark = [pytest.mark.php, pytest.mark.usefixtures("php_tools")]


def _builds() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("vectors-") and t.is_alive()]


def test_eval_ends_its_tasks_vector_builds_before_removing_their_workspaces(
    tmp_path: Path, eval_settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    state = EmbeddingsState(dimension=16, delay=0.5)  # slow enough that the build outlasts the task
    taskset = tmp_path / "one.yaml"
    taskset.write_text(yaml.safe_dump({"name": "one", "tasks": [ANALYZE]}), encoding="utf-8")
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["eval", str(taskset), "--scripted", "--out", str(tmp_path / "out")])
    with serving(create_embeddings_app(state)) as server, caplog.at_level(logging.INFO, "project.index.basevectors"):
        eval_settings.embedder = EmbedderSettings(kind="http", base_url=f"{server.url}/v1", model="slow",
                                                  dimension=16, wait_seconds=0)
        args.settings, args.data_dir = eval_settings, eval_settings.data_dir
        assert _builds() == []
        assert args.handler(args) == 0
        assert _builds() == []  # stopped and joined before the temporary workspace went away
    assert state.requests  # the build had started
    messages = [r.getMessage() for r in caplog.records if r.name == "project.index.basevectors"]
    assert not [m for m in messages if "failed" in m], messages
    assert [m for m in messages if "stopped" in m]
