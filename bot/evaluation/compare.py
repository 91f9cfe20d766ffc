"""compare_reports(): per-task changes between two runs of the same task set and checks.

Pass rates mean something only against a known task set and known checks, so reports that differ
there are refused. Code, prompts, configuration and models may differ: that is what a comparison
is for, and the differing parts are named at the top.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.evaluation.report import Report

MUST_MATCH = ("taskset", "checks")


class IncomparableReports(ValueError):
    """The reports were made on different task sets or checks."""


@dataclass
class Comparison:
    differing: list[str]  # fingerprint parts that differ (code, prompts, config, models)
    changes: list[tuple[str, str, str]] = field(default_factory=list)  # (task, outcome A, outcome B)
    unchanged: int = 0
    summary: tuple[dict[str, int], dict[str, int]] = ({}, {})
    warnings: list[str] = field(default_factory=list)
    token_delta: int = 0


def compare_reports(a: Report, b: Report) -> Comparison:
    """Refuse mismatched task sets or checks; otherwise list per-task outcome changes."""
    mismatched = [p for p in MUST_MATCH if a.fingerprints.get(p) != b.fingerprints.get(p) or p not in a.fingerprints]
    if mismatched:
        raise IncomparableReports(
            f"refusing to compare: the reports differ in {' and '.join(mismatched)} "
            "(outcomes are comparable only on the same tasks with the same checks)"
        )
    parts = sorted(set(a.fingerprints) | set(b.fingerprints))
    result = Comparison(differing=[p for p in parts if a.fingerprints.get(p) != b.fingerprints.get(p)])
    result.summary = (a.summary, b.summary)
    if a.synthetic or b.synthetic:
        result.warnings.append("at least one report is synthetic: its outcomes are not a measure of effectiveness")
    by_id = {t.id: t for t in b.tasks}
    for task in a.tasks:
        other = by_id.get(task.id)
        outcome_b = other.outcome if other else "absent"
        if outcome_b != task.outcome:
            result.changes.append((task.id, task.outcome, outcome_b))
        else:
            result.unchanged += 1
    result.token_delta = sum(t.tokens for t in b.tasks) - sum(t.tokens for t in a.tasks)
    return result


def render_comparison(c: Comparison) -> str:
    lines = [f"differs in: {', '.join(c.differing) or 'nothing (same fingerprints)'}"]
    lines += [f"warning: {w}" for w in c.warnings]
    a, b = c.summary
    lines.append("passed: {} → {} of {}".format(a.get("passed", 0), b.get("passed", 0), b.get("total", 0)))
    lines.append(f"tokens: {c.token_delta:+d}")
    lines += [f"  {task}: {before} → {after}" for task, before, after in c.changes]
    lines.append(f"{len(c.changes)} changed, {c.unchanged} unchanged")
    return "\n".join(lines) + "\n"
