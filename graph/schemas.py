"""Structured results roles return; pydantic validates shape and the invariants code can check."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator


class AcceptanceCriterion(BaseModel):
    id: int = Field(ge=1)
    text: str = Field(min_length=3)


class Decomposition(BaseModel):
    """The decomposer's answer: numbered, testable criteria, or the questions blocking them."""

    criteria: list[AcceptanceCriterion] = Field(default_factory=list)
    assumptions: list[str] = Field(default_factory=list)
    questions: list[str] = Field(default_factory=list)

    @field_validator("criteria")
    @classmethod
    def _numbered(cls, value: list[AcceptanceCriterion]) -> list[AcceptanceCriterion]:
        ids = [c.id for c in value]
        if ids != list(range(1, len(ids) + 1)):
            raise ValueError("criteria must be numbered 1..n in order")
        return value


class Evidence(BaseModel):
    path: str
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    note: str = ""

    @field_validator("path")
    @classmethod
    def _relative(cls, value: str) -> str:
        if value.startswith("/") or ".." in value.split("/"):
            raise ValueError("evidence paths are relative to the repository root")
        return value


class Analysis(BaseModel):
    """The analyzer's report body."""

    summary: str
    affected_files: list[str] = Field(default_factory=list)
    symbols: list[str] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)
    impact: str = ""
    risks: list[str] = Field(default_factory=list)
    open_questions: list[str] = Field(default_factory=list)
