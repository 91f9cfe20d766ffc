"""A Python repository with no `.forgebot.yml`, through the running service: its profile is detected.

A label delivery goes over HTTP to the real receiver, a burst arq worker on the real Redis runs the
implement route on a mirror of the repository served by `git http-backend`, and the gates run the
Python profile's checks in the real sandbox: pytest (the system's `python3 -m pytest`) on the
coder's change. The trace (`forgebot trace TASK`, as a user types it), the status comment and the
pull request say which profile was chosen and why; without detection the PHP profile's phpunit
would have been looked for and the test gate reported `not_run`. A `/review` reads the profile from
the target branch's files, never from the change under review.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from foundation.settings import Settings
from graph.schemas import Review
from tests.conftest import GITHUB_TOKEN
from tests.e2e import implement_harness as h
from tests.e2e.review_harness import Models, deliver, fake_change, prepare
from tests.e2e.review_harness import work as review_work
from tests.e2e.test_languages_service import POLYGLOT, REPO
from tests.e2e.test_memory_service import _task_ids, _trace
from tests.fakes.forge_http import FakeForgeState, FakeIssue
from tests.fakes.git_http import create_git_server
from tests.fakes.model_server import answer
from tests.fakes.samples import sample
from tests.fakes.server import serving
from tests.graph.conftest import FIXTURES
from tests.graph.implement import python_route
from tests.graph.implement.conftest import GIT_ENV
from tests.graph.review.conftest import ChangeRepo
from tests.graph.review.conftest import git as git_in
from tests.graph.runtime.script import done
from tests.intake import deliveries
from tests.intake.payloads import serve_samples
from tests.tools import need_check_pytest

pytestmark = pytest.mark.timeout(600)

SAMPLE = sample("github/issues.labeled.json")
CALC = python_route.CALC

@pytest.fixture
def served(tmp_path: Path, settings: Settings, fake_forge: FakeForgeState) -> Iterator[h.Served]:
    """The fixture's Python package, without any `.forgebot.yml`, served as the sample's repository."""
    need_check_pytest()
    seed = tmp_path / "seed"
    shutil.copytree(FIXTURES / "python_project", seed)
    assert not (seed / ".forgebot.yml").exists()
    for args in (["init", "-q", "-b", "master"], ["add", "-A"], ["commit", "-qm", "initial"]):
        subprocess.run(["git", "-C", str(seed), *args], env=GIT_ENV, check=True)
    forge = tmp_path / "forge"
    forge.mkdir()
    origin = forge / "app.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(origin)], env=GIT_ENV, check=True)
    expected = "Basic " + base64.b64encode(f"x-access-token:{GITHUB_TOKEN}".encode()).decode()
    with serving(create_git_server(forge, expected)) as server:
        url = f"{server.url}/app.git"
        settings.workspace.git_hosts = (url,)
        serve_samples(fake_forge, settings, clone_url=url)
        yield h.Served(origin=origin, url=url)


async def test_a_python_repository_without_configuration_is_tested_with_pytest(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served
) -> None:
    h.setup(settings, redis_url, "bug")  # the sample adds "bug"
    fake_forge.grant("github", REPO, "Codertocat", "write")
    fake_forge.grant("github", REPO, "alice", "write")
    fake_forge.add_issue("github", REPO, 1, FakeIssue(title="Add multiplication", body="calc should multiply."))
    roles = python_route.roles()
    delivery = deliveries.github(h.labelled(SAMPLE, served.url), "issues")
    assert await h.post(settings, "github", *delivery) == 202
    assert (await h.work(settings, roles.__getitem__)).jobs_failed == 0
    assert await h.task_states(settings) == [("done", "delivered")]

    chosen = "`python` (detected: pyproject.toml at the top level)"
    change = h.the_change(fake_forge, "github", REPO)
    assert f"Profile: {chosen}" in change.body
    # pytest really ran, on the coder's change: the fixture's three tests and the new one
    assert "| test_runner | `passed` | 4 passed" in change.body and "| py-syntax | `passed` |" in change.body
    assert "def multiply" in served.show(change.source_branch, CALC)
    status = [c for c in fake_forge.comments_on("github", REPO, 1, status=True) if ":purpose=status -->" in c.body]
    assert len(status) == 1 and f"Profile: {chosen}" in status[0].body

    (task,) = await _task_ids(settings)
    story = _trace(settings, task)
    assert f"profile: {chosen}" in story
    (gates,) = [line for line in story.splitlines() if "   gates: " in line]
    assert "test_runner passed" in gates and "test_runner: python3 -m pytest -q -p no:cacheprovider" in gates
    assert "phpunit" not in story and "composer install" not in story



async def test_a_review_reads_the_profile_from_the_target_branch_not_the_change(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, tmp_path: Path
) -> None:
    """A `/review` on a TypeScript package without `.forgebot.yml`: TypeScript, from the default branch's
    package.json; the change under review dropping the compiler and adding a pyproject.toml changes nothing."""
    root = tmp_path / "repo"
    shutil.copytree(POLYGLOT / "src", root / "src")
    (root / "package.json").write_text(json.dumps({"name": "shop", "devDependencies": {"typescript": "^5.4.0"}}))
    git_in(root, "init", "-q", "-b", "main")
    git_in(root, "add", "-A")
    git_in(root, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "-m", "base")
    base = git_in(root, "rev-parse", "HEAD").strip()
    git_in(root, "checkout", "-q", "-b", "feature")
    repo = ChangeRepo(root=root, base=base, head=base)
    repo.commit({"package.json": '{"name": "shop"}', "pyproject.toml": "[project]\nname = 'shop'\n",
                 "src/tax.py": "RATE = 0.2\n"}, "Move to Python")
    prepare(settings, redis_url, fake_forge, repo.root)
    fake_forge.add_change("github", REPO, 1, fake_change(repo))
    review = Review(verdict="approve", summary="fine", verified_criteria=[], unverified_criteria=[], findings=[])
    await deliver(settings, "github", 301, f"file://{repo.root}")
    await review_work(settings, redis_url, Models([done(), answer(Review, review)]))
    (task,) = await _task_ids(settings)
    story = _trace(settings, task)
    assert "profile: `typescript` (detected: package.json at the top level, depending on typescript)" in story
