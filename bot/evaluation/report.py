"""Evaluation results and reports: per-task results, the run's summary, JSON and Markdown output.

A report made with the synthetic model says so in both forms; its pass counts illustrate the format
and the machinery, never a model's effectiveness.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Outcome = Literal["passed", "failed", "not_run", "error", "invalid"]
OUTCOMES: tuple[Outcome, ...] = ("passed", "failed", "not_run", "error", "invalid")
SYNTHETIC_NOTICE = (
    "Synthetic run: the answers came from a scripted model, not a language model. This report shows "
    "that the harness works; it is not a measure of effectiveness."
)
REPORT_FORMAT = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RoleFigures(_Model):
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cost_usd: float | None = None  # only when prices were given
    models: list[str] = Field(default_factory=list)


class TaskResult(_Model):
    id: str
    mode: str
    package: str
    version: str
    outcome: Outcome
    reason: str = ""
    verification: dict[str, Any] = Field(default_factory=dict)
    before: dict[str, Any] | None = None  # implement: hidden tests on the start commit (must fail)
    state_outcome: str | None = None  # the route's own word for how it ended (reported, failed, incomplete…)
    state_failure: str = ""  # the route's failure reason, when it reported one
    gates: Any = None  # the final state's gate results, when the route records them
    roles: dict[str, RoleFigures] = Field(default_factory=dict)
    tokens: int = 0
    cost_usd: float | None = None
    duration_s: float = 0.0
    tool_calls: dict[str, int] = Field(default_factory=dict)
    events: list[dict[str, Any]] = Field(default_factory=list)  # loop-guard and budget events
    changed_files: list[str] = Field(default_factory=list)
    syntax_errors: list[str] = Field(default_factory=list)
    unresolved_symbols: list[str] = Field(default_factory=list)
    quality_note: str = ""


class Report(_Model):
    format: int = REPORT_FORMAT
    synthetic: bool
    notice: str = ""
    created_at: str
    taskset: str
    fingerprints: dict[str, str]
    fingerprint_inputs: dict[str, Any] = Field(default_factory=dict)
    summary: dict[str, int] = Field(default_factory=dict)
    tasks: list[TaskResult]


def summarize(results: list[TaskResult]) -> dict[str, int]:
    counts = Counter(r.outcome for r in results)
    return {"total": len(results), **{o: counts.get(o, 0) for o in OUTCOMES}}


def load_report(path: Path) -> Report:
    """Read a JSON report written by `write_reports`; a bad file is a ValueError with the path."""
    try:
        return Report.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read report {path}: {exc.strerror}") from exc
    except ValueError as exc:
        raise ValueError(f"{path} is not a forgebot evaluation report: {exc}") from exc


def write_reports(report: Report, out_dir: Path) -> tuple[Path, Path]:
    """Write `report.json` and `report.md` into `out_dir`; return both paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / "report.json", out_dir / "report.md"
    json_path.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    md_path.write_text(render_markdown(report), encoding="utf-8")
    return json_path, md_path


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Report) -> str:
    lines = [f"# forgebot evaluation: {report.taskset}", ""]
    if report.synthetic:
        lines += [f"> **{report.notice or SYNTHETIC_NOTICE}**", ""]
    lines += [f"Created {report.created_at}.", "", "## Fingerprints", "", "| part | sha256 |", "|---|---|"]
    lines += [f"| {name} | `{value[:16]}` |" for name, value in sorted(report.fingerprints.items())]
    s = report.summary
    lines += ["", "## Summary", "", " · ".join(f"{k} {v}" for k, v in s.items()), ""]
    lines += [
        "## Tasks",
        "",
        "| task | mode | outcome | route | tokens | cost | s | tool calls | guard/budget events | syntax errors "
        "| unresolved | reason |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report.tasks:
        cost = "—" if r.cost_usd is None else f"${r.cost_usd:.4f}"
        reason = " · ".join(x for x in (r.reason, r.quality_note, r.state_failure and "route: " + r.state_failure) if x)
        lines.append(
            f"| {r.id} | {r.mode} | **{r.outcome}** | {r.state_outcome or '—'} | {r.tokens} | {cost} | "
            f"{r.duration_s:.1f} | "
            f"{sum(r.tool_calls.values())} | {len(r.events)} | {len(r.syntax_errors)} | "
            f"{len(r.unresolved_symbols)} | {_cell(reason)} |"
        )
    lines += ["", "## Tokens per role", "", "| task | role | model | calls | in | out |", "|---|---|---|---|---|---|"]
    for r in report.tasks:
        for role, f in sorted(r.roles.items()):
            models = ", ".join(f.models)
            lines.append(f"| {r.id} | {role} | {models} | {f.calls} | {f.input_tokens} | {f.output_tokens} |")
    return "\n".join(lines) + "\n"
