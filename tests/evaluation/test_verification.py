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


def test_findings_come_from_the_review_in_state_else_from_path_line_in_comments() -> None:
    # the reviewer's `Review` dump: `line`..`end_line`; entries without a path or line are not findings
    review = {"verdict": "request_changes", "findings": [
        {"severity": "major", "message": "wrong default", "path": "./src/A.php", "line": 41, "end_line": 43},
        {"severity": "info", "message": "general remark", "path": None, "line": None}]}
    found, source = reported_findings({"review": review}, ["src/Z.php:3"])
    assert source == "state" and found == [ReportedFinding("src/A.php", 41, 43)]
    assert match_findings(EXPECTED, found, source).passed
    # a review with no findings reported none: a failure note's `path:line` evidence is not a finding
    found, source = reported_findings({"review": {"verdict": "approve", "findings": []}}, ["see src/A.php:40"])
    assert (found, source) == ([], "state") and not match_findings(EXPECTED, found, source).passed
    # no review recorded (the route ended before its reviewer): `path:line` in the comments
    found, source = reported_findings({}, ["- high: src/A.php:39-40 breaks the default", "see lib/x.php:7"])
    assert source == "comments"
    assert found == [ReportedFinding("src/A.php", 39, 40), ReportedFinding("lib/x.php", 7, 7)]


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


def test_locations_of_python_and_typescript_match_in_their_own_spelling() -> None:
    """A task set written for a Python or TypeScript repository names `Ledger.close`; the analysis reports the
    graph's `billing.refunds.Ledger::close` (before, only PHP's `\\` boundary matched)."""
    spec = ExpectedLocations.model_validate(
        {"kind": "locations", "files": ["billing/refunds.py"], "symbols": ["Ledger.close", "Cart::total"]})
    analysis = {"affected_files": ["billing/refunds.py"],
                "symbols": ["billing.refunds.Ledger::close", "src/cart:Cart::total"]}
    assert match_locations(spec, analysis).passed
    lookalike = {"affected_files": ["billing/refunds.py"], "symbols": ["billing.refunds.SubLedger::close",
                                                                      "src/cart:MiniCart::total"]}
    assert match_locations(spec, lookalike).missing_symbols == ["Ledger.close", "Cart::total"]


def test_a_reviewer_that_flags_everything_fails_on_precision() -> None:
    everything = [ReportedFinding("src/A.php", 40, 40), *[ReportedFinding("src/A.php", n, n) for n in (5, 80, 120)]]
    result = match_findings(EXPECTED, everything, "state")
    assert result.missed == [] and result.recall == 1.0 and result.precision == 0.25
    assert not result.passed and result.unexpected == 3
    focused = match_findings(EXPECTED, everything[:2], "state")
    assert focused.passed and focused.precision == 0.5
    strict = EXPECTED.model_copy(update={"min_precision": 1.0})
    assert not match_findings(strict, everything[:2], "state").passed
