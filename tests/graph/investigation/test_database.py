"""The analyzer gets the read-only database tools only when `.forgebot.yml` names a connection the
server binds to the repository; any other name stops the task with the reason."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage

from foundation.settings import DatabaseConnection, Settings
from graph.schemas import AcceptanceCriterion, Analysis, Decomposition
from graph.tools.database import DatabaseRefused
from tests.fakes.forge import FakeForge
from tests.fakes.model_server import answer, scripted
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
    settings.databases["app"] = DatabaseConnection(url=_database(tmp_path), projects=("gitlab:group/app",))
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


@pytest.mark.parametrize("bound", [None, ("gitlab:group/other", "github:group/app", "gitlab:2")],
                         ids=["not-configured", "bound-elsewhere"])
async def test_a_connection_not_bound_to_the_repository_stops_the_analyzer_before_any_query(
    checkout: Path, settings: Settings, forge: FakeForge, tmp_path: Path, bound: tuple[str, ...] | None
) -> None:
    if bound is not None:
        settings.databases["app"] = DatabaseConnection(url=_database(tmp_path), projects=bound)
    _name_database(checkout, "app")
    analyzer = scripted([call("list_database_tables"), answer(Analysis, Analysis(summary="read it"))])
    models = {"decomposer": scripted([answer(Decomposition, CRITERIA)]), "analyzer": analyzer}
    with pytest.raises(DatabaseRefused) as refused:
        await Runner(settings, forge, models.__getitem__, task_state(checkout, settings)).run()
    assert "names the database connection `app`, which this server does not provide to gitlab project group/app" \
        in str(refused.value)
    assert analyzer.received == []  # no model call, so no tool call: the refusal comes first
