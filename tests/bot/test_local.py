"""`forgebot run`: the analyze route on a local checkout with scripted models."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

from bot.local import run_local
from bot.settings import Settings
from graph.routing import ModeUnavailable
from graph.schemas import AcceptanceCriterion, Analysis, Decomposition
from tests.fakes.chat import ScriptedChatModel, answer, scripted


def _settings(tmp_path: Path) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path / "data")  # type: ignore[call-arg]


async def test_run_local_analyze_prints_report(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    decomposition = Decomposition(criteria=[AcceptanceCriterion(id=1, text="Totals include tax")])
    script = {
        "decomposer": scripted([answer(Decomposition, decomposition)]),
        "analyzer": scripted([
            AIMessage(content="no tools needed"),
            answer(Analysis, Analysis(summary="Totals are computed in Cart::total")),
        ]),
    }
    result = await run_local(
        _settings(tmp_path), repo, "analyze", "Add tax\nTotals must include tax.", script.__getitem__
    )
    assert result.state["outcome"] == "reported" and result.state["workspace"] == str(repo.resolve())
    assert result.state["title"] == "Add tax"
    (report,) = result.comments
    assert "Totals are computed in Cart::total" in report and "1. Totals include tax" in report


async def test_run_local_refuses_missing_checkout_and_unavailable_mode(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await run_local(_settings(tmp_path), tmp_path / "nope", "analyze", "x")
    with pytest.raises(ModeUnavailable):
        await run_local(_settings(tmp_path), tmp_path, "deploy", "x")  # type: ignore[arg-type]


def _git(root: Path, *args: str) -> None:
    import subprocess

    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                   check=True, capture_output=True)


def _branch_with_changes(root: Path) -> None:
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    (root / "src").mkdir()
    (root / "src/Cart.php").write_text("<?php\nclass Cart\n{\n    public function total(): int\n    {\n"
                                       "        return 1;\n    }\n}\n")
    (root / "src/Old.php").write_text("<?php\nclass Old\n{\n}\n" + "// keep\n" * 10)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    _git(root, "checkout", "-q", "-b", "feature")
    (root / "src/Cart.php").write_text("<?php\nclass Cart\n{\n    public function total(): int\n    {\n"
                                       "        return 2;\n    }\n}\n")
    _git(root, "mv", "src/Old.php", "src/Renamed.php")
    _git(root, "commit", "-q", "-am", "change")


def test_local_change_describes_the_branch_against_its_base(tmp_path: Path) -> None:
    from bot.forge import ChangeRef, RepoRef
    from bot.local import local_change

    root = tmp_path / "repo"
    _branch_with_changes(root)
    ref = ChangeRef(repo=RepoRef(forge="local", project="p", path="repo"), number=1)
    change = local_change(ref, root, "t", "b", None)
    assert (change.source_branch, change.target_branch) == ("feature", "main")
    by_path = {f.new_path: f for f in change.files}
    assert by_path["src/Renamed.php"].status == "renamed" and by_path["src/Renamed.php"].old_path == "src/Old.php"
    cart = by_path["src/Cart.php"]
    assert cart.status == "modified"
    kinds = {(line.kind.name, line.old_line, line.new_line) for hunk in cart.hunks for line in hunk.lines}
    assert ("REMOVED", 6, None) in kinds and ("ADDED", None, 6) in kinds


@pytest.mark.php  # runs PHP tools (the review gates, the checks)
async def test_run_local_review_reviews_the_checked_out_branch(tmp_path: Path) -> None:
    from langchain_core.messages import AIMessage

    from graph.schemas import Finding, Review

    root = tmp_path / "repo"
    _branch_with_changes(root)
    finding = Finding(severity="major", path="src/Cart.php", line=6, message="Total changed: now 2 for every cart",
                      criteria=[1])
    review = Review(verdict="request_changes", summary="Totals changed.", findings=[finding],
                    verified_criteria=[1])
    reviewer = scripted([AIMessage(content="done"), answer(Review, review)])
    asked: list[str] = []

    def models(role: str) -> ScriptedChatModel:
        asked.append(role)
        return reviewer

    result = await run_local(_settings(tmp_path), root, "review", "Review the cart\n## Criteria\n- totals stay 1",
                             models)
    assert set(asked) == {"reviewer"}  # the review route never asks for the coder
    text = "\n".join(result.comments)
    assert "Total changed" in text
