"""End to end: task sets through `run_local` with scripted models, reports written and marked."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from uuid import uuid4

import pytest
import yaml
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from bot.cli.eval_cli import register
from bot.evaluation.execution import Prices, RunOptions, guard_events, run_task
from bot.evaluation.report import SYNTHETIC_NOTICE
from bot.evaluation.taskrepos import Workspace
from bot.evaluation.taskset import ExpectedFindings, Task, TaskSet
from bot.evaluation.usage import UsageRecorder
from foundation.settings import Settings
from graph.routing import ModeUnavailable
from graph.schemas import AcceptanceCriterion, Analysis, Decomposition
from tests.evaluation.conftest import STARTER
from tests.fakes.model_server import answer, scripted

pytestmark = [pytest.mark.php, pytest.mark.usefixtures("php_tools")]

ANALYZE = {
    "id": "where-tableize",
    "mode": "analyze",
    "package": "php-doctrine-inflector",
    "version": "2.0.6-1",
    "text": "Table names\nWhere does Inflector::tableize turn CamelCase into snake_case?",
    "verify": {"kind": "locations", "files": ["Doctrine/Inflector/Inflector.php"], "symbols": ["Inflector::tableize"]},
}


def _two_task_set(tmp_path: Path, starter: TaskSet) -> Path:
    implement = next(t for t in starter.tasks if t.id == "inflector-tableize").model_dump(mode="json")
    hidden = implement["verify"]["files"][0]
    (tmp_path / hidden).parent.mkdir(parents=True)
    shutil.copyfile(STARTER.parent / hidden, tmp_path / hidden)
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump({"name": "two", "tasks": [ANALYZE, implement]}), encoding="utf-8")
    return path


def test_synthetic_run_of_two_tasks_through_the_cli(
    tmp_path: Path, starter: TaskSet, eval_settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command", required=True))
    out = tmp_path / "out"
    args = parser.parse_args(["eval", str(_two_task_set(tmp_path, starter)), "--scripted", "--out", str(out)])
    args.settings, args.data_dir = eval_settings, eval_settings.data_dir
    assert args.handler(args) == 0
    assert SYNTHETIC_NOTICE in capsys.readouterr().out

    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["synthetic"] is True and report["notice"] == SYNTHETIC_NOTICE
    assert report["summary"] == {"total": 2, "passed": 1, "failed": 1, "not_run": 0, "error": 0, "invalid": 0}
    analyze, implement = report["tasks"]
    assert analyze["outcome"] == "passed" and analyze["verification"]["found_symbols"] == ["Inflector::tableize"]
    assert set(analyze["roles"]) == {"decomposer", "analyzer"} and analyze["tokens"] > 0
    assert analyze["roles"]["analyzer"]["models"] == ["forgebot-synthetic-baseline"]
    # the whole implement route ran: a plan on the named file, approval, a coder that changes nothing
    # (a blocker, then a report item), gates, the route's reviewer and its failure report; the
    # hidden tests, not the bot, say failed
    assert implement["outcome"] == "failed" and implement["reason"] == "hidden tests: 0 failures, 3 errors of 3"
    assert implement["before"]["passed"] is False and implement["changed_files"] == []
    assert set(implement["roles"]) == {"decomposer", "analyzer", "planner", "architect", "coder", "planner_amend",
                                       "reviewer"}
    assert implement["tool_calls"] == {"report_plan_blocker": 1, "complete_item": 1, "finish": 1}
    assert implement["state_outcome"] == "failed" and "could not verify" in implement["state_failure"]
    assert [g["name"] for g in implement["gates"]][:2] == ["test_runner", "smoke"]
    assert all(g["status"] in {"passed", "failed", "disabled", "not_run"} for g in implement["gates"])
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert SYNTHETIC_NOTICE in markdown and "| inflector-tableize | implement | **failed** | failed |" in markdown


async def test_a_synthetic_review_reports_one_finding_per_changed_hunk(
    tmp_path: Path, starter: TaskSet, eval_settings: Settings
) -> None:
    seeded = next(t for t in starter.tasks if t.id == "review-brick-gcd-sign")
    assert isinstance(seeded.verify, ExpectedFindings)
    # the starter's seeded edit, but an expectation far from it: the check reads the real review
    far = seeded.verify.findings[0].model_copy(update={"start_line": 1, "end_line": 1})
    task = seeded.model_copy(update={"id": "review-gcd",
                                     "verify": seeded.verify.model_copy(update={"tolerance": 0, "findings": [far]})})
    options = RunOptions(settings=eval_settings, work_dir=tmp_path / "r", synthetic=True)
    result = await run_task(task, STARTER.parent, options)
    assert result.outcome == "failed" and result.verification["source"] == "state"
    assert result.verification["missed"] == ["Brick/Math/BigInteger.php:1-1"]
    assert result.verification["unexpected"] == 1  # the one changed hunk
    assert result.state_outcome == "incomplete" and set(result.roles) == {"reviewer"}

    # the expectation of the starter set sits inside that hunk
    result = await run_task(seeded, STARTER.parent, RunOptions(settings=eval_settings, work_dir=tmp_path / "s",
                                                                synthetic=True))
    assert result.outcome == "passed" and result.verification["matched"] == ["Brick/Math/BigInteger.php:679-681"]


def _models(task: Task, ws: Workspace):  # type: ignore[no-untyped-def]
    criteria = Decomposition(criteria=[AcceptanceCriterion(id=1, text="Find the table-name conversion")])
    analysis = Analysis(summary="tableize", affected_files=["Doctrine/Inflector/Inflector.php"], symbols=["tableize"])
    script = {
        "decomposer": scripted([answer(Decomposition, criteria, tokens=100)]),
        "analyzer": scripted([AIMessage(content="no tools needed"), answer(Analysis, analysis, tokens=300)]),
    }
    return script.__getitem__


async def test_tokens_and_cost_per_role_and_a_failed_check(tmp_path: Path, eval_settings: Settings) -> None:
    task = Task.model_validate(ANALYZE)
    options = RunOptions(settings=eval_settings, work_dir=tmp_path / "w", synthetic=False, models_for=_models,
                         prices=Prices(input_per_mtok=1.0, output_per_mtok=3.0))
    result = await run_task(task, tmp_path, options)
    # "tableize" alone does not name Inflector::tableize: the check fails, whatever the model claims
    assert result.outcome == "failed" and result.verification["missing_symbols"] == ["Inflector::tableize"]
    assert result.reason == "not named: Inflector::tableize"
    assert result.roles["decomposer"].total_tokens == 100 and result.roles["analyzer"].input_tokens == 150
    assert result.tokens == 400 and result.cost_usd == pytest.approx((200 * 1.0 + 200 * 3.0) / 1e6)
    assert result.state_outcome == "reported" and result.changed_files == []


async def test_the_route_check_is_asked_at_run_time(tmp_path: Path, eval_settings: Settings) -> None:
    task = Task.model_validate(ANALYZE)

    def refuse(mode: str) -> None:
        raise ModeUnavailable(f"mode {mode!r} switched off")

    options = RunOptions(settings=eval_settings, work_dir=tmp_path / "a", synthetic=True, check_mode=refuse)
    result = await run_task(task, tmp_path, options)
    assert result.outcome == "not_run" and result.reason == "mode 'analyze' switched off"

    # a check that lets the mode through hands the task to the graph; a run that raises (here a model
    # with nothing left to say) is an error of the run, never a pass
    options = RunOptions(settings=eval_settings, work_dir=tmp_path / "b", synthetic=False, check_mode=lambda m: None,
                         models_for=lambda t, w: (lambda role: scripted([])))
    result = await run_task(task, tmp_path, options)
    assert result.outcome == "error" and result.reason.startswith("run: ")


def test_guard_and_budget_events_from_sessions_the_checklist_and_traces(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    lines = [json.dumps({"kind": "model", "role": "analyzer"}), json.dumps({"kind": "guard", "cause": "repeat"}),
             json.dumps({"kind": "budget", "budget": "calls", "limit": 8, "used": 8})]
    (traces / "t.jsonl").write_text("\n".join([*lines, "not json"]), encoding="utf-8")
    state = {
        "sessions": [{"role": "analyzer", "outcome": "finished", "calls": 2, "reason": "ok"},
                     {"role": "reviewer", "outcome": "budget_exhausted", "calls": 9, "reason": "calls budget 9/9"}],
        "coder": {"end": "looping", "reason": "item 1: the same failure twice"},
        "outcome": "failed",
    }
    assert guard_events(state, tmp_path) == [
        {"source": "state.sessions", "role": "reviewer", "outcome": "budget_exhausted", "calls": 9,
         "reason": "calls budget 9/9"},
        {"source": "state.coder", "role": "coder", "outcome": "looping", "reason": "item 1: the same failure twice"},
        {"source": "t.jsonl", "kind": "guard", "cause": "repeat"},
        {"source": "t.jsonl", "kind": "budget", "budget": "calls", "limit": 8, "used": 8},
    ]


def test_tool_calls_are_counted_but_structured_answers_are_not() -> None:
    recorder = UsageRecorder()
    model = recorder.attach("reviewer", scripted([]))
    message = AIMessage(content="", tool_calls=[
        {"name": "search_code", "args": {}, "id": "1"},
        {"name": "read_file_snippet", "args": {}, "id": "2"},
        {"name": "Analysis", "args": {}, "id": "3"},
    ])
    handler = model.callbacks[0]  # type: ignore[index]
    handler.on_llm_end(LLMResult(generations=[[ChatGeneration(message=message)]]), run_id=uuid4())
    assert recorder.tool_calls() == {"read_file_snippet": 1, "search_code": 1}
    assert recorder.roles["reviewer"].calls == 1


def test_eval_without_a_model_or_scripted_stops_before_any_task(
    tmp_path: Path, eval_settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["eval", str(STARTER), "--out", str(tmp_path / "out")])
    args.settings, args.data_dir = eval_settings, eval_settings.data_dir
    assert args.handler(args) == 2
    assert "FORGEBOT_LLM__API_KEY is not set" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
