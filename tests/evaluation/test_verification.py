"""Outcome checks: findings by file and line range, locations by file and symbol."""

from __future__ import annotations

from bot.evaluation.taskset import ExpectedFindings, ExpectedLocations
from bot.evaluation.verification import ReportedFinding, match_findings, match_locations, reported_findings

EXPECTED = ExpectedFindings.model_validate(
    {"kind": "findings", "tolerance": 2, "findings": [{"path": "src/A.php", "start_line": 40, "end_line": 41}]}
)


def test_a_finding_matches_on_its_file_within_tolerance() -> None:
    near = [ReportedFinding("src/A.php", 43, 45)]
    assert match_findings(EXPECTED, near, "state").passed
    far = [ReportedFinding("src/A.php", 44, 50), ReportedFinding("src/B.php", 40, 41)]
    result = match_findings(EXPECTED, far, "state")
    assert not result.passed and result.missed == ["src/A.php:40-41"] and result.unexpected == 2


def test_findings_come_from_state_first_then_from_path_line_in_comments() -> None:
    state = {"findings": [{"path": "./src/A.php", "start_line": 41, "severity": "high"}, {"note": "no path"}]}
    found, source = reported_findings(state, ["src/Z.php:3"])
    assert source == "state" and found == [ReportedFinding("src/A.php", 41, 41)]
    found, source = reported_findings({}, ["- high: src/A.php:39-40 breaks the default", "see lib/x.php:7"])
    assert source == "comments"
    assert found == [ReportedFinding("src/A.php", 39, 40), ReportedFinding("lib/x.php", 7, 7)]
    nested, source = reported_findings({"review": {"findings": [{"file": "src/A.php", "line": 40}]}}, [])
    assert source == "state" and match_findings(EXPECTED, nested, source).passed


def test_locations_need_every_expected_file_and_symbol() -> None:
    spec = ExpectedLocations.model_validate(
        {"kind": "locations", "files": ["Cron/CronExpression.php"], "symbols": ["CronExpression::getRunDate"]}
    )
    good = {
        "affected_files": [],
        "evidence": [{"path": "./Cron/CronExpression.php", "start_line": 441, "end_line": 441}],
        "symbols": ["\\Cron\\CronExpression::getRunDate()"],
    }
    assert match_locations(spec, good).passed
    lookalike = {"affected_files": ["Cron/CronExpression.php"], "symbols": ["MyCronExpression::getRunDate"]}
    result = match_locations(spec, lookalike)
    assert not result.passed and result.missing_symbols == ["CronExpression::getRunDate"]
    assert result.found_files == ["Cron/CronExpression.php"]
    assert not match_locations(spec, {}).passed
