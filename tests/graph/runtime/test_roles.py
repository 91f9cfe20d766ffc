"""The session factory and the task's limits: budgets left, not full; usage summed by role; stops named."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from foundation.settings import LLMSettings, Settings
from graph.deps import Deps
from graph.runtime.accounting import Ledger, merge_usage
from graph.runtime.roles import RoleRun
from graph.runtime.tasklimits import BudgetExceeded, check, limits_of, resolve
from graph.state import TaskState
from project.repoconfig import parse_repo_config
from tests.fakes.forge import FakeForge
from tests.fakes.model_server import scripted


def _deps(tmp_path: Path, **llm: Any) -> Deps:
    settings = Settings(_env_file=None, data_dir=tmp_path, llm=LLMSettings(**llm))  # type: ignore[call-arg]
    return Deps(settings=settings, forge=FakeForge(), model_for=lambda role: scripted([]))  # type: ignore[arg-type]


def test_a_role_starts_from_what_the_task_has_left_with_prices(tmp_path: Path) -> None:
    deps = _deps(tmp_path, task_token_budget=1_000, prices={"m": (1.0, 2.0)})
    limits = resolve(deps.settings, parse_repo_config("budgets:\n  max_cost_usd: 0.5\n"))
    state = TaskState(task_id="t1", tokens=900, usage={"cost_usd": 0.2}, limits=limits.model_dump())
    for role in ("analyzer", "architect", "reviewer", "coder", "planner"):
        run = RoleRun.open(role, state, deps)
        assert run.ledger.token_budget == 100 and run.ledger.prices == {"m": (1.0, 2.0)}
        assert run.ledger.cost_budget == pytest.approx(0.3)


def test_usage_adds_up_by_role_whatever_the_order() -> None:
    first, second = Ledger(token_budget=10**6, prices={"m": (1.0, 2.0)}), Ledger(token_budget=10**6)
    first.record("analyzer", "m", 1_000, 100)
    second.record("analyzer", "free", 10, 1)
    second.record("coder", "m2", 5, 5)
    merged = merge_usage(merge_usage({}, first.snapshot()), second.snapshot())
    assert merged == merge_usage(merge_usage({}, second.snapshot()), first.snapshot())
    assert merged["roles"]["analyzer"] == {"calls": 2, "input": 1_010, "output": 101, "cost_usd": 0.0012}
    assert merged["tokens"] == 1_121 and merged["cost_usd"] == 0.0012 and merged["unpriced"] == ["free", "m2"]


def test_repository_budgets_only_lower_the_server_token_budget(tmp_path: Path) -> None:
    settings = _deps(tmp_path, task_token_budget=1_000).settings
    assert resolve(settings, parse_repo_config("budgets:\n  max_tokens: 5000\n")).max_tokens == 1_000
    assert resolve(settings, parse_repo_config("budgets:\n  max_tokens: 500\n")).max_tokens == 500
    assert limits_of(TaskState(), settings).max_review_rounds == 2


def test_each_budget_stops_with_its_name(tmp_path: Path) -> None:
    settings = _deps(tmp_path, task_token_budget=1_000).settings
    config = parse_repo_config("budgets:\n  max_minutes: 5\n  max_cost_usd: 1\n")
    limits = resolve(settings, config)
    check(TaskState(tokens=999, started_at=time.time()), limits)  # under every budget
    cases = [
        (TaskState(tokens=1_000), "token budget (1000 tokens) is used up"),
        (TaskState(usage={"cost_usd": 1.5}), "cost budget set in `.forgebot.yml` ($1.00) is used up ($1.5000 spent)"),
        (TaskState(started_at=time.time() - 301), "time budget set in `.forgebot.yml` (5 minutes) is used up"),
    ]
    check(TaskState(started_at=time.time() - 3600, waited_seconds=3500), limits)  # waiting for answers is no work
    for state, message in cases:
        with pytest.raises(BudgetExceeded) as stopped:
            check(state, limits)
        assert message in str(stopped.value)
