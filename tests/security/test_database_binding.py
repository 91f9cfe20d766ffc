"""A repository's `.forgebot.yml` can name a database connection; only projects the server binds
to that connection may use it. Through the service: a label delivery to the real receiver, the arq
worker on a real Redis, a mirror over HTTP of a repository whose `.forgebot.yml` names `shop`, and
an analyzer scripted to read the orders table. Bound to another project (or, as earlier versions
configured it, a URL bound to nobody), the task stops before any role runs and its comment says
why; bound to this project, the same script reads the table, which is what makes the attack live.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage

from foundation.settings import Settings
from graph.schemas import AcceptanceCriterion, Analysis, Decomposition
from tests.e2e.conftest import allow_http_git, post, task_states, work
from tests.fakes.forge_http import FakeForgeState, FakeIssue
from tests.fakes.git_http import create_git_server
from tests.fakes.model_server import ScriptedModel, answer, scripted
from tests.fakes.samples import sample
from tests.fakes.server import serving
from tests.graph.conftest import FIXTURES, init_repo
from tests.graph.runtime.script import call
from tests.intake import deliveries
from tests.intake.payloads import serve_samples

SECRET_ROW = "card-4111-1111-1111-1111"
OTHER_PROJECT = "gitlab:gitlab-org/gitlab-test"  # project 5: the connection's owner in the attack
THIS_PROJECT = "gitlab:1"  # gitlabhq/gitlab-test, whose issue is labelled


@pytest.fixture
def origin(tmp_path: Path, settings: Settings, fake_forge: FakeForgeState) -> Iterator[str]:
    """The fixture project with `.forgebot.yml` naming `shop` on its default branch, served over HTTP."""
    work_tree = shutil.copytree(FIXTURES / "php_project", tmp_path / "work")
    (work_tree / ".forgebot.yml").write_text("database: shop\ncommands:\n  install: false\n")
    init_repo(work_tree)
    served = tmp_path / "served"
    served.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(work_tree), str(served / "app.git")], check=True)
    subprocess.run(["git", "-C", str(served / "app.git"), "branch", "master", "main"], check=True)
    with serving(create_git_server(served, None)) as server:
        settings.workspace.git_hosts = (server.url,)
        serve_samples(fake_forge, settings, clone_url=f"{server.url}/app.git", git_dir=str(served / "app.git"))
        yield f"{server.url}/app.git"


def _shop(tmp_path: Path) -> str:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, card TEXT)")
        conn.execute("INSERT INTO orders (card) VALUES (?)", (SECRET_ROW,))
    return f"sqlite://{path}"


def _roles() -> dict[str, ScriptedModel]:
    criteria = Decomposition(criteria=[AcceptanceCriterion(id=1, text="Orders keep their cards")])
    return {
        "decomposer": scripted([answer(Decomposition, criteria)]),
        "analyzer": scripted([call("run_readonly_sql", sql="SELECT card FROM orders"),
                              call("finish_exploration", files=["src/Calculator.php"], reason="read"),
                              answer(Analysis, Analysis(summary="orders read"))]),
    }


@pytest.mark.parametrize(
    "connection",
    ["plain-url", "bound-elsewhere", "bound-here"],
)
async def test_a_repository_uses_only_a_connection_bound_to_it(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, origin: str, tmp_path: Path, connection: str,
) -> None:
    url = _shop(tmp_path)
    raw: object = {"plain-url": url, "bound-elsewhere": {"url": url, "projects": [OTHER_PROJECT]},
                   "bound-here": {"url": url, "projects": [THIS_PROJECT]}}[connection]
    configured = Settings(_env_file=None, _secrets_dir=None, databases={"shop": raw})  # type: ignore[call-arg]
    settings.databases = configured.databases
    settings.redis_url = redis_url
    settings.triggers.analyze_label = "Platform"  # the sample adds "Platform"
    allow_http_git(settings)
    fake_forge.grant("gitlab", "1", "1", 30)
    fake_forge.members[("gitlab", "1", "7")] = "30"
    fake_forge.add_issue("gitlab", "1", 23, FakeIssue(title="Orders keep their cards", body="..."))
    delivery = deliveries.gitlab(sample("gitlab/issue.labels-changed.json"), "Issue Hook")
    assert await post(settings, "gitlab", *delivery) == 202
    roles = _roles()
    await work(settings, roles.__getitem__)
    seen = [str(m.content) for turn in roles["analyzer"].received for m in turn if isinstance(m, ToolMessage)]
    comments = [c.body for c in fake_forge.comments_on("gitlab", "1", 23)]
    if connection == "bound-here":
        assert any(SECRET_ROW in text for text in seen)  # the script does read the table when allowed
        assert [state for state, _ in await task_states(settings)] == ["done"]
        return
    assert not any(SECRET_ROW in text for text in seen) and roles["analyzer"].received == []
    assert [state for state, _ in await task_states(settings)] == ["failed"]
    (failure,) = [c for c in comments if "could not finish this task" in c]
    assert ("names the database connection `shop`, which this server does not provide to gitlab project "
            "gitlabhq/gitlab-test") in failure
    assert "gitlab:gitlabhq/gitlab-test" in failure  # how to bind it, spelled for this project
    assert "shop.db" not in "\n".join(comments) and "gitlab-org" not in "\n".join(comments)  # nothing of the owner
