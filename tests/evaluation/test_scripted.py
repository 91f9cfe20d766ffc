"""The synthetic model: structured answers by schema, tool-loop turns by role, all derived by code."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import StructuredTool

import prompts
from bot.evaluation.baseline import NO_ITEM, REPORT_TITLE, Baseline, criteria_ids, diff_hunks
from bot.evaluation.scripted import ScriptedModelError, SyntheticChatModel
from graph.nodes.planner import PlanProposal
from graph.schemas import Analysis, Plan, Review

SOURCE = """<?php
namespace App;

final class Slugger
{
    public function slug(string $text): string
    {
        return strtolower($text);
    }
}
"""
TASK = "Implement Slugger::slug\nSlugger::slug must turn text into a URL slug."


def _git(root: Path, *args: str) -> str:
    env = {"PATH": "/usr/bin:/bin", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(root)}
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True, env=env).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "Slugger.php").write_text(SOURCE, encoding="utf-8")
    (root / "src" / "Old.php").write_text("<?php\n// one\n// two\n", encoding="utf-8")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "start")
    return root


def _review_prompt(root: Path) -> HumanMessage:
    """The reviewer's real task message over the real `git diff` of the worktree."""
    diff = _git(root, "diff", "--no-color", "-M", "HEAD")
    text = prompts.render("reviewer.task", origin="merge request", title="t", decisions=[], open_findings=[],
                          skipped=[], base="a" * 12, head="b" * 12, diff=diff,
                          criteria=[{"id": 1, "text": "Slugs are lowercase"}, {"id": 2, "text": "No </tag> leaks"}])
    return HumanMessage(text)


def test_the_review_lists_one_info_finding_per_changed_hunk_and_verifies_nothing(repo: Path) -> None:
    path = repo / "src" / "Slugger.php"
    path.write_text(SOURCE.replace("strtolower($text)", "strtoupper($text)"), encoding="utf-8")
    (repo / "src" / "Old.php").unlink()  # a deleted file has no new-side lines: its finding is on the old side
    message = _review_prompt(repo)
    assert diff_hunks([message]) == [("src/Old.php", "old", 1, 3), ("src/Slugger.php", "new", 5, 10)]
    assert criteria_ids([message]) == [1, 2]

    model = SyntheticChatModel(baseline=Baseline(TASK, repo), role="reviewer")
    review = model.with_structured_output(Review).invoke([SystemMessage("review"), message])
    assert isinstance(review, Review) and review.verdict == "incomplete"
    assert review.unverified_criteria == [1, 2] and review.verified_criteria == []
    assert [(f.severity, f.path, f.line, f.end_line, f.side) for f in review.findings] == [
        ("info", "src/Old.php", 1, 3, "old"), ("info", "src/Slugger.php", 5, 10, "new")]


def test_plans_name_the_declared_files_and_an_amendment_only_reports(repo: Path) -> None:
    baseline = Baseline(TASK, repo)
    asked = [HumanMessage("<criteria origin=\"decomposer\">\n1. Slugs\n2. Tests\n</criteria>")]
    first = SyntheticChatModel(baseline=baseline, role="planner").with_structured_output(PlanProposal).invoke(asked)
    assert isinstance(first, PlanProposal) and isinstance(first.plan, Plan)
    assert [(i.kind, i.paths, i.criteria) for i in first.plan.items] == [("change", ["src/Slugger.php"], [1, 2])]
    assert first.plan.scope.writable == ["src/Slugger.php"]
    amended = SyntheticChatModel(baseline=baseline, role="planner_amend").with_structured_output(PlanProposal)
    answer = amended.invoke(asked)
    assert isinstance(answer, PlanProposal) and answer.plan is not None
    assert [(i.kind, i.title) for i in answer.plan.items] == [("report", REPORT_TITLE)]

    analysis = SyntheticChatModel(baseline=baseline, role="analyzer").with_structured_output(Analysis).invoke(asked)
    assert isinstance(analysis, Analysis) and analysis.symbols == ["Slugger::slug"]
    assert analysis.evidence[0].start_line == 6  # `public function slug(` in SOURCE


def _coder(baseline: Baseline) -> SyntheticChatModel:
    def tool(name: str) -> StructuredTool:
        return StructuredTool.from_function(lambda **kw: "", name=name, description=name)
    names = ("apply_patch", "complete_item", "finish", "report_plan_blocker")
    bound = SyntheticChatModel(baseline=baseline, role="coder").bind_tools([tool(n) for n in names])
    assert not bound.structured and bound.tool_names == names
    return bound


def test_the_coder_never_writes_it_blocks_reports_and_finishes(repo: Path) -> None:
    coder = _coder(Baseline(TASK, repo))
    progress = SystemMessage("Checklist:\n[ ] 1. Implement Slugger::slug (change; src/Slugger.php; criteria [1])")
    reply = coder.invoke([progress, HumanMessage("task\n\nWork on item 1. Implement Slugger::slug")])
    assert [(c["name"], c["args"]["item_id"], c["args"]["evidence"]) for c in reply.tool_calls] == [
        ("report_plan_blocker", 1, "src/Slugger.php:6")]

    progress = SystemMessage(f"Checklist:\n[ ] 1. {REPORT_TITLE} (report; src/Slugger.php; criteria [1])")
    reply = coder.invoke([progress, HumanMessage(f"task\n\nWork on item 1. {REPORT_TITLE}")])
    assert [c["name"] for c in reply.tool_calls] == ["complete_item"] and reply.tool_calls[0]["args"]["report"]
    assert (repo / "src" / "Slugger.php").read_text(encoding="utf-8") == SOURCE

    reply = coder.invoke([HumanMessage(f"task\n\n{NO_ITEM}")])
    assert [c["name"] for c in reply.tool_calls] == ["finish"]
    assert reply.usage_metadata is not None and reply.usage_metadata["input_tokens"] > 0


def test_nothing_named_means_no_blocker_evidence_and_other_roles_just_stop(tmp_path: Path) -> None:
    coder = _coder(Baseline("Make it faster\nEverything is slow.", tmp_path))
    reply = coder.invoke([HumanMessage("Work on item 1. Make it faster")])
    assert reply.tool_calls == [] and "cannot implement" in str(reply.content)
    tool = StructuredTool.from_function(lambda path: "", name="read_file", description="read")
    reviewer = SyntheticChatModel(baseline=Baseline(TASK, tmp_path), role="reviewer").bind_tools([tool])
    reply = reviewer.invoke([HumanMessage("review this")])
    assert reply.tool_calls == [] and "synthetic model" in str(reply.content)


def test_a_schema_without_a_script_and_an_unbound_call_are_errors(tmp_path: Path) -> None:
    model = SyntheticChatModel(baseline=Baseline(TASK, tmp_path), role="publisher")
    with pytest.raises(ScriptedModelError, match="no script for Plan"):
        model.with_structured_output(Plan).invoke([HumanMessage("x")])
    with pytest.raises(ScriptedModelError, match="tool loops and structured calls only"):
        model.invoke([HumanMessage("x")])
