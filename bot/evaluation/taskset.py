"""Task sets: the pydantic model of an evaluation task file (TOML or YAML) and its loader.

A task names the Debian package (and the version it was written against) whose files under
`/usr/share/php` become the task's workspace, the setup change that makes the task, the text the
bot receives, and how the outcome is verified. Unknown keys are errors: a typo in a task set must
not silently drop a check.
"""

from __future__ import annotations

import tomllib
from pathlib import Path, PurePosixPath
from typing import Annotated, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

Mode = Literal["analyze", "implement", "review"]


class TaskSetError(ValueError):
    """The task set file is missing, unparsable or invalid."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _relative(value: str) -> str:
    path = PurePosixPath(value)
    if not value or path.is_absolute() or ".." in path.parts:
        raise ValueError(f"{value!r} must be a relative path without '..'")
    return value


RelPath = Annotated[str, AfterValidator(_relative)]


class Replace(_Strict):
    """Replace text that occurs exactly once in `file` (seeds a defect or a gap)."""

    kind: Literal["replace"]
    file: RelPath
    old: str = Field(min_length=1)
    new: str



class RemoveBody(_Strict):
    """Replace the body of `method` in `file` with a `LogicException` throw."""

    kind: Literal["remove_body"]
    file: RelPath
    method: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*$")



Edit = Annotated[Replace | RemoveBody, Field(discriminator="kind")]


class HiddenTests(_Strict):
    """implement: PHPUnit test files (relative to the task set's directory) run against the workspace."""

    kind: Literal["phpunit"]
    files: tuple[RelPath, ...] = Field(min_length=1)
    bootstrap: RelPath  # autoloader inside the workspace, e.g. "Doctrine/Inflector/autoload.php"
    timeout: float = 60.0



class ExpectedFinding(_Strict):
    path: RelPath
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)


    @model_validator(mode="after")
    def _ordered(self) -> ExpectedFinding:
        if self.end_line < self.start_line:
            raise ValueError("end_line is before start_line")
        return self


class ExpectedFindings(_Strict):
    """review: every expected finding must be reported on its file within its lines ± tolerance (recall),
    and at least `min_precision` of the reported findings must be expected ones (precision), so a
    reviewer that flags every hunk does not pass."""

    kind: Literal["findings"]
    findings: tuple[ExpectedFinding, ...] = Field(min_length=1)
    tolerance: int = Field(default=3, ge=0)
    min_precision: float = Field(default=0.5, ge=0.0, le=1.0)


class ExpectedLocations(_Strict):
    """analyze: the report must name these files and symbols (`Class::method` or `Class`)."""

    kind: Literal["locations"]
    files: tuple[RelPath, ...] = ()
    symbols: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _something(self) -> ExpectedLocations:
        if not self.files and not self.symbols:
            raise ValueError("expect at least one file or symbol")
        return self


Verification = Annotated[HiddenTests | ExpectedFindings | ExpectedLocations, Field(discriminator="kind")]
_VERIFICATION_FOR: dict[str, tuple[type[BaseModel], str]] = {
    "implement": (HiddenTests, "phpunit"),
    "review": (ExpectedFindings, "findings"),
    "analyze": (ExpectedLocations, "locations"),
}


class Task(_Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")
    mode: Mode
    package: str = Field(pattern=r"^php-[a-z0-9.+-]+$")
    version: str = Field(min_length=1)
    text: str = Field(min_length=10)
    setup: tuple[Edit, ...] = ()
    verify: Verification

    @model_validator(mode="after")
    def _consistent(self) -> Task:
        expected, kind = _VERIFICATION_FOR[self.mode]
        if not isinstance(self.verify, expected):
            raise ValueError(f"mode {self.mode} is verified by kind {kind!r}")
        if self.mode in ("implement", "review") and not self.setup:
            raise ValueError(f"a {self.mode} task needs a setup change")
        return self


class TaskSet(_Strict):
    name: str = Field(min_length=1)
    description: str = ""
    tasks: tuple[Task, ...] = Field(min_length=1)

    @field_validator("tasks")
    @classmethod
    def _unique(cls, value: tuple[Task, ...]) -> tuple[Task, ...]:
        ids = [t.id for t in value]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"duplicate task ids: {', '.join(duplicates)}")
        return value


def load_taskset(path: Path) -> TaskSet:
    """Read and validate a `.toml`, `.yaml` or `.yml` task set; hidden test files must exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskSetError(f"cannot read task set {path}: {exc.strerror}") from exc
    if path.suffix not in (".toml", ".yaml", ".yml"):
        raise TaskSetError(f"{path}: task sets are .toml, .yaml or .yml files")
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise TaskSetError(f"{path}: not valid {path.suffix.lstrip('.')}: {exc}") from exc
    try:
        taskset = TaskSet.model_validate(data)
    except ValidationError as exc:
        raise TaskSetError(f"{path}: {exc}") from exc
    for task in taskset.tasks:
        if isinstance(task.verify, HiddenTests):
            missing = [f for f in task.verify.files if not (path.parent / f).is_file()]
            if missing:
                raise TaskSetError(f"{path}: task {task.id}: hidden test files not found: {', '.join(missing)}")
    return taskset
