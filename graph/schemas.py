"""Structured results roles return; pydantic validates shape and the invariants code can check.

Decomposer → `Decomposition`; analyzer → `Analysis` (+ the `FileScope` finish_exploration
declares); planner → `Plan` of `ChecklistItem`s; architect → `ArchitectVerdict`; gates →
`GateResult`; reviewer → `Review` of `Finding`s. Conditions that need more than one object (a plan
against its scope and the disk) are checked by `plan_problems`, before any model judges the plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


def _portable(schema: dict[str, Any]) -> None:
    """Leave out of an answer's JSON schema what a strict provider refuses in the schema it is sent
    (OpenAI's strict mode takes neither `default` nor string lengths). The model still has to meet
    them: pydantic checks every answer, and a violation gets the repair turn that names it."""
    for prop in schema.get("properties", {}).values():
        for key in ("default", "minLength", "maxLength"):
            prop.pop(key, None)


class Answer(BaseModel):
    """A schema a model answers in (or a part of one): its JSON schema is one every provider takes."""

    model_config = ConfigDict(json_schema_extra=_portable)


def _relative(value: str) -> str:
    path = PurePosixPath(value)
    if not value or path.is_absolute() or ".." in path.parts or (path.parts and path.parts[0] == ".git"):
        raise ValueError(f"{value!r}: paths are relative to the repository root, without '..' or .git")
    return value


def _numbered(ids: Sequence[int], what: str) -> None:
    if list(ids) != list(range(1, len(ids) + 1)):
        raise ValueError(f"{what} must be numbered 1..n in order")


class AcceptanceCriterion(Answer):
    id: int = Field(ge=1)
    text: str = Field(min_length=3)


class Decomposition(Answer):
    """The decomposer's answer: numbered, testable criteria, or the questions blocking them."""

    criteria: list[AcceptanceCriterion] = Field(default_factory=list)
    assumptions: list[str] = Field(default_factory=list)
    questions: list[str] = Field(default_factory=list)

    @field_validator("criteria")
    @classmethod
    def _numbered(cls, value: list[AcceptanceCriterion]) -> list[AcceptanceCriterion]:
        _numbered([c.id for c in value], "criteria")
        return value


class Evidence(Answer):
    path: str
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    note: str = ""

    _path = field_validator("path")(_relative)

    @model_validator(mode="after")
    def _range(self) -> Evidence:
        if self.end_line < self.start_line:
            raise ValueError("end_line precedes start_line")
        return self


class Analysis(Answer):
    """The analyzer's report body."""

    summary: str
    affected_files: list[str] = Field(default_factory=list)
    symbols: list[str] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)
    impact: str = ""
    risks: list[str] = Field(default_factory=list)
    open_questions: list[str] = Field(default_factory=list)


class FileScope(Answer):
    """Files a change may write, and files that are context only; never both."""

    writable: list[str] = Field(default_factory=list)
    context_only: list[str] = Field(default_factory=list)

    @field_validator("writable", "context_only")
    @classmethod
    def _paths(cls, value: list[str]) -> list[str]:
        for path in value:
            _relative(path)
        if len(set(value)) != len(value):
            raise ValueError("a path is listed twice")
        return value

    @model_validator(mode="after")
    def _disjoint(self) -> FileScope:
        both = sorted(set(self.writable) & set(self.context_only))
        if both:
            raise ValueError(f"writable and context-only at once: {', '.join(both)}")
        return self


class ChecklistItem(Answer):
    id: int = Field(ge=1)
    title: str = Field(min_length=3)
    kind: Literal["change", "report"] = "change"
    criteria: list[int] = Field(default_factory=list)
    paths: list[str] = Field(default_factory=list)
    status: Literal["open", "done", "dropped"] = "open"
    note: str = ""

    @field_validator("paths")
    @classmethod
    def _paths(cls, value: list[str]) -> list[str]:
        return [_relative(p) for p in value]

    @model_validator(mode="after")
    def _change_writes(self) -> ChecklistItem:
        if self.kind == "change" and not self.paths:
            raise ValueError(f"item {self.id} changes code but names no file")
        return self


class Plan(Answer):
    """The planner's checklist and the write scope it needs."""

    items: list[ChecklistItem] = Field(min_length=1)
    scope: FileScope

    @field_validator("items")
    @classmethod
    def _ids(cls, value: list[ChecklistItem]) -> list[ChecklistItem]:
        _numbered([i.id for i in value], "checklist items")
        return value

    @model_validator(mode="after")
    def _within_scope(self) -> Plan:
        outside = sorted({p for i in self.items if i.kind == "change" for p in i.paths} - set(self.scope.writable))
        if outside:
            raise ValueError(f"items write outside the writable scope: {', '.join(outside)}")
        return self

    @property
    def open_items(self) -> list[ChecklistItem]:
        return [i for i in self.items if i.status == "open"]


def plan_problems(plan: Plan | None, criteria: Sequence[AcceptanceCriterion], root: Path,
                  new_files: Sequence[str] = ()) -> list[str]:
    """What code can reject before the architect: no plan, uncovered criteria, missing files."""
    if plan is None:
        return ["no plan although there are acceptance criteria"] if criteria else []
    problems: list[str] = []
    covered = {c for item in plan.items for c in item.criteria}
    missing = [c.id for c in criteria if c.id not in covered]
    if missing:
        problems.append(f"criteria not covered by any item: {', '.join(map(str, missing))}")
    unknown = sorted(covered - {c.id for c in criteria})
    if unknown:
        problems.append(f"items cite criteria that do not exist: {', '.join(map(str, unknown))}")
    for path in plan.scope.writable:
        if path not in new_files and not (root / path).is_file():
            problems.append(f"{path} is in the write scope but does not exist (and is not declared new)")
    return problems


class ArchitectVerdict(Answer):
    approved: bool
    feedback: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _rejection_says_why(self) -> ArchitectVerdict:
        if not self.approved and not self.feedback:
            raise ValueError("a rejected plan needs feedback the planner can act on")
        return self


GateStatus = Literal["passed", "failed", "not_run", "disabled"]


class GateResult(BaseModel):
    """One mandatory check's outcome; `not_enforced` names the sandbox protections it ran (or would
    have run) without, with the reason, for the status comment and the change description."""

    name: str
    status: GateStatus
    mandatory: bool = True
    detail: str = ""
    not_enforced: dict[str, str] = Field(default_factory=dict)


Severity = Literal["blocker", "major", "minor", "info"]
SEVERITY_RANK: dict[str, int] = {"blocker": 3, "major": 2, "minor": 1, "info": 0}


class Finding(Answer):
    """One review finding: what is wrong, where (`path`, `line`..`end_line` on `side`), why, and a fix.

    `criteria` names the acceptance criteria it concerns; `concern` names anything else (a security,
    architecture or test concern). `side` "old" anchors on a removed line.
    """

    severity: Severity
    message: str = Field(min_length=3)
    path: str | None = None
    line: int | None = Field(default=None, ge=1)
    criteria: list[int] = Field(default_factory=list)
    end_line: int | None = Field(default=None, ge=1)
    side: Literal["new", "old"] = "new"
    concern: str = ""
    evidence: str = ""
    suggestion: str = ""

    @model_validator(mode="after")
    def _anchored(self) -> Finding:
        if self.path is not None:
            _relative(self.path)
        if self.line is not None and self.path is None:
            raise ValueError("a line needs a path")
        if self.end_line is not None and (self.line is None or self.end_line < self.line):
            raise ValueError("end_line needs a line at or before it")
        return self


class Review(Answer):
    """The reviewer's result; an incomplete inspection can never be an approval."""

    verdict: Literal["approve", "request_changes", "incomplete"]
    summary: str
    findings: list[Finding] = Field(default_factory=list)
    verified_criteria: list[int] = Field(default_factory=list)
    unverified_criteria: list[int] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> Review:
        if self.verdict == "approve" and self.unverified_criteria:
            raise ValueError("cannot approve with unverified criteria")
        if self.verdict == "approve" and any(f.severity in ("blocker", "major") for f in self.findings):
            raise ValueError("cannot approve with blocker or major findings")
        if self.verdict == "incomplete" and not self.unverified_criteria:
            raise ValueError("an incomplete review lists the criteria it could not verify")
        return self


BLOCKING: frozenset[str] = frozenset({"blocker", "major"})


def settle_verdict(review: Review, criteria_ids: Sequence[int]) -> Review:
    """The verdict the review's own content supports, whatever the model's word (checked by code).

    Changes are requested only for a blocking finding or a finding on a criterion; an approval needs
    every criterion verified. Otherwise the verdict follows the content: criteria not shown verified
    make it `incomplete`, and a request for changes without a reason to block becomes an approval
    that keeps its (non-blocking) findings.
    """
    ids = set(criteria_ids)
    verified = [i for i in review.verified_criteria if i in ids]
    unverified = sorted((set(review.unverified_criteria) & ids) | (ids - set(verified)))
    blocking = any(f.severity in BLOCKING or f.criteria for f in review.findings)
    verdict = review.verdict
    if verdict == "request_changes" and not blocking:
        verdict = "incomplete" if unverified else "approve"
    elif verdict == "approve" and unverified:
        verdict = "request_changes" if blocking else "incomplete"
    if verdict == review.verdict:
        return review
    said, says = review.verdict.replace("_", " "), verdict.replace("_", " ")
    note = f"(forgebot: the answer said {said}; its findings and criteria say {says}.)"
    return Review(verdict=verdict, summary=f"{review.summary}\n\n{note}", findings=review.findings,
                  verified_criteria=[i for i in verified if i not in unverified],
                  unverified_criteria=unverified if verdict == "incomplete" else [])


def settle_answer(data: Mapping[str, Any], criteria_ids: Sequence[int]) -> Review:
    """A review answer that still broke a rule after its repair turn, as the verdict its content supports.

    Only what validates is kept: findings that do not are left out (and counted), criteria outside
    the review's are ignored. An answer that called itself incomplete verifies nothing; any criterion
    not shown verified makes the review incomplete unless a blocking finding requests changes, and
    only a review with every criterion verified and nothing blocking approves.
    """
    findings: list[Finding] = []
    dropped = 0
    for item in _items(data.get("findings")):
        try:
            findings.append(Finding.model_validate(item))
        except ValueError:
            dropped += 1
    ids = set(criteria_ids)
    said = str(data.get("verdict")) if data.get("verdict") in ("approve", "request_changes", "incomplete") else ""
    verified = set() if said in ("incomplete", "") else set(_ids_in(data.get("verified_criteria"))) & ids
    unverified = sorted((ids - verified) | (set(_ids_in(data.get("unverified_criteria"))) & ids))
    blocking = any(f.severity in BLOCKING or f.criteria for f in findings)
    verdict: Literal["approve", "request_changes", "incomplete"]
    if unverified:
        verdict = "request_changes" if blocking and said != "incomplete" else "incomplete"
    else:
        verdict = "request_changes" if blocking else "approve"
    summary = data.get("summary") if isinstance(data.get("summary"), str) and data.get("summary") else (
        "The model's answer gave no summary.")
    left_out = f" {dropped} findings that did not validate are left out." if dropped else ""
    note = (f"(forgebot: the model's answer said {said.replace('_', ' ') or 'no verdict'} but broke a rule code "
            f"checks even after a repair turn; its findings and criteria say {verdict.replace('_', ' ')}.{left_out})")
    return Review(verdict=verdict, summary=f"{summary}\n\n{note}", findings=findings,
                  verified_criteria=sorted(i for i in verified if i not in unverified),
                  unverified_criteria=unverified if verdict == "incomplete" else [])


def settle_decomposition(data: Mapping[str, Any]) -> Decomposition:
    """A decomposition whose only faults are code's to fix: criteria renumbered in order, entries that
    do not validate (no text, too short) left out, and lists of text kept as text."""
    texts = [c.get("text") for c in _items(data.get("criteria")) if isinstance(c, dict)]
    kept = [t.strip() for t in texts if isinstance(t, str) and len(t.strip()) >= 3]
    return Decomposition(criteria=[AcceptanceCriterion(id=i, text=t) for i, t in enumerate(kept, 1)],
                         assumptions=_texts(data.get("assumptions")), questions=_texts(data.get("questions")))


def settle_analysis(data: Mapping[str, Any]) -> Analysis:
    """An analysis with what validates: citations that do not (a path outside the repository, lines out
    of order) are left out like the citations the checkout does not have; no summary, no analysis."""
    summary = data.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise ValueError("the analysis has no summary")
    evidence = []
    for item in _items(data.get("evidence")):
        try:
            evidence.append(Evidence.model_validate(item))
        except ValueError:
            continue
    impact = data.get("impact")
    return Analysis(summary=summary, affected_files=_texts(data.get("affected_files")),
                    symbols=_texts(data.get("symbols")), evidence=evidence,
                    impact=impact if isinstance(impact, str) else "", risks=_texts(data.get("risks")),
                    open_questions=_texts(data.get("open_questions")))


def settle_architect(data: Mapping[str, Any]) -> ArchitectVerdict:
    """Only an explicit approval approves; a rejection that gave no reason says so as its feedback."""
    feedback = _texts(data.get("feedback"))
    approved = data.get("approved") is True
    if not approved and not feedback:
        feedback = ["the architect rejected the plan without giving a reason; check each item's files and criteria"]
    return ArchitectVerdict(approved=approved, feedback=[] if approved else feedback)


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _texts(value: Any) -> list[str]:
    return [v for v in _items(value) if isinstance(v, str) and v.strip()]


def _ids_in(value: Any) -> list[int]:
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, int) and not isinstance(v, bool)]


def final_verdict(review: Review, gates: Sequence[GateResult]) -> str:
    """An approval never replaces a failed mandatory gate."""
    failed = [g.name for g in gates if g.mandatory and g.status == "failed"]
    if review.verdict == "approve" and failed:
        return "request_changes"
    return review.verdict
