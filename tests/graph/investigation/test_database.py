"""The analyzer gets the read-only database tools only when `.forgebot.yml` names a configured connection."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from langchain_core.messages import ToolMessage
from pydantic import SecretStr

from foundation.settings import Settings
from graph.schemas import AcceptanceCriterion, Analysis, Decomposition
from tests.fakes.chat import answer, scripted
from tests.fakes.forge import FakeForge
from tests.graph.conftest import git
from tests.graph.investigation.conftest import Runner, task_state
from tests.graph.runtime.script import call

CRITERIA = Decomposition(criteria=[AcceptanceCriterion(id=1, text="Orders keep their totals")])


def _database(tmp_path: Path) -> str:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total_cents INTEGER NOT NULL)")
    return f"sqlite://{path}"


def _name_database(checkout: Path, name: str) -> None:
    (checkout / ".forgebot.yml").write_text(f"database: {name}\n")
    git(checkout, "add", ".forgebot.yml")
    git(checkout, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "config")


async def test_named_and_configured_connection_gives_the_database_tools(
    checkout: Path, settings: Settings, forge: FakeForge, tmp_path: Path
) -> None:
    settings.databases["app"] = SecretStr(_database(tmp_path))
    _name_database(checkout, "app")
    analyzer = scripted([call("get_table_schema", table="orders"),
                         call("finish_exploration", files=["src/Calculator.php"], reason="schema read"),
                         answer(Analysis, Analysis(summary="orders.total_cents is an integer"))])
    models = {"decomposer": scripted([answer(Decomposition, CRITERIA)]), "analyzer": analyzer}
    start = task_state(checkout, settings)
    assert start["database"] == "app"  # read from .forgebot.yml on the default branch
    await Runner(settings, forge, models.__getitem__, start).run()
    (schema,) = [m for m in analyzer.received[1] if isinstance(m, ToolMessage)]
    assert "total_cents" in str(schema.content) and str(tmp_path) not in str(schema.content)


async def test_a_connection_the_server_does_not_configure_gives_no_database_tools(
    checkout: Path, settings: Settings, forge: FakeForge
) -> None:
    _name_database(checkout, "app")
    analyzer = scripted([call("list_database_tables"),
                         call("finish_exploration", files=["src/Calculator.php"], reason="no database"),
                         answer(Analysis, Analysis(summary="no database"))])
    models = {"decomposer": scripted([answer(Decomposition, CRITERIA)]), "analyzer": analyzer}
    await Runner(settings, forge, models.__getitem__, task_state(checkout, settings)).run()
    (refused,) = [m for m in analyzer.received[1] if isinstance(m, ToolMessage)]
    assert "list_database_tables" in str(refused.content) and "total" not in str(refused.content)
