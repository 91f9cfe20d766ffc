"""run_taskset(): each task through `run_local` in its own workspace, measured and verified.

A route the build does not have yet is `not_run` with the reason, never passed: the runner asks
`graph.routing.check_mode` at run time, so a route is picked up as soon as it lands. A task whose
hidden tests already pass before the run is `invalid`: it would measure nothing.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from bot.evaluation import fingerprint
from bot.evaluation.external import CommandError
from bot.evaluation.quality import assess
from bot.evaluation.report import SYNTHETIC_NOTICE, Report, RoleFigures, TaskResult, summarize
from bot.evaluation.scripted import SyntheticChatModel, baseline_responder
from bot.evaluation.taskrepos import Workspace, WorkspaceError, build_workspace, changed_files, take_branch
from bot.evaluation.taskset import ExpectedFindings, ExpectedLocations, HiddenTests, Task, TaskSet
from bot.evaluation.usage import UsageRecorder
from bot.evaluation.verification import (
    match_findings,
    match_locations,
    reported_findings,
    run_hidden_tests,
)
from bot.worker.local import LocalResult, run_local
from foundation.llm import chat_model
from foundation.settings import Settings
from graph import routing
from project.index import basevectors

ModelFactory = Callable[[str], BaseChatModel]
# (task, workspace) -> role -> chat model
ModelsFor = Callable[[Task, Workspace], ModelFactory]


@dataclass(frozen=True)
class Prices:
    """USD per million tokens, for cost figures; without prices cost stays unknown, never zero."""

    input_per_mtok: float
    output_per_mtok: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6


def synthetic_models(task: Task, ws: Workspace) -> ModelFactory:
    baseline = baseline_responder(task.text, ws.root)
    return lambda role: SyntheticChatModel(baseline=baseline, role=role)


def configured_models(settings: Settings) -> ModelsFor:
    return lambda task, ws: (lambda role: chat_model(settings.llm, role))


@dataclass
class RunOptions:
    settings: Settings
    work_dir: Path
    synthetic: bool
    models_for: ModelsFor | None = None  # default: synthetic or configured, by `synthetic`
    prices: Prices | None = None
    check_mode: Callable[[str], None] = field(default=routing.check_mode)
    progress: Callable[[str], None] = field(default=lambda line: None)

    def models(self) -> ModelsFor:
        if self.models_for is not None:
            return self.models_for
        return synthetic_models if self.synthetic else configured_models(self.settings)


async def run_taskset(taskset: TaskSet, taskset_path: Path, options: RunOptions) -> Report:
    """Run every task in order and return the fingerprinted report."""
    prints, inputs = fingerprint.fingerprints(options.settings, taskset, taskset_path.parent, options.synthetic)
    results = []
    for task in taskset.tasks:
        result = await run_task(task, taskset_path.parent, options)
        options.progress(f"{task.id}: {result.outcome}{' — ' + result.reason if result.reason else ''}")
        results.append(result)
    return Report(
        synthetic=options.synthetic,
        notice=SYNTHETIC_NOTICE if options.synthetic else "",
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        taskset=taskset.name,
        fingerprints=prints,
        fingerprint_inputs=inputs,
        summary=summarize(results),
        tasks=results,
    )


def _since(started: float) -> float:
    return round(time.monotonic() - started, 2)


def _base(task: Task, **fields: Any) -> TaskResult:
    return TaskResult(id=task.id, mode=task.mode, package=task.package, version=task.version, **fields)


async def run_task(task: Task, taskset_dir: Path, options: RunOptions) -> TaskResult:
    """Build the workspace, check the task is live, run the route, verify and measure."""
    started = time.monotonic()
    work = options.work_dir / task.id
    try:
        ws = build_workspace(task, work / "repo")
        before = _before(task, ws, taskset_dir)
    except (WorkspaceError, CommandError) as exc:
        return _base(task, outcome="error", reason=f"setup: {exc}", duration_s=_since(started))
    if before is not None and before["passed"]:
        return _base(task, outcome="invalid", reason="hidden tests pass before the run", before=before,
                     duration_s=_since(started))
    try:
        options.check_mode(task.mode)
    except routing.ModeUnavailable as exc:
        return _base(task, outcome="not_run", reason=str(exc), before=before, duration_s=_since(started))
    recorder = UsageRecorder()
    models = options.models()(task, ws)
    # nobody answers an evaluation's questions: a task that needs them is reported blocked at once
    questions = options.settings.questions.model_copy(update={"max_rounds": 0})
    settings = options.settings.model_copy(update={"data_dir": work / "data", "questions": questions})
    try:
        run = await run_local(settings, ws.root, task.mode, task.text, lambda r: recorder.attach(r, models(r)))
        if run.error is not None:
            raise run.error
    except Exception as exc:  # a failed run is a result of the evaluation, not a crash of it
        return _base(task, outcome="error", reason=f"run: {type(exc).__name__}: {str(exc)[:300]}", before=before,
                     duration_s=_since(started), **_usage(recorder, options.prices))
    finally:
        # the task's background vector build writes under its data dir, which the evaluation removes
        await asyncio.to_thread(basevectors.stop_under, settings.data_dir)
    if run.branch:
        take_branch(ws, run.branch)
    verification, passed = _verify(task, ws, run, taskset_dir)
    changed = changed_files(ws)
    bootstrap = task.verify.bootstrap if isinstance(task.verify, HiddenTests) else None
    quality = assess(ws, changed, bootstrap)
    return _base(
        task,
        outcome="passed" if passed else "failed",
        reason="" if passed else _why(verification),
        verification=verification,
        before=before,
        state_outcome=run.state.get("outcome"),
        state_failure=str(run.state.get("failure") or ""),
        gates=run.state.get("gates"),
        duration_s=_since(started),
        events=guard_events(run.state, settings.data_dir),
        changed_files=changed,
        syntax_errors=quality.syntax_errors,
        unresolved_symbols=quality.unresolved_symbols,
        quality_note=quality.note,
        **_usage(recorder, options.prices),
    )


def _before(task: Task, ws: Workspace, taskset_dir: Path) -> dict[str, Any] | None:
    if not isinstance(task.verify, HiddenTests):
        return None
    run = run_hidden_tests(task.verify, ws.root, taskset_dir)
    return {"passed": run.passed, "tests": run.tests, "failures": run.failures, "errors": run.errors}


def _verify(task: Task, ws: Workspace, run: LocalResult, taskset_dir: Path) -> tuple[dict[str, Any], bool]:
    spec = task.verify
    if isinstance(spec, HiddenTests):
        tests = run_hidden_tests(spec, ws.root, taskset_dir)
        detail = {"tests": tests.tests, "failures": tests.failures, "errors": tests.errors, "output": tests.detail}
        return {"kind": "phpunit", **detail}, tests.passed
    if isinstance(spec, ExpectedFindings):
        reported, source = reported_findings(run.state, run.comments)
        match = match_findings(spec, reported, source)
        return {"kind": "findings", **match.__dict__}, match.passed
    assert isinstance(spec, ExpectedLocations)
    analysis = run.state.get("analysis") or {}
    located = match_locations(spec, analysis if isinstance(analysis, dict) else {})
    return {"kind": "locations", **located.__dict__}, located.passed


def _why(verification: dict[str, Any]) -> str:
    """One line saying what the check missed, for the Markdown table."""
    if verification["kind"] == "phpunit":
        v = verification
        return f"hidden tests: {v['failures']} failures, {v['errors']} errors of {v['tests']}"
    if verification["kind"] == "findings":
        if verification["missed"]:
            return "missed findings: " + ", ".join(verification["missed"])
        return f"precision {verification['precision']:.2f}: {verification['unexpected']} unexpected findings"
    missing = [*verification["missing_files"], *verification["missing_symbols"]]
    return "not named: " + ", ".join(missing)


def _usage(recorder: UsageRecorder, prices: Prices | None) -> dict[str, Any]:
    roles = {}
    for role, u in sorted(recorder.roles.items()):
        cost = prices.cost(u.input_tokens, u.output_tokens) if prices else None
        roles[role] = RoleFigures(calls=u.calls, input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                                  total_tokens=u.total_tokens, cost_usd=cost, models=u.models)
    total_cost = sum(r.cost_usd or 0.0 for r in roles.values()) if prices else None
    return {"roles": roles, "tokens": sum(r.total_tokens for r in roles.values()), "cost_usd": total_cost,
            "tool_calls": recorder.tool_calls()}


# a tool loop that ended any other way than "finished" was stopped by the loop guard or a budget
_STOPPED = frozenset({"synthesize", "looping", "report", "budget_exhausted", "tokens_exhausted"})
_TRACE_KINDS = frozenset({"guard", "budget"})


def guard_events(state: dict[str, Any], data_dir: Path) -> list[dict[str, Any]]:
    """Loop-guard and budget events: stopped sessions, a looping coder, and the traces' guard/budget records.

    `state["sessions"]` (the runtime's `state_update`) has one entry per tool-loop session with its
    outcome; the coder's checklist can also end `looping` (the same failure twice) inside a session
    that finished; traced roles write `{"kind": "guard" | "budget", ...}` lines under `traces/`.
    """
    events: list[dict[str, Any]] = [
        {"source": "state.sessions", **s} for s in state.get("sessions", [])
        if isinstance(s, dict) and s.get("outcome") in _STOPPED
    ]
    coder = state.get("coder")
    if isinstance(coder, dict) and coder.get("end") == "looping":
        events.append({"source": "state.coder", "role": "coder", "outcome": "looping", "reason": coder.get("reason")})
    for trace in sorted(data_dir.rglob("*.jsonl")) if data_dir.is_dir() else []:
        for line in trace.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(item, dict) and item.get("kind") in _TRACE_KINDS:
                events.append({"source": trace.name, **item})
    return events
