"""`forgebot run`: the analyze route on a local checkout with scripted models."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.local import run_local
from bot.settings import Settings
from graph.routing import ModeUnavailable
from graph.schemas import AcceptanceCriterion, Analysis, Decomposition
from tests.fakes.chat import answer, scripted


def _settings(tmp_path: Path) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path / "data")  # type: ignore[call-arg]


async def test_run_local_analyze_prints_report(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    decomposition = Decomposition(criteria=[AcceptanceCriterion(id=1, text="Totals include tax")])
    script = {
        "decomposer": scripted([answer(Decomposition, decomposition)]),
        "analyzer": scripted([answer(Analysis, Analysis(summary="Totals are computed in Cart::total"))]),
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
