"""TaskState: what a task's graph run carries between nodes (ids and data, never clients)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal

from typing_extensions import TypedDict

from graph.runtime.accounting import merge_usage


def merge_notes(old: dict[str, list[str]] | None, new: dict[str, list[str]] | None) -> dict[str, list[str]]:
    """Every role's notes kept, each once, in the order they were written."""
    merged = {kind: list(texts) for kind, texts in (old or {}).items()}
    for kind, texts in (new or {}).items():
        merged[kind] = list(dict.fromkeys([*merged.get(kind, []), *texts]))
    return merged


def merge_keys(old: dict[str, Any] | None, new: dict[str, Any] | None) -> dict[str, Any]:
    """Per-key records (rounds by kind, context tokens by role): a node writes only its own keys."""
    return {**(old or {}), **(new or {})}


class CoderRecord(TypedDict):
    """The last coder session: how it ended (routing reads `end`), why, and what it committed."""

    end: str  # graph.coder.checklist.SessionEnd
    reason: str
    commits: list[str]
    reports: dict[str, str]  # checklist item id -> the coder's report


class IndexSync(TypedDict):
    """semantic_sync's result: the task index kept up with the coder's edits, or why not."""

    status: Literal["ok", "degraded", "skipped"]
    detail: str


class ChangeRecord(TypedDict):
    """The change the implement route opened."""

    number: int
    branch: str


class TaskState(TypedDict, total=False):
    task_id: str
    mode: str
    forge: str
    repo: dict[str, Any]  # RepoRef.model_dump()
    number: int
    title: str
    body: str
    workspace: str  # absolute path of the task's checkout ("" when the route needs none)
    criteria: list[dict[str, Any]]  # AcceptanceCriterion dumps
    assumptions: list[str]
    questions: list[str]
    # why there are no criteria: "author" (questions the author must answer) or "model" (it gave none)
    blocked_by: str
    blocked_reason: str  # with blocked_by "model": what its answer lacked
    criteria_source: str  # "issue" (an explicit list, taken as written) or "model"
    analysis: dict[str, Any]  # Analysis dump
    report_comment_id: int
    outcome: str  # "reported" | "blocked"
    started_at: float  # epoch seconds when the task started
    waited_seconds: Annotated[float, operator.add]  # time paused for answers: not working time (budgets)
    tokens: Annotated[int, operator.add]  # total tokens reported by the models
    models: Annotated[list[str], operator.add]  # model names used, in call order
    configured_model: str  # the model the task is set up with: footers written before any call name it
    # runtime (graph/runtime): memory handed between nodes, budgets, accounting
    scope: dict[str, Any]  # FileScope dump: writable vs context-only paths
    # the scratchpads of analyzer, architect and reviewer by kind (fact, path, question), merged: a later
    # role's session must not erase what the investigation found (the context engine reads them again)
    notes: Annotated[dict[str, list[str]], merge_notes]
    read_ranges: list[str]  # "path:start-end" the investigation read
    plan: dict[str, Any]  # Plan dump (checklist items with status)
    plan_decisions: Annotated[list[dict[str, Any]], operator.add]  # update_plan / blockers, with reasons
    architect: dict[str, Any]  # ArchitectVerdict dump
    gates: list[dict[str, Any]]  # GateResult dumps, in gate order
    review: dict[str, Any]  # Review dump
    sessions: Annotated[list[dict[str, Any]], operator.add]  # per tool-loop session: role, outcome, calls, reason
    usage: Annotated[dict[str, Any], merge_usage]  # Ledger snapshots summed: tokens and cost per role and in all
    limits: dict[str, Any]  # TaskLimits dump: the server's budgets with `.forgebot.yml`'s applied (graph/limits.py)
    # implement route (issue 9)
    base: str  # the commit the task's branch started from
    branch: str  # forgebot/<issue>-<slug>
    new_files: list[str]  # files the plan creates (in the write scope without existing yet)
    plan_feedback: list[str]  # code's plan problems or the architect's feedback, for planner_refine
    rounds: Annotated[dict[str, int], merge_keys]  # bounded loops used so far: architect, amend, restart, review
    coder: CoderRecord  # the last coder session
    index_sync: IndexSync  # semantic_sync's result
    review_problems: list[str]  # failed gates and blocking findings of the last fix round (progress check)
    plan_warnings: list[str]  # plan-target checks that only warn (graph/plantargets.py), for the architect
    # blocking findings of each review that led to a fix round, one list per round
    review_findings: Annotated[list[list[dict[str, Any]]], operator.add]
    fix_context: str  # failed gates and findings the next coder round must address
    change: ChangeRecord  # the opened change
    failure: str  # why the route stopped without a change (reported on the issue)
    # review (graph/nodes/reviewer.py, review_intake.py, review_publisher.py)
    review_base: str  # revision the reviewer diffs HEAD of `workspace` against
    review_limits: dict[str, Any]  # DiffLimits fields
    review_noise: dict[str, Any]  # severity_threshold, max_findings (settings, then .forgebot.yml)
    linted: list[tuple[str, int]]  # (path, line) a profile linter reported: review findings there are dropped
    review_open: list[str]  # findings still open from earlier rounds, one line each, for the prompt
    review_scope: dict[str, Any]  # base, head, reviewed files, skipped [path, reason]
    verdict: str  # final_verdict(review, gates)
    # investigation and need_info (issue 8)
    index: str  # the code index of `workspace` (a task copy, or the review head's base index), "" when none
    database: str  # the connection `.forgebot.yml` names (a key of Settings.databases), "" when none
    discussion: list[dict[str, Any]]  # issue comments by members, snapshotted at the task's start
    withheld: list[str]  # what of the issue text was not used, and why (never the text)
    answers: Annotated[list[dict[str, Any]], operator.add]  # replies to need_info: author, body, questions
    question_rounds: Annotated[int, operator.add]  # how many times the task asked and waited
    may_ask: bool  # the decomposer's questions may pause the task (rounds left, someone to answer)
    questions_comment_id: int  # the comment that asked the last questions
    context_tokens: Annotated[dict[str, Any], merge_keys]  # per role: tokens the context engine assembled, its budget
    # status comment (graph/status.py)
    status_comment_id: int  # the task's status comment, 0 or absent when none was posted
    status_phase: str  # the phase the status comment shows, so each phase change edits it once
    console_url: str  # the task's signed console page (bot/console/links.py), "" when the console is off
