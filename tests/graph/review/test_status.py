"""The status comment on the review route: it lives on the change, next to the review it announces."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from foundation.forge import Change, ChangeRef, CommentRef, RepoRef
from foundation.forge.models import Reaction
from foundation.settings import SandboxSettings, Settings, WorkspaceSettings
from graph import status
from graph.deps import Deps
from graph.schemas import Review
from graph.state import TaskState
from tests.fakes.model_server import answer, scripted
from tests.graph.checkpointed import run_task
from tests.graph.review.conftest import ChangeRepo, change_files
from tests.graph.runtime.script import done
from tests.graph.statusforge import StatusForge, acknowledged

REVIEW = Review(verdict="approve", summary="Fine.", verified_criteria=[1], findings=[])


def _seed(forge: StatusForge, repo: ChangeRepo) -> tuple[ChangeRef, CommentRef]:
    ref = ChangeRef(repo=RepoRef(forge="gitlab", project="7", path="group/shop", clone_url=f"file://{repo.root}"),
                    number=3)
    forge.changes[ref] = Change(ref=ref, title="Double totals", body="Doubles totals.", author="alice",
                                source_branch="feature", target_branch="main", base_sha=repo.base,
                                head_sha=repo.head, start_sha=repo.base, state="opened", files=change_files(repo))
    return ref, forge.seed_comment(ref, "/review", author="alice", author_id=7)


async def _review(forge: StatusForge, ref: ChangeRef, trigger: CommentRef, tmp_path: Path) -> dict[str, Any]:
    settings = Settings(_env_file=None, data_dir=tmp_path / "data",  # type: ignore[call-arg]
                        workspace=WorkspaceSettings(allowed_protocols=("file",)),
                        sandbox=SandboxSettings(allow_root=True))  # the suite runs as root
    models = {"reviewer": scripted([done(), answer(Review, REVIEW)])}
    deps = Deps(settings=settings, forge=forge, model_for=models.__getitem__)
    start = TaskState(task_id="r1", mode="review", forge="gitlab", repo=ref.repo.model_dump(), number=3, title="",
                      body="", started_at=0.0, tokens=0, models=[])
    state = await acknowledged(forge, start, trigger)
    result, _ = await run_task(deps.settings, deps, state, "r1")
    await status.conclude(forge, cast(TaskState, result), str(result["outcome"]))
    return dict(result)


@pytest.mark.php  # runs PHP tools (the review gates, the checks)
async def test_review_status_reacts_on_the_command_and_edits_one_comment(
    change_repo: ChangeRepo, tmp_path: Path
) -> None:
    forge = StatusForge(kind="gitlab")
    ref, trigger = _seed(forge, change_repo)
    first = await _review(forge, ref, trigger, tmp_path)
    assert first["outcome"] == "approve"
    assert forge.phases == ["started", "reading the change", "reviewing", "publishing", "done (approve)"]
    (comment,) = forge.status_comments(ref)
    assert comment.startswith("**Status: done (approve)**") and "mode review" in comment
    assert len([b for b in forge.others(ref) if "### Review" in b]) == 1
    # the same task delivered again: its checkpoint says it ended, so it is not run again, and its
    # status is concluded in the same comment (same marker)
    again = await _review(forge, ref, trigger, tmp_path)
    assert again["outcome"] == "approve" and forge.phases[-1] == "done (approve)"
    assert len(forge.status_comments(ref)) == 1 and forge.reactions == [(trigger, Reaction.EYES)]


@pytest.mark.php  # runs PHP tools (the review gates, the checks)
async def test_review_status_failure_does_not_stop_the_review(change_repo: ChangeRepo, tmp_path: Path) -> None:
    forge = StatusForge(kind="gitlab", fail_status=True)
    ref, trigger = _seed(forge, change_repo)
    result = await _review(forge, ref, trigger, tmp_path)
    assert result["outcome"] == "approve" and forge.status_comments(ref) == []
    assert any("### Review" in b for b in forge.others(ref))
