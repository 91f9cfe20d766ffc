"""Role contracts: the invariants code checks before (and instead of) asking a model."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from graph.schemas import (
    AcceptanceCriterion,
    ArchitectVerdict,
    ChecklistItem,
    Evidence,
    FileScope,
    Finding,
    GateResult,
    Plan,
    Review,
    final_verdict,
    plan_problems,
    settle_analysis,
    settle_answer,
    settle_architect,
    settle_decomposition,
)

CRITERIA = [AcceptanceCriterion(id=1, text="returns 2"), AcceptanceCriterion(id=2, text="logs the call")]


def _plan(**scope: list[str]) -> Plan:
    return Plan(
        items=[ChecklistItem(id=1, title="change one()", criteria=[1], paths=["src/Small.php"])],
        scope=FileScope(writable=scope.get("writable", ["src/Small.php"]), context_only=scope.get("context", [])),
    )


def test_scope_separates_writable_from_context_only() -> None:
    with pytest.raises(ValidationError, match="at once"):
        FileScope(writable=["a.php"], context_only=["a.php"])
    for bad in ("/etc/passwd", "../x.php", ".git/config"):
        with pytest.raises(ValidationError, match="relative"):
            FileScope(writable=[bad])


def test_plan_items_are_numbered_write_files_and_stay_in_scope() -> None:
    with pytest.raises(ValidationError, match="names no file"):
        ChecklistItem(id=1, title="do it", kind="change")
    assert ChecklistItem(id=1, title="report it", kind="report").paths == []
    with pytest.raises(ValidationError, match="outside the writable scope"):
        _plan(writable=["src/Other.php"])
    with pytest.raises(ValidationError):
        Plan(items=[], scope=FileScope())
    with pytest.raises(ValidationError, match="1..n"):
        Plan(items=[ChecklistItem(id=2, title="x y", paths=["a.php"])], scope=FileScope(writable=["a.php"]))


def test_plan_problems_are_found_by_code(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    assert plan_problems(None, CRITERIA, tmp_path) == ["no plan although there are acceptance criteria"]
    assert plan_problems(None, [], tmp_path) == []
    problems = plan_problems(_plan(), CRITERIA, tmp_path)
    assert "criteria not covered by any item: 2" in problems
    assert any("src/Small.php is in the write scope but does not exist" in p for p in problems)
    (tmp_path / "src" / "Small.php").write_text("<?php")
    assert plan_problems(_plan(), CRITERIA[:1], tmp_path) == []


def test_review_cannot_approve_what_it_did_not_verify() -> None:
    with pytest.raises(ValidationError, match="unverified"):
        Review(verdict="approve", summary="ok", unverified_criteria=[2])
    with pytest.raises(ValidationError, match="blocker or major"):
        Review(verdict="approve", summary="ok", findings=[Finding(severity="major", message="sql injection")])
    with pytest.raises(ValidationError, match="lists the criteria"):
        Review(verdict="incomplete", summary="ran out")
    approve = Review(verdict="approve", summary="ok", verified_criteria=[1, 2])
    gates = [GateResult(name="tests", status="failed"), GateResult(name="smoke", status="disabled")]
    assert final_verdict(approve, gates) == "request_changes"
    assert final_verdict(approve, [GateResult(name="lint", status="failed", mandatory=False)]) == "approve"


def test_small_contracts() -> None:
    with pytest.raises(ValidationError, match="feedback"):
        ArchitectVerdict(approved=False)
    with pytest.raises(ValidationError, match="precedes"):
        Evidence(path="a.php", start_line=5, end_line=2)
    with pytest.raises(ValidationError, match="needs a path"):
        Finding(severity="minor", message="naming", line=3)


def test_settled_verdicts_agree_with_their_findings_and_criteria() -> None:
    from graph.schemas import settle_verdict

    minor = Finding(severity="minor", message="naming could be clearer")
    # changes requested with nothing blocking: an approval (all verified) or incomplete (not all verified)
    loose = Review(verdict="request_changes", summary="meh", findings=[minor], verified_criteria=[1, 2])
    settled = settle_verdict(loose, [1, 2])
    assert settled.verdict == "approve" and settled.findings == [minor] and "said request changes" in settled.summary
    assert settle_verdict(loose.model_copy(update={"verified_criteria": [1]}), [1, 2]).verdict == "incomplete"
    # an approval that verified nothing is not one
    silent = Review(verdict="approve", summary="lgtm")
    assert settle_verdict(silent, [1]).verdict == "incomplete"
    assert settle_verdict(silent, [1]).unverified_criteria == [1]
    # consistent answers are kept as they are
    unmet = Finding(severity="minor", message="criterion 2 is not met", criteria=[2])
    kept = Review(verdict="request_changes", summary="no", findings=[unmet], verified_criteria=[1])
    assert settle_verdict(kept, [1, 2]) is kept
    fine = Review(verdict="approve", summary="ok", verified_criteria=[1, 2])
    assert settle_verdict(fine, [1, 2]) is fine


MAJOR = {"severity": "major", "message": "totals overflow", "path": "src/Cart.php", "line": 8}


@pytest.mark.parametrize(("answer", "verdict", "unverified"), [
    # approves what it did not verify: incomplete, its findings kept
    ({"verdict": "approve", "verified_criteria": [1], "unverified_criteria": [2]}, "incomplete", [2]),
    # approves with a major finding and everything verified: the finding requests changes
    ({"verdict": "approve", "verified_criteria": [1, 2], "findings": [MAJOR]}, "request_changes", []),
    # calls itself incomplete but names nothing unverified: it verified nothing
    ({"verdict": "incomplete", "verified_criteria": [1, 2]}, "incomplete", [1, 2]),
    # no verdict at all
    ({"summary": "hm", "verified_criteria": [1, 2]}, "incomplete", [1, 2]),
])
def test_a_review_answer_that_breaks_a_rule_settles_to_what_its_content_supports(
    answer: dict[str, object], verdict: str, unverified: list[int]
) -> None:
    settled = settle_answer({"summary": "s", **answer}, [1, 2])
    assert (settled.verdict, settled.unverified_criteria) == (verdict, unverified)
    assert "broke a rule code checks" in settled.summary


def test_settling_keeps_only_what_validates() -> None:
    bad = {"severity": "major", "message": "x", "path": "../etc/passwd", "line": 1}
    settled = settle_answer({"verdict": "approve", "summary": "s", "verified_criteria": [1, 7],
                             "findings": [bad, MAJOR]}, [1])
    assert [f.message for f in settled.findings] == ["totals overflow"] and settled.verdict == "request_changes"
    assert "1 findings that did not validate are left out" in settled.summary
    decomposition = settle_decomposition({"criteria": [{"id": 3, "text": "returns 2"}, {"id": 9, "text": "x"},
                                                       {"text": "logs the call"}], "questions": ["Why?", 4]})
    assert [(c.id, c.text) for c in decomposition.criteria] == [(1, "returns 2"), (2, "logs the call")]
    assert decomposition.questions == ["Why?"]
    analysis = settle_analysis({"summary": "s", "evidence": [{"path": "a.php", "start_line": 5, "end_line": 2},
                                                             {"path": "b.php", "start_line": 1, "end_line": 2}]})
    assert [e.path for e in analysis.evidence] == ["b.php"]
    with pytest.raises(ValueError):
        settle_analysis({"evidence": []})
    assert settle_architect({"approved": False}).feedback and settle_architect({"approved": "yes"}).approved is False
