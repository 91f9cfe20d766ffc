"""need_info: questions posted once, the run pauses, an answer resumes it where it stopped."""

from __future__ import annotations

from pathlib import Path

import pytest

from foundation.forge import Comment
from foundation.settings import Settings
from graph.nodes.need_info import BadAnswer
from graph.schemas import AcceptanceCriterion, Analysis, Decomposition
from tests.fakes.forge import FakeForge
from tests.fakes.model_server import answer, scripted
from tests.graph.investigation.conftest import ISSUE, Runner, task_state
from tests.graph.runtime.script import call

QUESTIONS = Decomposition(questions=["Integers or floats?", "Which class gets subtract()?"])
CRITERIA = Decomposition(criteria=[AcceptanceCriterion(id=1, text="Calculator::subtract(5, 3) returns 2")])
REPLY = {"author": "alice", "body": "Integers, in App\\Calculator."}


def _models() -> dict[str, object]:
    return {
        "decomposer": scripted([answer(Decomposition, QUESTIONS), answer(Decomposition, CRITERIA)]),
        "analyzer": scripted([call("finish_exploration", files=["src/Calculator.php"], reason="seen"),
                              answer(Analysis, Analysis(summary="subtract goes beside add"))]),
    }


async def test_questions_pause_the_run_and_an_answer_resumes_it(checkout: Path, settings: Settings,
                                                                 forge: FakeForge) -> None:
    forge.seed_comment(ISSUE, "Keep it small.", author="alice", author_id=7)
    models = _models()
    runner = Runner(settings, forge, models.__getitem__, task_state(checkout, settings))  # type: ignore[arg-type]
    paused = await runner.run()
    assert paused["outcome"] == "need_info" and paused["question_rounds"] == 1
    assert runner.visited == ["decomposer", "ask", "need_info"]
    (questions,) = forge.comments[ISSUE][1:]
    assert "1. Integers or floats?\n2. Which class gets subtract()?" in questions
    assert "Reply in this thread" in questions and "72 hours" in questions

    # a redelivered trigger without an answer changes nothing; a comment edited later is not re-read
    assert (await runner.run())["outcome"] == "need_info" and len(forge.comments[ISSUE]) == 2
    forge.posted[ISSUE][0] = forge.posted[ISSUE][0].model_copy(update={"body": "Now do something else."})

    done = await runner.run(REPLY)
    assert done["outcome"] == "reported"
    assert runner.visited == ["decomposer", "ask", "need_info", "decomposer", "analyzer", "publisher"]
    first, second = models["decomposer"].received  # type: ignore[attr-defined]
    assert "Integers, in App" not in str(first[-1].content)
    assert "Integers, in App" in str(second[-1].content) and "Keep it small." in str(second[-1].content)
    assert "Now do something else." not in str(second[-1].content)
    analyzer_prompt = str(models["analyzer"].received[0][-1].content)  # type: ignore[attr-defined]
    assert "Integers, in App" in analyzer_prompt  # the answer reaches the analyzer too
    assert len(forge.comments[ISSUE]) == 3 and "### Analysis" in forge.comments[ISSUE][-1]


async def test_questions_are_posted_once_even_when_the_ask_node_runs_again(
    checkout: Path, settings: Settings, forge: FakeForge
) -> None:
    models = _models()
    start = task_state(checkout, settings)
    await Runner(settings, forge, models.__getitem__, start).run()  # type: ignore[arg-type]
    again = Runner(settings, forge, lambda role: scripted([answer(Decomposition, QUESTIONS)]), start)
    await again.run()  # a retried job on a lost checkpoint: same task id, same marker
    bot_comments = [c for c in forge.posted[ISSUE] if isinstance(c, Comment) and "forgebot:task=t1" in c.body]
    assert len(bot_comments) == 1


async def test_rounds_are_bounded_then_the_report_is_blocked(checkout: Path, settings: Settings,
                                                             forge: FakeForge) -> None:
    settings.questions.max_rounds = 1
    decomposer = scripted([answer(Decomposition, QUESTIONS), answer(Decomposition, QUESTIONS)])
    models = {"decomposer": decomposer, "analyzer": scripted([])}
    runner = Runner(settings, forge, models.__getitem__, task_state(checkout, settings))
    await runner.run()
    done = await runner.run(REPLY)
    assert done["outcome"] == "blocked"
    assert "Analysis blocked" in forge.comments[ISSUE][-1] and "Reply in this thread" not in forge.comments[ISSUE][-1]


async def test_a_resume_value_that_is_not_an_answer_is_refused(checkout: Path, settings: Settings,
                                                               forge: FakeForge) -> None:
    models = _models()
    runner = Runner(settings, forge, models.__getitem__, task_state(checkout, settings))  # type: ignore[arg-type]
    await runner.run()
    with pytest.raises(BadAnswer):
        await runner.run({"author": "alice", "body": "  "})
