"""A task's budgets: the server's defaults with `.forgebot.yml`'s `budgets` applied, and their check.

`.forgebot.yml` may only lower what the server allows for tokens (a repository cannot grant itself
more than the operator's `FORGEBOT_LLM__TASK_TOKEN_BUDGET`); cost and minutes exist only there;
review rounds replace the route's default. The limits are resolved once, at the first node that has
the task's checkout, from the default branch (never the change's own branch: a change must not
lift its own budget), kept in the state, and checked before every node by `with_limits` (time paused
for answers is not counted against `max_minutes`). A node that would start past a budget raises
`BudgetExceeded` instead; the job turns it into one comment naming the budget. Inside a node, the
role's ledger is bounded by what is left, so a tool loop stops at the budget too (`graph.runtime.roles`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from langgraph.errors import GraphBubbleUp
from langgraph.runtime import Runtime
from pydantic import BaseModel

from foundation.gitrunner import GitError
from foundation.settings import Settings
from graph.deps import Deps
from graph.runtime.accounting import Ledger, merge_usage
from graph.runtime.boundaries import NodeFn
from graph.state import TaskState
from project.repoconfig import RepoConfig, RepoConfigError, load_repo_config

log = logging.getLogger(__name__)

DEFAULT_REVIEW_ROUNDS = 2  # fix rounds after gates or review when `.forgebot.yml` says nothing


class TaskLimits(BaseModel):
    """What one task may spend; `configured` names the budgets `.forgebot.yml` set."""

    max_tokens: int
    max_cost_usd: float | None = None
    max_minutes: int | None = None
    max_review_rounds: int = DEFAULT_REVIEW_ROUNDS
    configured: list[str] = []


class BudgetExceeded(RuntimeError):
    """A task reached one of its budgets; `str(error)` is the sentence the task's comment carries."""

    def __init__(self, budget: str, limit: str, used: str, configured: bool) -> None:
        self.budget, self.limit, self.used = budget, limit, used
        self.spent: TaskState = {}  # the task's tokens, models and usage when it stopped (for the footer)
        where = " set in `.forgebot.yml`" if configured else ""
        super().__init__(f"the task's {budget} budget{where} ({limit}) is used up ({used} spent)")


def resolve(settings: Settings, config: RepoConfig) -> TaskLimits:
    budgets = config.budgets
    server = settings.llm.task_token_budget
    configured = [name for name, value in budgets.model_dump().items() if value is not None]
    return TaskLimits(
        max_tokens=min(server, budgets.max_tokens) if budgets.max_tokens else server,
        max_cost_usd=budgets.max_cost_usd,
        max_minutes=budgets.max_minutes,
        max_review_rounds=DEFAULT_REVIEW_ROUNDS if budgets.max_review_rounds is None else budgets.max_review_rounds,
        configured=configured,
    )


def limits_of(state: TaskState, settings: Settings) -> TaskLimits:
    """The limits resolved for this task, or the server's defaults before they are."""
    if state.get("limits"):
        return TaskLimits.model_validate(state["limits"])
    return resolve(settings, RepoConfig())


def config_revision(state: Mapping[str, Any]) -> str:
    """Where `.forgebot.yml` is read: the implement task's base, else the default branch."""
    if state.get("base"):
        return str(state["base"])
    if state.get("mode") == "review":  # the checkout is the change's branch: read the target's config
        return f"origin/{state['repo'].get('default_branch') or 'main'}"
    return "HEAD"  # analyze: a read-only checkout of the default branch


def read_limits(state: Mapping[str, Any], settings: Settings) -> TaskLimits | None:
    """Resolve from the task's checkout; None while there is none. An unreadable file keeps the defaults
    (the routes report an invalid `.forgebot.yml` themselves)."""
    root = state.get("workspace") or ""
    if not root or not Path(root).is_dir():
        return None
    try:
        config = load_repo_config(Path(root), config_revision(state))
    except (RepoConfigError, GitError, OSError) as exc:  # not a git checkout (`forgebot run` on a directory)
        log.info("task %s: budgets from the server defaults (%s)", state.get("task_id"), str(exc).splitlines()[0])
        config = RepoConfig()
    return resolve(settings, config)


def spent_of(state: TaskState) -> TaskState:
    """What the task had spent when a budget stopped it: the footer's tokens, models, cost and time."""
    spent: TaskState = {}
    if "tokens" in state:
        spent["tokens"] = state["tokens"]
    if "models" in state:
        spent["models"] = state["models"]
    if "usage" in state:
        spent["usage"] = state["usage"]
    if "started_at" in state:
        spent["started_at"] = state["started_at"]
    return spent


def spent_with(state: TaskState, ledgers: Sequence[Ledger]) -> TaskState:
    """What the task had spent when a node failed: the spend of the state it started from (the last
    checkpoint's) and what its roles' ledgers counted since, which no checkpoint holds."""
    spent = spent_of(state)
    for ledger in ledgers:
        spent["tokens"] = int(spent.get("tokens", 0)) + ledger.tokens
        spent["models"] = [*spent.get("models", []), *ledger.models]
        spent["usage"] = merge_usage(spent.get("usage"), ledger.snapshot())
    return spent


def check(state: TaskState, limits: TaskLimits, now: float | None = None) -> None:
    """Raise BudgetExceeded when the task has spent a budget."""
    tokens = int(state.get("tokens", 0))
    if tokens >= limits.max_tokens:
        raise BudgetExceeded("token", f"{limits.max_tokens} tokens", f"{tokens}", "max_tokens" in limits.configured)
    cost = float(state.get("usage", {}).get("cost_usd", 0.0))
    if limits.max_cost_usd is not None and cost >= limits.max_cost_usd:
        raise BudgetExceeded("cost", f"${limits.max_cost_usd:.2f}", f"${cost:.4f}", True)
    started = state.get("started_at")
    if limits.max_minutes is not None and started:
        working = (time.time() if now is None else now) - float(started) - float(state.get("waited_seconds", 0.0))
        minutes = working / 60
        if minutes >= limits.max_minutes:
            raise BudgetExceeded("time", f"{limits.max_minutes} minutes", f"{minutes:.0f} minutes", True)


def with_limits(run: NodeFn) -> NodeFn:
    """Wrap a node: resolve the limits once a checkout exists, and stop before a node past a budget."""

    async def node(state: TaskState, *, runtime: Runtime[Deps]) -> dict[str, Any]:
        settings = runtime.context.settings
        resolved = None if state.get("limits") else read_limits(state, settings)
        limits = resolved or limits_of(state, settings)
        try:
            check(state, limits)
        except BudgetExceeded as exc:
            exc.spent = spent_of(state)
            raise
        try:
            update = await run(state, runtime=runtime)
        except GraphBubbleUp:  # a pause for an answer, not a failure
            raise
        except Exception:
            runtime.context.spent_at_failure.clear()
            runtime.context.spent_at_failure.update(spent_with(state, runtime.context.unsaved))
            raise
        if resolved is None and not state.get("limits") and isinstance(update, dict):
            resolved = read_limits({**state, **update}, settings)
        if resolved is not None and isinstance(update, dict) and not update.get("limits"):
            return {**update, "limits": resolved.model_dump()}
        return update

    node.__name__ = getattr(run, "__name__", "node")
    node.__doc__ = run.__doc__
    return node
