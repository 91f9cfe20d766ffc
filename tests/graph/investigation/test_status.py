"""The status comment on the analyze route: one comment, edited at each phase, never in the way."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, cast

from langchain_core.language_models import BaseChatModel

from foundation.forge import AccessLevel, Issue
from foundation.forge.models import Reaction
from foundation.settings import Settings
from graph import status
from graph.schemas import AcceptanceCriterion, Analysis, Decomposition
from graph.state import TaskState
from tests.fakes.model_server import answer, scripted
from tests.graph.investigation.conftest import ISSUE, MEMBER, REPO, Runner, task_state
from tests.graph.runtime.script import call
from tests.graph.statusforge import StatusForge, acknowledged

CRITERIA = Decomposition(criteria=[AcceptanceCriterion(id=1, text="Calculator::subtract(5, 3) returns 2")])
ANALYSIS = Analysis(summary="subtract goes beside add.", affected_files=["src/Calculator.php"],
                    symbols=["App\\Calculator::add"], impact="none", risks=[])


def _models() -> dict[str, BaseChatModel]:
    analyzer = scripted([call("finish_exploration", files=["src/Calculator.php"], reason="seen"),
                         answer(Analysis, ANALYSIS)])
    return {"decomposer": scripted([answer(Decomposition, CRITERIA)]), "analyzer": analyzer}


def _forge(*, fail_status: bool = False) -> StatusForge:
    forge = StatusForge(fail_status=fail_status)
    forge.issues[ISSUE] = Issue(ref=ISSUE, title="Add subtraction", body="The calculator cannot subtract.",
                                author="alice", author_id=MEMBER)
    forge.access[(REPO.project, MEMBER)] = AccessLevel.DEVELOPER
    return forge


async def _task(forge: StatusForge, checkout: Path, settings: Settings) -> dict[str, Any]:
    """What the job does: acknowledge, run the graph, conclude in the same comment."""
    state = await acknowledged(forge, task_state(checkout, settings), ISSUE)
    result = await Runner(settings, forge, _models().__getitem__, state).run()
    await status.conclude(forge, cast(TaskState, result), str(result["outcome"]))
    return result


async def test_one_status_comment_follows_the_phases_and_ends_done(checkout: Path, settings: Settings) -> None:
    forge = _forge()
    result = await _task(forge, checkout, settings)
    assert result["outcome"] == "reported"
    assert forge.reactions == [(ISSUE, Reaction.EYES)]
    (comment,) = forge.status_comments(ISSUE)
    assert forge.phases == ["started", "understanding the issue", "investigating", "publishing", "done (reported)"]
    assert comment.startswith("**Status: done (reported)**")
    # the footer: each role's model by its name (the scripted server names one per role)
    assert re.search(r"forgebot · task t1 · mode analyze · model scripted-\d+, scripted-\d+ · ", comment)
    (report,) = forge.others(ISSUE)  # the report itself is untouched and separate
    assert "### Analysis" in report and "Working on it" not in report


async def test_a_retried_run_edits_the_same_status_comment(checkout: Path, settings: Settings) -> None:
    forge = _forge()
    await _task(forge, checkout, settings)
    await _task(forge, checkout, settings)  # the job again, on a fresh checkpointer (its worker died)
    assert len(forge.status_comments(ISSUE)) == 1 and len(forge.others(ISSUE)) == 1
    assert forge.phases.count("started") == 2  # written twice, posted once


async def test_a_forge_refusing_the_status_does_not_fail_the_task(checkout: Path, settings: Settings) -> None:
    forge = _forge(fail_status=True)
    result = await _task(forge, checkout, settings)
    assert result["outcome"] == "reported"
    assert forge.status_comments(ISSUE) == [] and forge.reactions == []
    (report,) = forge.others(ISSUE)
    assert "### Analysis" in report


async def test_without_a_status_comment_the_nodes_write_none(checkout: Path, settings: Settings) -> None:
    forge = _forge()
    result = await Runner(settings, forge, _models().__getitem__, task_state(checkout, settings)).run()
    assert result["outcome"] == "reported" and forge.status_bodies == []
