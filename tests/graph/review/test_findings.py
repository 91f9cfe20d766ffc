"""Findings across rounds: noise control, line mapping through a real diff, reconciliation, stalls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from foundation.forge.diff import parse
from foundation.gitrunner import git as git_text
from graph.findings import Tracked, filter_noise, map_line, reconcile, same_finding, stalled
from graph.schemas import Finding
from tests.graph.review.conftest import git, write


def f(severity: str = "major", path: str | None = "a.php", line: int | None = 10, **kw: Any) -> Finding:
    return Finding.model_validate({"severity": severity, "message": kw.pop("message", "a problem"), "path": path,
                                   "line": line, "criteria": kw.pop("criteria", [1]), **kw})


def test_noise_threshold_linter_and_cap_in_severity_order() -> None:
    found = [f("info"), f("minor", line=20), f("blocker", line=30), f("major", line=40), f("major", line=50)]
    kept, noise = filter_noise(found, "minor", cap=2, linted=[("a.php", 40)])
    assert [(x.severity, x.line) for x in kept] == [("blocker", 30), ("major", 50)]
    assert (noise.below_threshold, noise.linter, noise.over_cap) == (1, 1, 1)
    with pytest.raises(ValueError):
        filter_noise(found, "critical", cap=1)


def test_identity_is_place_and_subject_not_wording() -> None:
    assert same_finding(f(message="null not checked"), f(line=12, message="missing null guard"))
    assert not same_finding(f(), f(line=30))
    assert not same_finding(f(), f(criteria=[2]))
    assert same_finding(f(criteria=[], concern="Security"), f(criteria=[], concern="security", line=9))


def _delta(tmp_path: Path, before: str, after: str) -> list[Any]:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, {"a.php": before})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "1")
    write(repo, {"a.php": after})
    git(repo, "commit", "-qam", "2")
    (part,) = parse(git_text(repo, "diff", "HEAD~1", "HEAD"))
    return list(part.hunks)


def test_map_line_through_a_real_diff(tmp_path: Path) -> None:
    before = "".join(f"line {n}\n" for n in range(1, 31))
    after = before.replace("line 5\n", "line 5\nnew a\nnew b\n").replace("line 20\n", "changed 20\n")
    hunks = _delta(tmp_path, before, after)
    assert map_line(hunks, 2) == 2
    assert map_line(hunks, 10) == 12
    assert map_line(hunks, 20) is None
    assert map_line(hunks, 28) == 30


def test_reconcile_carries_fixes_suppresses_and_posts_new(tmp_path: Path) -> None:
    before = "".join(f"line {n}\n" for n in range(1, 31))
    after = before.replace("line 20\n", "fixed 20\n").replace("line 2\n", "line 2\nadded\n")
    delta = {"a.php": _delta(tmp_path, before, after)}
    untouched = Tracked(key="k1", finding=f(line=10), comment_id=1, thread="d1")
    fixed = Tracked(key="k2", finding=f(line=20, criteria=[2]), comment_id=2, thread="d2")
    answered = Tracked(key="k3", finding=f(line=25, criteria=[3]), comment_id=3, thread="d3", status="answered")
    current = [f(line=11), f(line=26, criteria=[3]), f(line=5, criteria=[4], message="brand new")]
    out = reconcile([untouched, fixed, answered], current, delta, renames={})
    assert [t.key for t in out.carried] == ["k1", "k3"]
    assert out.carried[0].finding.line == 11  # moved by the added line
    assert [t.key for t in out.fixed] == ["k2"] and out.fixed[0].status == "fixed"
    assert [x.message for x in out.new] == ["brand new"]
    assert [x.line for x in out.suppressed] == [26]


def test_reconcile_follows_renames_and_deletions() -> None:
    old = Tracked(key="k", finding=f(path="src/Old.php", line=3))
    out = reconcile([old], [f(path="src/New.php", line=3)], {}, renames={"src/Old.php": "src/New.php"})
    assert out.new == [] and out.carried[0].finding.path == "src/New.php"
    gone = reconcile([old], [], {}, renames={}, deleted=["src/Old.php"])
    assert [t.key for t in gone.fixed] == ["k"]


def test_stalled_is_per_finding() -> None:
    a, b = f(line=10), f(line=40, criteria=[2])
    rounds = [[a, b], [f(line=11, message="reworded"), b], [f(line=10)]]
    assert [x.line for x in stalled(rounds, patience=2)] == [10]  # b was fixed: not a dead end for a
    assert stalled([[a], [b]], patience=2) == []
    with pytest.raises(ValueError):
        stalled(rounds, patience=0)
