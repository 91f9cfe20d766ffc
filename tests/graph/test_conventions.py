"""Project standards in the system prompts of the coder, reviewer and planner roles, within a cap."""

from __future__ import annotations

import pytest

import standards
from graph.conventions import STANDARDS_BUDGET_TOKENS, standards_block
from graph.runtime.budget import estimate_tokens
from project.repoconfig import RepoConfig


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
