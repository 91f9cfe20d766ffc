"""compare: refuses reports on different task sets or checks, otherwise lists per-task changes."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from bot.cli.eval_cli import register
from bot.evaluation.compare import IncomparableReports, compare_reports, render_comparison
from bot.evaluation.report import Report, TaskResult, write_reports

PRINTS = {"code": "c1", "prompts": "p1", "config": "g1", "models": "m1", "taskset": "t1", "checks": "k1"}


def _report(outcomes: dict[str, str], synthetic: bool = False, **prints: str) -> Report:
    tasks = [
        TaskResult(id=i, mode="analyze", package="php-x", version="1", outcome=o, tokens=100)  # type: ignore[arg-type]
        for i, o in outcomes.items()
    ]
    return Report(synthetic=synthetic, created_at="2026-01-01T00:00:00+00:00", taskset="s",
                  fingerprints={**PRINTS, **prints}, tasks=tasks)


def test_mismatched_task_set_or_checks_are_refused() -> None:
    a = _report({"t": "passed"})
    with pytest.raises(IncomparableReports, match="differ in taskset"):
        compare_reports(a, _report({"t": "passed"}, taskset="t2"))
    with pytest.raises(IncomparableReports, match="differ in checks"):
        compare_reports(a, _report({"t": "passed"}, checks="k2"))
    with pytest.raises(IncomparableReports, match="taskset and checks"):
        compare_reports(a, _report({"t": "passed"}, taskset="t2", checks="k2"))


def test_per_task_changes_and_differing_parts_are_shown() -> None:
    a = _report({"one": "failed", "two": "passed", "three": "not_run"})
    b = _report({"one": "passed", "two": "passed", "three": "error"}, synthetic=True, prompts="p2")
    result = compare_reports(a, b)
    assert result.differing == ["prompts"]
    assert result.changes == [("one", "failed", "passed"), ("three", "not_run", "error")]
    assert result.unchanged == 1 and result.warnings
    text = render_comparison(result)
    assert "differs in: prompts" in text and "one: failed → passed" in text and "2 changed, 1 unchanged" in text


def _cli(tmp_path: Path, a: Report, b: Report, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    write_reports(a, tmp_path / "a")
    write_reports(b, tmp_path / "b")
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["eval", "compare", str(tmp_path / "a/report.json"), str(tmp_path / "b/report.json")])
    code = args.handler(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_compare_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(tmp_path / "ok", _report({"t": "failed"}), _report({"t": "passed"}), capsys)
    assert code == 0 and "t: failed → passed" in out
    code, out, err = _cli(tmp_path / "no", _report({"t": "failed"}), _report({"t": "passed"}, taskset="x"), capsys)
    assert code == 3 and "refusing to compare" in err and out == ""
    (tmp_path / "junk.json").write_text("{}", encoding="utf-8")
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["eval", "compare", str(tmp_path / "junk.json"), str(tmp_path / "junk.json")])
    assert args.handler(args) == 2 and "not a forgebot evaluation report" in capsys.readouterr().err
