"""`.forgebot.yml` `labels` through the running receiver and worker, on both forges: the repository's
own label starts a task, the server's label it replaced starts nothing there, and a broken file
leaves the server's labels in force. The receiver reads the file through the forge's API (the fake
forge serves the served repository's default branch), never from the payload."""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path
from typing import Any

import pytest

from foundation.settings import Settings
from tests.e2e.conftest import NeedInfoScript, allow_http_git, pointed_at, post, task_states, work
from tests.fakes.forge_http import FakeForgeState, FakeIssue
from tests.fakes.samples import sample
from tests.intake import deliveries
from tests.intake.payloads import GITHUB_REPO

# per forge: the sample's own label, its project as the fake forge keys it, the issue, the file API path
SAMPLES = {
    "gitlab": ("Platform", "1", 23, "/gitlab/api/v4/projects/1/repository/files/.forgebot.yml/raw"),
    "github": ("bug", GITHUB_REPO, 1, f"/github/repos/{GITHUB_REPO}/contents/.forgebot.yml"),
}
CUSTOM = "ai:do"


def _labeled(forge: str, origin_url: str, label: str) -> tuple[bytes, dict[str, str]]:
    """The forge's real label sample, adding `label` instead of its own (a copy derived in memory)."""
    if forge == "gitlab":
        payload: dict[str, Any] = sample("gitlab/issue.labels-changed.json")
        payload["changes"]["labels"]["current"][0]["title"] = label
        payload["labels"][0]["title"] = label
    else:
        payload = sample("github/issues.labeled.json")
        payload["label"]["name"] = label
    body = pointed_at(json.dumps(payload).encode(), origin_url)
    return deliveries.gitlab(body, "Issue Hook") if forge == "gitlab" else deliveries.github(body, "issues")


def _commit_config(tmp_path: Path, text: str, name: str = ".forgebot.yml") -> None:
    """Put `.forgebot.yml` (or `name`) on both default branches of the served repository (GitLab's sample
    project says `master`, GitHub's `main`)."""
    bare, work_dir = tmp_path / "served" / "app.git", tmp_path / "config-edit"
    subprocess.run(["git", "clone", "-q", str(bare), str(work_dir)], check=True)
    (work_dir / name).write_text(text)
    git = ["git", "-C", str(work_dir), "-c", "user.name=dev", "-c", "user.email=dev@example.com"]
    subprocess.run([*git, "add", name], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "forgebot labels"], check=True)
    subprocess.run([*git, "push", "-q", "origin", "HEAD:main", "HEAD:master"], check=True)


def _setup(forge: str, settings: Settings, redis_url: str, fake_forge: FakeForgeState) -> None:
    settings.redis_url = redis_url
    allow_http_git(settings)
    label, project, number, _ = SAMPLES[forge]
    settings.triggers.implement_label = label  # the server's label is the one the sample adds
    if forge == "gitlab":
        fake_forge.grant("gitlab", project, "1", 30)  # root, who labels, is a Developer
        fake_forge.grant("gitlab", project, "7", 30)
    else:
        fake_forge.grant("github", project, "Codertocat", "write")
        fake_forge.grant("github", project, "alice", "write")
    fake_forge.add_issue(forge, project, number, FakeIssue(title="Subtraction", body="The calculator cannot subtract."))


async def _modes(settings: Settings) -> list[str]:
    from bot.tasks.inbox import Inbox

    inbox = await Inbox.open(sqlite_path=settings.inbox_path)
    try:
        return [t.mode for t in await inbox.tasks()]
    finally:
        await inbox.close()


def _file_reads(forge: str, fake_forge: FakeForgeState, name: str = ".forgebot.yml") -> int:
    path = SAMPLES[forge][3].replace(".forgebot.yml", name)
    return sum(1 for method, seen, _ in fake_forge.log if method == "GET" and seen == path)


@pytest.mark.parametrize("name", [".forgebot.yml", ".forgebot.yaml"])  # `.yaml` was ignored, silently
@pytest.mark.parametrize("forge", ["gitlab", "github"])
async def test_repository_label_starts_an_implement_task(
    forge: str, settings: Settings, redis_url: str, fake_forge: FakeForgeState, origin_url: str, tmp_path: Path,
    name: str,
) -> None:
    _setup(forge, settings, redis_url, fake_forge)
    _commit_config(tmp_path, f'labels:\n  implement: "{CUSTOM}"\n', name)
    assert await post(settings, forge, *_labeled(forge, origin_url, CUSTOM)) == 202
    assert _file_reads(forge, fake_forge, name) == 1  # read through the forge's file API
    assert (await work(settings, NeedInfoScript())).jobs_failed == 0
    assert await task_states(settings) == [("waiting", "need_info")]
    (questions,) = fake_forge.comments_on(forge, SAMPLES[forge][1], SAMPLES[forge][2])
    assert "1. Integers or floats?" in questions.body
    assert await _modes(settings) == ["implement"]


@pytest.mark.parametrize("forge", ["gitlab", "github"])
async def test_server_label_replaced_by_the_repository_starts_nothing(
    forge: str, settings: Settings, redis_url: str, fake_forge: FakeForgeState, origin_url: str, tmp_path: Path
) -> None:
    _setup(forge, settings, redis_url, fake_forge)
    _commit_config(tmp_path, f'labels:\n  implement: "{CUSTOM}"\n')
    assert await post(settings, forge, *_labeled(forge, origin_url, SAMPLES[forge][0])) == 200
    assert await task_states(settings) == []
    assert fake_forge.comments_on(forge, SAMPLES[forge][1], SAMPLES[forge][2]) == []


@pytest.mark.parametrize("forge", ["gitlab", "github"])
async def test_broken_config_leaves_the_server_labels(
    forge: str, settings: Settings, redis_url: str, fake_forge: FakeForgeState, origin_url: str, tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _setup(forge, settings, redis_url, fake_forge)
    _commit_config(tmp_path, f'labels:\n  implemnt: "{CUSTOM}"\n')  # a typo: unknown field
    with caplog.at_level(logging.WARNING, logger="bot.intake.repolabels"):
        assert await post(settings, forge, *_labeled(forge, origin_url, CUSTOM)) == 200
        assert await post(settings, forge, *_labeled(forge, origin_url, SAMPLES[forge][0])) == 202
    assert await _modes(settings) == ["implement"]  # the server's label, not the broken file's
    warnings = [r.getMessage() for r in caplog.records if r.name == "bot.intake.repolabels"]
    assert len(warnings) == 2 and all("the server's labels apply" in w and "labels.implemnt" in w for w in warnings)
