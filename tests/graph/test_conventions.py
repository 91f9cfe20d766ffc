"""Project standards in the system prompts of the coder, reviewer and planner roles, within a cap."""

from __future__ import annotations

from pathlib import Path

import pytest

import standards
from graph.conventions import STANDARDS_BUDGET_TOKENS, config_for, standards_block, standards_for
from graph.runtime.budget import estimate_tokens
from project.repoconfig import RepoConfig
from tests.repos import git, init_repo


@pytest.mark.parametrize("profile", ["php", "python"])
def test_every_shipped_standards_document_fits_its_cap_whole(profile: str) -> None:
    block = standards_block(RepoConfig(profile=profile))
    assert estimate_tokens(block) <= STANDARDS_BUDGET_TOKENS
    assert block.startswith(f'<standards origin="standards/{profile}.md">')
    assert "Left out" not in block  # a shipped document is never cut at the default cap
    for line in standards.load(profile).splitlines():
        if line.startswith("## "):
            assert line in block


def test_a_small_cap_keeps_whole_sections_in_order_and_names_the_rest() -> None:
    block = standards_block(RepoConfig(profile="php"), budget_tokens=400)
    assert estimate_tokens(block) <= 400
    assert "## Language level and types" in block
    assert "(Left out for the prompt budget: " in block and "Framework conventions" in block


def test_a_review_gets_the_standards_of_the_target_branch_not_of_the_change(tmp_path: Path) -> None:
    """A package without `.forgebot.yml`: TypeScript on the target branch; the change (reviewed before,
    so its earlier head is the review's base) turns it into a Python project. The reviewer's standards
    are TypeScript's, and an implement task's come from its base commit."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "package.json").write_text("{}")
    (root / "tsconfig.json").write_text("{}")
    init_repo(root)
    git(root, "update-ref", "refs/remotes/origin/main", "HEAD")
    target = git(root, "rev-parse", "HEAD").strip()
    git(root, "checkout", "-q", "-b", "change")
    for name in ("package.json", "tsconfig.json"):
        (root / name).unlink()
    (root / "pyproject.toml").write_text("")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "-m", "to python")
    earlier_head = git(root, "rev-parse", "HEAD").strip()
    review = {"mode": "review", "workspace": str(root), "review_base": earlier_head,
              "repo": {"default_branch": "main"}}
    assert standards_for(review).startswith('<standards origin="standards/typescript.md">')
    assert config_for(review).profile_choice().reason == "package.json at the top level, with tsconfig.json"
    implement = {"mode": "implement", "workspace": str(root), "base": target}
    assert standards_for(implement).startswith('<standards origin="standards/typescript.md">')
    assert standards_for({**implement, "base": earlier_head}).startswith('<standards origin="standards/python.md">')


def test_a_repository_no_profile_matches_gets_no_language_standards(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "main.go").write_text("package main\n")
    init_repo(root)
    block = standards_for({"mode": "implement", "workspace": str(root), "base": "main"})
    assert block.startswith('<standards origin="none">') and "No language standards apply" in block
    assert "nothing matched" in block
