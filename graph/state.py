"""TaskState: what a task's graph run carries between nodes (ids and data, never clients).

Every value is typed. A pydantic contract is kept in state as its dump (`model_dump()`), a plain
dict, and the `*Dump` TypedDicts below give those dicts their shape, field for field (a test holds
each to its model). Keeping dicts, not models, is what the checkpoint serializer stores and what
checkpoints written before these types existed hold, so they load unchanged.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, TypeAdapter
from typing_extensions import TypedDict

from foundation.forge.models import ForgeKind
from graph.runtime.accounting import UsageRecord, merge_usage
from graph.schemas import GateStatus, Severity

V = TypeVar("V")
D = TypeVar("D")


def merge_notes(old: dict[str, list[str]] | None, new: dict[str, list[str]] | None) -> dict[str, list[str]]:
    """Every role's notes kept, each once, in the order they were written."""
    merged = {kind: list(texts) for kind, texts in (old or {}).items()}
    for kind, texts in (new or {}).items():
        merged[kind] = list(dict.fromkeys([*merged.get(kind, []), *texts]))
    return merged


def merge_keys(old: Mapping[str, V] | None, new: Mapping[str, V] | None) -> dict[str, V]:
    """Per-key records (rounds by kind, context tokens by role): a node writes only its own keys."""
    return {**(old or {}), **(new or {})}


class RepoDump(TypedDict):
    """`foundation.forge.RepoRef`."""

    forge: ForgeKind
    project: str
    path: str
    default_branch: str
    clone_url: str
    web_url: str
    id: int
    visibility: str


class CriterionDump(TypedDict):
    """`graph.schemas.AcceptanceCriterion`."""

    id: int
    text: str


class EvidenceDump(TypedDict):
    """`graph.schemas.Evidence`."""

    path: str
    start_line: int
    end_line: int
    note: str


class AnalysisDump(TypedDict):
    """`graph.schemas.Analysis`."""

    summary: str
    affected_files: list[str]
    symbols: list[str]
    evidence: list[EvidenceDump]
    impact: str
    risks: list[str]
    open_questions: list[str]


class ScopeDump(TypedDict):
    """`graph.schemas.FileScope`."""

    writable: list[str]
    context_only: list[str]


class ChecklistItemDump(TypedDict):
    """`graph.schemas.ChecklistItem`."""

    id: int
    title: str
    kind: Literal["change", "report"]
    criteria: list[int]
    paths: list[str]
    status: Literal["open", "done", "dropped"]
    note: str


class PlanDump(TypedDict):
    """`graph.schemas.Plan`."""

    items: list[ChecklistItemDump]
    scope: ScopeDump


class ArchitectDump(TypedDict):
    """`graph.schemas.ArchitectVerdict`."""

    approved: bool
    feedback: list[str]


class GateDump(TypedDict):
    """`graph.schemas.GateResult`."""

    name: str
    status: GateStatus
    mandatory: bool
    detail: str
    not_enforced: dict[str, str]


class FindingDump(TypedDict):
    """`graph.schemas.Finding`."""

    severity: Severity
    message: str
    path: str | None
    line: int | None
    criteria: list[int]
    end_line: int | None
    side: Literal["new", "old"]
    concern: str
    evidence: str
    suggestion: str


class ReviewDump(TypedDict):
    """`graph.schemas.Review`."""

    verdict: Literal["approve", "request_changes", "incomplete"]
    summary: str
    findings: list[FindingDump]
    verified_criteria: list[int]
    unverified_criteria: list[int]


class LimitsDump(TypedDict):
    """`graph.runtime.tasklimits.TaskLimits`."""

    max_tokens: int
    max_cost_usd: float | None
    max_minutes: int | None
    max_review_rounds: int
    configured: list[str]


class Decision(TypedDict, total=False):
    """A decision the coder recorded with its reason: an item already done, a commit refused, a blocker."""

    kind: str
    item: int
    path: str
    title: str
    reason: str
    evidence: str
    detail: str


class SessionRecord(TypedDict):
    """One tool-loop session: its role, how it ended, its calls and why."""

    role: str
    outcome: str
    calls: int
    reason: str


class ReviewLimits(TypedDict):
    """The review's diff limits (settings, then `.forgebot.yml`): lines per file, tokens for the diff."""

    max_file_lines: int
    budget_tokens: int


class ReviewNoise(TypedDict):
    """Which findings are published: the lowest severity shown and how many at most."""

    severity_threshold: str
    max_findings: int


class ReviewScope(TypedDict):
    """What a review covered: the revisions, the files reviewed and those skipped ([path, reason])."""

    base: str
    head: str
    files: list[str]
    skipped: list[list[str]]


class Comment(TypedDict):
    """A member's comment on the issue, as the task saw it at its start."""

    author: str
    body: str


class Answer(TypedDict):
    """A reply to the task's questions: who answered, what, and the questions it answers."""

    author: str
    body: str
    questions: list[str]


class ContextRecord(TypedDict):
    """What the context engine assembled for a role: tokens used, its budget, by kind, parts left out."""

    tokens: int
    budget: int
    by_kind: dict[str, int]
    omitted: int


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


class ProfileNote(TypedDict):
    """The repository's profile as the task chose it: "" when none matched, why, and the line users read."""

    name: str
    reason: str
    detected: bool
    line: str


class ChangeRecord(TypedDict):
    """The change the implement route opened."""

    number: int
    branch: str


_ADAPTERS: dict[object, TypeAdapter[Any]] = {}  # one per shape: building one reads the whole TypedDict


def dump(model: BaseModel, shape: type[D]) -> D:
    """`model.model_dump()` as its state shape: the same plain dict, read through the TypedDict.

    The dict is checked against the shape on the way (a field the shape lacks would be dropped, so
    a test holds every shape to its model's fields).
    """
    adapter = _ADAPTERS.get(shape) or _ADAPTERS.setdefault(shape, TypeAdapter(shape))
    checked: D = adapter.validate_python(model.model_dump())
    return checked


class TaskState(TypedDict, total=False):
    task_id: str
    mode: str
    forge: str
    repo: RepoDump
    number: int
    title: str
    body: str
    workspace: str  # absolute path of the task's checkout ("" when the route needs none)
    criteria: list[CriterionDump]
    assumptions: list[str]
    questions: list[str]
    # why there are no criteria: "author" (questions the author must answer) or "model" (it gave none)
    blocked_by: str
    blocked_reason: str  # with blocked_by "model": what its answer lacked
    criteria_source: str  # "issue" (an explicit list, taken as written) or "model"
    analysis: AnalysisDump
    report_comment_id: int
    outcome: str  # "reported" | "blocked"
    started_at: float  # epoch seconds when the task started
    waited_seconds: Annotated[float, operator.add]  # time paused for answers: not working time (budgets)
    tokens: Annotated[int, operator.add]  # total tokens reported by the models
    models: Annotated[list[str], operator.add]  # model names used, in call order
    configured_model: str  # the model the task is set up with: footers written before any call name it
    # runtime (graph/runtime): memory handed between nodes, budgets, accounting
    scope: ScopeDump  # writable vs context-only paths
    # the scratchpads of analyzer, architect and reviewer by kind (fact, path, question), merged: a later
    # role's session must not erase what the investigation found (the context engine reads them again)
    notes: Annotated[dict[str, list[str]], merge_notes]
    read_ranges: list[str]  # "path:start-end" the investigation read
    plan: PlanDump  # checklist items with status
    plan_decisions: Annotated[list[Decision], operator.add]  # update_plan / blockers, with reasons
    architect: ArchitectDump
    gates: list[GateDump]  # in gate order
    review: ReviewDump
    sessions: Annotated[list[SessionRecord], operator.add]  # per tool-loop session
    usage: Annotated[UsageRecord, merge_usage]  # Ledger snapshots summed: tokens and cost per role and in all
    limits: LimitsDump  # the server's budgets with `.forgebot.yml`'s applied (graph/runtime/tasklimits.py)
    # implement route
    base: str  # the commit the task's branch started from
    branch: str  # <prefix><issue>-<slug>: `forgebot/` or the operator's `workspace.branch_prefix`
    new_files: list[str]  # files the plan creates (in the write scope without existing yet)
    plan_feedback: list[str]  # code's plan problems or the architect's feedback, for planner_refine
    rounds: Annotated[dict[str, int], merge_keys]  # bounded loops used so far: architect, amend, restart, review
    coder: CoderRecord  # the last coder session
    index_sync: IndexSync  # semantic_sync's result
    review_problems: list[str]  # failed gates and blocking findings of the last fix round (progress check)
    plan_warnings: list[str]  # plan-target checks that only warn (graph/plantargets.py), for the architect
    # blocking findings of each review that led to a fix round, one list per round
    review_findings: Annotated[list[list[FindingDump]], operator.add]
    fix_context: str  # failed gates and findings the next coder round must address
    change: ChangeRecord  # the opened change
    failure: str  # why the route stopped without a change (reported on the issue)
    # review (graph/nodes/reviewer.py, review_intake.py, review_publisher.py)
    review_base: str  # revision the reviewer diffs HEAD of `workspace` against
    review_limits: ReviewLimits
    review_noise: ReviewNoise  # settings, then .forgebot.yml
    linted: list[tuple[str, int]]  # (path, line) a profile linter reported: review findings there are dropped
    review_open: list[str]  # findings still open from earlier rounds, one line each, for the prompt
    review_scope: ReviewScope
    verdict: str  # final_verdict(review, gates)
    # investigation and need_info
    index: str  # the code index of `workspace` (a task copy, or the review head's base index), "" when none
    database: str  # the connection `.forgebot.yml` names (a key of Settings.databases), "" when none
    profile: ProfileNote  # the repository's profile and why (`project.profiles.detect`)
    discussion: list[Comment]  # issue comments by members, snapshotted at the task's start
    withheld: list[str]  # what of the issue text was not used, and why (never the text)
    answers: Annotated[list[Answer], operator.add]  # replies to need_info
    question_rounds: Annotated[int, operator.add]  # how many times the task asked and waited
    may_ask: bool  # the decomposer's questions may pause the task (rounds left, someone to answer)
    questions_comment_id: int  # the comment that asked the last questions
    context_tokens: Annotated[dict[str, ContextRecord], merge_keys]  # by role
    # status comment (graph/status.py)
    status_comment_id: int  # the task's status comment, 0 or absent when none was posted
    status_phase: str  # the phase the status comment shows, so each phase change edits it once
    console_url: str  # the task's signed console page (bot/console/links.py), "" when the console is off
