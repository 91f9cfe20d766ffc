"""The review route on the in-memory forge, a real git repository and scripted models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from foundation.forge import AccessLevel, Change, ChangeRef, RepoRef
from foundation.settings import SandboxSettings, Settings, WorkspaceSettings
from graph.builder import build_graph
from graph.deps import Deps
from graph.schemas import Finding, Review
from tests.fakes.forge import FakeForge
from tests.fakes.model_server import ScriptedModel, answer, scripted
from tests.graph.checkpointed import run_task
from tests.graph.conftest import need_tools
from tests.graph.review.conftest import ChangeRepo, change_files
from tests.graph.runtime.script import done

BODY = "Doubles totals.\n\n## Acceptance criteria\n- Totals count each item twice\n- Runner keeps working\n"


def _repo_ref(repo: ChangeRepo) -> RepoRef:
    return RepoRef(forge="gitlab", project="7", path="group/shop", clone_url=f"file://{repo.root}")


ALICE = 11  # the change's author, a Developer of the project


def _seed(forge: FakeForge, repo: ChangeRepo, branch: str = "feature", head: str = "") -> ChangeRef:
    ref = ChangeRef(repo=_repo_ref(repo), number=3)
    forge.changes[ref] = Change(ref=ref, title="Double totals", body=BODY, author="alice", source_branch=branch,
                                target_branch="main", base_sha=repo.base, head_sha=head or repo.head,
                                start_sha=repo.base,
                                state="opened", files=change_files(repo), author_id=ALICE)
    forge.access[("7", ALICE)] = AccessLevel.DEVELOPER
    return ref


class Models:
    """Scripted model per role; remembers which roles were asked for (the coder never is)."""

    def __init__(self, reviewer: ScriptedModel) -> None:
        self.reviewer = reviewer
        self.asked: list[str] = []

    def __call__(self, role: str) -> ScriptedModel:
        self.asked.append(role)
        if role != "reviewer":
            raise AssertionError(f"the review route asked for the {role} model")
        return self.reviewer


async def _review(forge: FakeForge, repo: ChangeRepo, tmp_path: Path, models: Models,
                  task: str) -> tuple[dict[str, Any], list[str]]:
    settings = Settings(_env_file=None, data_dir=tmp_path / "data",  # type: ignore[call-arg]
                        workspace=WorkspaceSettings(allowed_protocols=("file",)),
                        sandbox=SandboxSettings(allow_root=True))  # the suite runs as root
    deps = Deps(settings=settings, forge=forge, model_for=models)
    state: Any = {"task_id": task, "mode": "review", "forge": "gitlab", "repo": _repo_ref(repo).model_dump(),
             "number": 3, "title": "", "body": "", "started_at": 0.0, "tokens": 0, "models": []}
    return await run_task(settings, deps, state, task)


FIRST = Review(verdict="request_changes", summary="Two problems.", verified_criteria=[1], findings=[
    Finding(severity="major", message="doubling belongs in a pricing rule", path="src/Cart.php", line=8,
            criteria=[1], suggestion="move it to Pricing"),
    Finding(severity="minor", message="the loop could use array_sum", path="src/Cart.php", line=7,
            concern="style"),  # a context line
    Finding(severity="major", message="the class was renamed but callers still say Legacy",
            path="src/Runner.php", line=2, criteria=[2]),  # a renamed file
    Finding(severity="major", message="discount can go negative", path="src/Discount.php", line=40,
            criteria=[1]),  # not on the diff
    Finding(severity="info", message="nice naming", path="src/Discount.php", line=2),  # below the threshold
])


@pytest.mark.php  # runs PHP tools (the review gates, the checks)
async def test_first_review_posts_inline_findings_and_summary(change_repo: ChangeRepo, tmp_path: Path) -> None:
    change_repo.commit({"composer.lock": "{}\n"})
    forge = FakeForge(kind="gitlab")
    ref = _seed(forge, change_repo)
    models = Models(scripted([done(), answer(Review, FIRST)]))
    final, nodes = await _review(forge, change_repo, tmp_path, models, "t1")
    assert nodes == ["review_intake", "reviewer", "review_publisher"] and set(models.asked) == {"reviewer"}
    comments = forge.posted[ref]
    inline = {(c.path, c.line) for c in comments if c.path}
    assert inline == {("src/Cart.php", 8), ("src/Cart.php", 7), ("src/Runner.php", 2)}
    (summary,) = [c.body for c in comments if not c.path]
    assert "### Review: changes requested" in summary
    assert "`src/Discount.php:40` discount can go negative (criterion 1) — not anchored on the diff" in summary
    assert "verified: 1. Totals count each item twice" in summary
    assert "not verified: 2. Runner keeps working" in summary
    assert "1 findings below the severity threshold (minor)" in summary
    assert "nice naming" not in summary
    assert "**Not reviewed**" in summary and "`composer.lock`: generated or vendored file" in summary
    assert final["outcome"] == "request_changes"


async def test_missing_branch_gets_a_clear_reply_and_no_review(change_repo: ChangeRepo, tmp_path: Path) -> None:
    forge = FakeForge(kind="gitlab")
    ref = _seed(forge, change_repo, branch="deleted-branch", head="d" * 40)
    models = Models(scripted([]))
    final, nodes = await _review(forge, change_repo, tmp_path, models, "t2")
    assert nodes == ["review_intake"] and models.asked == []
    (reply,) = forge.comments[ref]
    assert "head commit `dddddddddddd` (branch `deleted-branch`) cannot be fetched" in reply and "`/review`" in reply
    assert final["outcome"] == "no_branch"


async def test_a_change_without_a_reported_head_names_its_missing_branch(change_repo: ChangeRepo,
                                                                          tmp_path: Path) -> None:
    forge = FakeForge(kind="gitlab")
    ref = _seed(forge, change_repo, branch="deleted-branch")
    forge.changes[ref] = forge.changes[ref].model_copy(update={"head_sha": ""})  # no version computed yet
    final, _ = await _review(forge, change_repo, tmp_path, Models(scripted([])), "t3")
    (reply,) = forge.comments[ref]
    assert "source branch `deleted-branch` does not exist in the repository" in reply
    assert final["outcome"] == "no_branch"


@pytest.mark.php  # runs PHP tools (the review gates, the checks)
async def test_re_review_covers_the_delta_resolves_fixed_and_posts_no_duplicates(
    change_repo: ChangeRepo, tmp_path: Path
) -> None:
    forge = FakeForge(kind="gitlab")
    ref = _seed(forge, change_repo)
    await _review(forge, change_repo, tmp_path, Models(scripted([done(), answer(Review, FIRST)])), "t1")
    (summary_id,) = [c.ref.id for c in forge.posted[ref] if not c.path]
    runner = next(c for c in forge.posted[ref] if c.path == "src/Runner.php")
    # the change's author answers in the finding's thread (a reply by the bot itself would answer nothing)
    forge._add(ref, "Callers were updated in another change; this is intended.", thread=runner.ref.thread,
               review=runner.ref.review, author="alice", author_id=11)
    cart = (change_repo.root / "src/Cart.php").read_text().replace("$item * 2", "$this->double($item)")
    change_repo.commit({"src/Cart.php": cart, "src/Extra.php": "<?php\nfunction extra(): int\n{\n    return 1;\n}\n"})
    _seed(forge, change_repo)
    second = Review(verdict="request_changes", summary="One new problem.", verified_criteria=[1, 2], findings=[
        Finding(severity="major", message="Runner still named oddly", path="src/Runner.php", line=2, criteria=[2]),
        Finding(severity="major", message="extra() is unused", path="src/Extra.php", line=2, concern="dead code"),
    ])
    reviewer = scripted([done(), answer(Review, second)])
    final, _ = await _review(forge, change_repo, tmp_path, Models(reviewer), "t2")
    diff = next(str(m.content) for m in reviewer.received[0] if "<diff" in str(m.content))
    assert "src/Extra.php" in diff and "src/Discount.php" not in diff  # only the delta
    comments = forge.posted[ref]
    summaries = [c for c in comments if not c.path and "### Review" in c.body]
    assert [c.ref.id for c in summaries] == [summary_id]  # edited in place
    body = summaries[0].body
    assert "changes since the last review" in body
    assert "**Fixed since the last review**" in body and "doubling belongs in a pricing rule" in body
    assert "(answered by the author)" in body and "the loop could use array_sum" in body
    inline = sorted((c.path, c.line) for c in comments if c.path)
    assert inline == [("src/Cart.php", 7), ("src/Cart.php", 8), ("src/Extra.php", 2), ("src/Runner.php", 2)]
    fixed = next(c for c in comments if c.path == "src/Cart.php" and c.line == 8)
    assert all(c.resolved for c in comments if c.ref.thread == fixed.ref.thread)
    assert not any(c.resolved for c in comments if c.path == "src/Runner.php")
    assert final["review_scope"]["base"] != change_repo.base


@pytest.mark.php  # runs PHP tools (the review gates, the checks)
async def test_findings_the_profile_linter_reports_are_dropped(change_repo: ChangeRepo, tmp_path: Path) -> None:
    need_tools("php")
    change_repo.commit({"src/Bad.php": "<?php\nfunction bad()\n{\n    return 1 +;\n}\n"})
    forge = FakeForge(kind="gitlab")
    ref = _seed(forge, change_repo)
    review = Review(verdict="request_changes", summary="Broken.", verified_criteria=[1], findings=[
        Finding(severity="blocker", message="syntax error", path="src/Bad.php", line=4, criteria=[1]),
        Finding(severity="major", message="bad() has no return type", path="src/Bad.php", line=2, criteria=[1]),
    ])
    final, _ = await _review(forge, change_repo, tmp_path, Models(scripted([done(), answer(Review, review)])), "t3")
    assert ("src/Bad.php", 4) in [tuple(x) for x in final["linted"]]
    assert [(c.path, c.line) for c in forge.posted[ref] if c.path] == [("src/Bad.php", 2)]
    (summary,) = [c.body for c in forge.posted[ref] if not c.path]
    assert "1 findings dropped: the profile's linter reports them already" in summary


@pytest.mark.php  # runs PHP tools (the review gates, the checks)
async def test_review_without_new_commits_says_so_and_posts_nothing_else(
    change_repo: ChangeRepo, tmp_path: Path
) -> None:
    forge = FakeForge(kind="gitlab")
    ref = _seed(forge, change_repo)
    await _review(forge, change_repo, tmp_path, Models(scripted([done(), answer(Review, FIRST)])), "t1")
    before = len(forge.posted[ref])
    models = Models(scripted([]))
    final, nodes = await _review(forge, change_repo, tmp_path, models, "t2")
    assert nodes == ["review_intake"] and models.asked == [] and final["outcome"] == "up_to_date"
    assert len(forge.posted[ref]) == before + 1
    assert "Nothing to review" in forge.posted[ref][-1].body


@pytest.mark.php  # runs PHP tools (the review gates, the checks)
async def test_a_change_without_criteria_shows_whether_its_general_check_was_verified(
    change_repo: ChangeRepo, tmp_path: Path
) -> None:
    """No criteria stated: the review checks the change for defects, security and architecture (criterion
    1). An approval that did not say it verified that came out "incomplete" under a coverage line that
    named nothing unverified (SmolLM2 reviewing a zod change), while the closing line said the report
    tells what could not be verified."""
    forge = FakeForge(kind="gitlab")
    ref = _seed(forge, change_repo)
    forge.changes[ref] = forge.changes[ref].model_copy(update={"body": "Doubles totals."})
    said = Review(verdict="approve", summary="Looks fine.", findings=[], verified_criteria=[])
    final, _ = await _review(forge, change_repo, tmp_path, Models(scripted([done(), answer(Review, said)])), "t9")
    (summary,) = [c.body for c in forge.posted[ref] if not c.path]
    assert "### Review: incomplete, not approved" in summary
    assert ("not verified: The change introduces no defect, security problem or architecture violation (no "
            "criteria stated; reviewed for defects, security and architecture)") in summary
    assert final["outcome"] == "incomplete"


def test_no_path_from_the_review_route_reaches_a_writing_role() -> None:
    drawn = build_graph().compile().get_graph()
    edges: dict[str, set[str]] = {}
    for edge in drawn.edges:
        edges.setdefault(edge.source, set()).add(edge.target)
    reached, todo = set(), ["review_intake"]
    while todo:
        node = todo.pop()
        if node not in reached:
            reached.add(node)
            todo.extend(edges.get(node, ()))
    assert reached == {"review_intake", "reviewer", "review_publisher", "__end__"}
