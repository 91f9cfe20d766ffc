"""The state's dict shapes match the models they are dumps of, and typing them changed nothing stored.

`TaskState` keeps each pydantic contract as its `model_dump()`; the `*Dump` TypedDicts describe those
dicts for the type checker only. A field added to a model and not to its shape would be invisible to
mypy and dropped by `dump`, so each shape is held to its model's fields here. The checkpoint
serializer sees plain dicts before and after, so a checkpoint written before the shapes existed
loads to the same values.
"""

from __future__ import annotations

import typing

import pytest
from pydantic import BaseModel

from bot.tasks.checkpoints import safe_serializer
from foundation.forge import RepoRef
from graph import schemas, state
from graph.runtime.tasklimits import TaskLimits

SHAPES: list[tuple[type, type[BaseModel]]] = [
    (state.RepoDump, RepoRef), (state.CriterionDump, schemas.AcceptanceCriterion),
    (state.EvidenceDump, schemas.Evidence), (state.AnalysisDump, schemas.Analysis),
    (state.ScopeDump, schemas.FileScope),
    (state.ChecklistItemDump, schemas.ChecklistItem), (state.PlanDump, schemas.Plan),
    (state.ArchitectDump, schemas.ArchitectVerdict), (state.GateDump, schemas.GateResult),
    (state.FindingDump, schemas.Finding), (state.ReviewDump, schemas.Review), (state.LimitsDump, TaskLimits),
]


@pytest.mark.parametrize(("shape", "model"), SHAPES, ids=[m.__name__ for _, m in SHAPES])
def test_each_shape_has_exactly_its_models_fields(shape: type, model: type[BaseModel]) -> None:
    assert set(typing.get_type_hints(shape)) == set(model.model_fields)


def _plan() -> schemas.Plan:
    return schemas.Plan(items=[schemas.ChecklistItem(id=1, title="add the route", paths=["app/a.php"], criteria=[1])],
                scope=schemas.FileScope(writable=["app/a.php"], context_only=["README.md"]))


def test_dump_is_the_models_own_dump() -> None:
    repo = RepoRef(forge="github", project="o/r", path="o/r", clone_url="https://x/o/r.git", id=7)
    assert state.dump(repo, state.RepoDump) == repo.model_dump()
    assert state.dump(_plan(), state.PlanDump) == _plan().model_dump()


def test_a_shape_missing_a_field_would_be_seen() -> None:
    """The field check above is not vacuous: a shape that lacks one of its model's fields differs."""

    class Short(typing.TypedDict):
        writable: list[str]

    assert set(typing.get_type_hints(Short)) != set(schemas.FileScope.model_fields)


def test_a_state_written_as_plain_dicts_loads_as_the_same_values() -> None:
    """What a checkpoint stored before the state was typed (plain dumps) and what is stored now."""
    serde = safe_serializer()
    before = {"repo": RepoRef(forge="gitlab", project="1", path="g/p").model_dump(), "plan": _plan().model_dump(),
              "usage": {"tokens": 3, "cost_usd": 0.0, "unpriced": ["m"],
                        "roles": {"coder": {"calls": 1, "input": 2, "output": 1, "cost_usd": 0.0}}}}
    now = {**before, "plan": state.dump(_plan(), state.PlanDump),
           "repo": state.dump(RepoRef(forge="gitlab", project="1", path="g/p"), state.RepoDump)}
    assert serde.loads_typed(serde.dumps_typed(before)) == serde.loads_typed(serde.dumps_typed(now)) == before
