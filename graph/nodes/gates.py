"""gates: the repository profile's mandatory checks on the task's result, run by code.

`test_runner`, `smoke` (when configured) and syntax/lint run in the check sandbox with the
repository's timeout and an environment holding no forge token or model key. Each gate keeps the
check's status — passed, failed, disabled or not_run — never blurred; a failed test run carries the
classifier's verdict, so a broken environment is reported as such instead of sent for a rewrite.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from foundation.metrics import record_gate, safe_label
from foundation.settings import Settings
from graph.coder import gitstate
from graph.deps import Deps
from graph.runtime.trace import Trace
from graph.schemas import GateResult
from graph.state import TaskState
from project.checks import CheckContext, CheckResult, context_for, run_checks, run_lints
from project.repoconfig import RepoConfig, RepoConfigError, defaults_at, load_repo_config

# The only variables a check sees from us: no token, no key, nothing from the worker's environment.
CHECK_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
_NAMES = {"test": "test_runner", "smoke": "smoke", "install": "install"}


def repo_config(state: TaskState) -> RepoConfig:
    """`.forgebot.yml` as of the task's base commit, never the task's own edits to it.

    Without a base (no git history to read it from) the defaults apply, with the profile detected
    from the checkout's HEAD; the default protected paths still hold. An invalid file raises
    RepoConfigError, whose message is fit for the failure comment.
    """
    base = state.get("base", "")
    if not base:
        return defaults_at(Path(state["workspace"]), "HEAD") if state.get("workspace") else RepoConfig()
    try:
        return load_repo_config(Path(state["workspace"]), base)
    except OSError as exc:  # git missing or the worktree gone
        raise RepoConfigError(f"`.forgebot.yml` could not be read: {exc}") from exc


def check_context(state: TaskState, settings: Settings, files: Sequence[str]) -> CheckContext:
    return context_for(Path(state["workspace"]), repo_config(state), files, settings, CHECK_ENV)


def lint_problems(context: CheckContext) -> list[str]:
    """complete_item's lint: problems of the failed linters on the modified files."""
    return [f"{r.name}: {r.output.strip()[-1500:]}" for r in run_lints(context) if r.status == "failed"]


def gate_of(result: CheckResult) -> GateResult:
    detail = result.reason
    if result.classification is not None and result.status == "failed":
        detail = f"{result.classification.outcome}: {result.classification.summary}"
    elif result.classification is not None and result.status == "passed" and not detail:
        detail = result.classification.summary  # what ran: "4 passed in 0.02s", not a bare status
    name = _NAMES.get(result.kind, result.name)
    return GateResult(name=name, status=result.status, mandatory=True, detail=detail,
                      not_enforced=result.not_enforced)


def run_gates(state: TaskState, settings: Settings) -> tuple[list[GateResult], list[CheckResult]]:
    root = Path(state["workspace"])
    files = gitstate.changed_files(root, state["base"], "HEAD") if state.get("base") else []
    report = run_checks(check_context(state, settings, files), ("install", "test", "smoke", "lint"))
    results = [r for r in report.results if not (r.kind == "install" and r.status == "not_run")]
    return [gate_of(r) for r in results], results


async def run(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    gates, results = await asyncio.to_thread(run_gates, state, runtime.context.settings)
    _count(gates)
    ran = {_NAMES.get(r.kind, r.name): r.command for r in results if r.command}  # the profile's or the file's
    Trace.open(runtime.context.settings.data_dir, state["task_id"]).event(
        "gates", results=[f"{g.name} {g.status}" for g in gates], commands=ran)
    failed = [r for r in results if r.status == "failed"]
    output = "\n\n".join(f"{r.name} ({r.reason}):\n{r.output.strip()[-3000:]}" for r in failed)
    # the unified reviewer diffs the task's work from its start, and knows what the last round left open
    return {"gates": [g.model_dump() for g in gates], "fix_context": output, "review_base": state["base"],
            "review_open": state.get("review_problems", [])}


def _count(gates: list[GateResult]) -> None:
    """Each result in `forgebot_gate_results_total`; a lint `.forgebot.yml` named outside the label
    alphabet is counted as `custom` (repository text never becomes a label as it is)."""
    for gate in gates:
        record_gate(safe_label(gate.name, "custom"), gate.status)


def environment_broken(state: TaskState) -> str:
    """The reason when a failed test gate says the machine, not the change, is wrong."""
    for gate in state.get("gates", []):
        if gate["name"] == "test_runner" and gate["status"] == "failed" and gate["detail"].startswith("environment"):
            return f"the test environment is broken ({gate['detail']})"
    return ""
