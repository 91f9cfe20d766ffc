"""`forgebot run`: the analyze route on a local checkout with scripted models."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

from bot.worker.local import run_local
from foundation.settings import Settings
from graph.routing import ModeUnavailable
from graph.schemas import AcceptanceCriterion, Analysis, Decomposition
from tests.fakes.model_server import ScriptedModel, answer, scripted
from tests.repos import init_repo


def _settings(tmp_path: Path) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path / "data")  # type: ignore[call-arg]


async def test_run_local_analyze_prints_report(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "Cart.php").write_text("<?php\nclass Cart {}\n")
    init_repo(repo)
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
    assert result.state["outcome"] == "reported" and result.reached_goal
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
    from bot.worker.local import local_change
    from foundation.forge import ChangeRef, RepoRef

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

    def models(role: str) -> ScriptedModel:
        asked.append(role)
        return reviewer

    result = await run_local(_settings(tmp_path), root, "review", "Review the cart\n## Criteria\n- totals stay 1",
                             models)
    assert set(asked) == {"reviewer"}  # the review route never asks for the coder
    text = "\n".join(result.comments)
    assert "Total changed" in text


def test_forgebot_run_implement_leaves_the_checkout_alone(tmp_path: Path) -> None:
    """Local edits, staged and untracked files, the branch and HEAD survive; a new branch holds the work."""
    import os
    import subprocess
    import sys

    from tests.graph.implement import route
    from tests.graph.implement.conftest import GIT_ENV, make_project, need_php

    need_php()
    project = make_project(tmp_path)
    root = project.root

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, env=GIT_ENV,
                              check=True).stdout

    (root / "README.md").write_text("my notes, not committed\n")  # untracked
    (root / "scratch").mkdir()
    (root / "scratch" / "idea.php").write_text("<?php // untracked work\n")
    edited = route.CALCULATOR.replace("return $a + $b;", "return $b + $a; // my local edit")
    (root / route.CALC).write_text(edited)  # a modified tracked file
    (root / "phpunit.xml").write_text((root / "phpunit.xml").read_text() + "<!-- staged -->\n")
    git("add", "phpunit.xml")  # a staged change
    before = (git("rev-parse", "HEAD"), git("symbolic-ref", "HEAD"), git("status", "--porcelain", "-uall"),
              git("diff"), git("diff", "--cached"), git("for-each-ref"))
    env = {**os.environ, "FORGEBOT_DATA_DIR": str(tmp_path / "data"), "FORGEBOT_EMBEDDER__KIND": "off"}
    done = subprocess.run(
        [sys.executable, "-m", "tests.bot.local_main", "run", "--repo", str(root), "--mode", "implement",
         "--task", "Add multiplication\nThe calculator should multiply."],
        cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, env=env, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    after = (git("rev-parse", "HEAD"), git("symbolic-ref", "HEAD"), git("status", "--porcelain", "-uall"),
             git("diff"), git("diff", "--cached"))
    assert after == before[:5]
    assert (root / route.CALC).read_text() == edited and (root / "README.md").read_text() == "my notes, not committed\n"
    assert (root / "scratch" / "idea.php").read_text() == "<?php // untracked work\n"
    (branch,) = [b for b in git("for-each-ref", "--format=%(refname:short)", "refs/heads").split()
                 if b.startswith("forgebot/run-")]
    assert git("log", "--format=%s", f"{before[0].strip()}..{branch}").splitlines() == ["Add multiply with its test"]
    assert "return $a * $b;" in git("show", f"{branch}:{route.CALC}")
    assert f"Branch {branch} in {root}" in done.stdout
    assert "+        return $a * $b;" in done.stdout  # the patch
    assert "Opened #" in done.stdout or "delivered" in done.stdout.lower() or branch in done.stdout
    assert not list((tmp_path / "data" / "workspaces" / "tasks").glob("*"))  # the run's worktree is gone


def test_forgebot_run_prints_a_patch_that_applies_to_a_windows_1252_file(tmp_path: Path) -> None:
    """The run prints its patch after the report. Decoded as UTF-8 it held `Gr��e` where the file holds the
    bytes of `Größe` in Windows-1252, so `git apply` refused what the run printed; it now prints git's bytes."""
    import os
    import subprocess
    import sys

    from tests.bot.local_main import LEGACY_CALCULATOR
    from tests.graph.implement import route
    from tests.graph.implement.conftest import GIT_ENV, make_project, need_php

    need_php()
    root = make_project(tmp_path).root
    (root / route.CALC).write_bytes(LEGACY_CALCULATOR.encode("cp1252"))
    subprocess.run(["git", "-C", str(root), "commit", "-qam", "a German comment"], env=GIT_ENV, check=True)
    copy = tmp_path / "elsewhere"  # where the user applies what the run printed
    subprocess.run(["git", "clone", "-q", str(root), str(copy)], env=GIT_ENV, check=True)
    env = {**os.environ, "FORGEBOT_DATA_DIR": str(tmp_path / "data"), "FORGEBOT_EMBEDDER__KIND": "off"}
    done = subprocess.run(
        [sys.executable, "-m", "tests.bot.local_main", "--legacy", "run", "--repo", str(root), "--mode", "implement",
         "--task", "Add multiplication\nThe calculator should multiply."],
        cwd=Path(__file__).resolve().parents[2], capture_output=True, env=env, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    patch = done.stdout[done.stdout.index(b"diff --git"):]
    assert b"         return $a + $b; // Gr\xf6\xdfe\n" in patch  # a context line, in the file's own bytes
    applied = subprocess.run(["git", "-C", str(copy), "apply", "-"], input=patch, capture_output=True, env=GIT_ENV)
    assert applied.returncode == 0, applied.stderr
    shown = subprocess.run(["git", "-C", str(root), "show", f"{_run_branch(root)}:{route.CALC}"], capture_output=True,
                           env=GIT_ENV, check=True).stdout
    assert (copy / route.CALC).read_bytes() == shown and b"return $a * $b;" in shown


def _run_branch(root: Path) -> str:
    import subprocess

    listed = subprocess.run(["git", "-C", str(root), "for-each-ref", "--format=%(refname:short)", "refs/heads"],
                            capture_output=True, text=True, check=True).stdout.split()
    (branch,) = [b for b in listed if b.startswith("forgebot/run-")]
    return branch


def test_forgebot_run_refuses_a_checkout_whose_config_names_a_program(tmp_path: Path) -> None:
    """The user's repository is read and written only through the hardened runner: a filter is refused."""
    import os
    import subprocess
    import sys

    root = tmp_path / "repo"
    _branch_with_changes(root)
    marker = tmp_path / "ran"
    _git(root, "config", "filter.evil.clean", f"touch {marker}; cat")
    (root / ".gitattributes").write_text("* filter=evil\n")
    done = subprocess.run(
        [sys.executable, "-m", "tests.bot.local_main", "run", "--repo", str(root), "--mode", "implement",
         "--task", "Anything"],
        cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=300,
        env={**os.environ, "FORGEBOT_DATA_DIR": str(tmp_path / "data"), "FORGEBOT_EMBEDDER__KIND": "off"},
    )
    assert done.returncode == 2 and "filter.evil.clean" in done.stderr and "Traceback" not in done.stderr
    assert not marker.exists()
    refs = subprocess.run(["git", "-C", str(root), "for-each-ref", "--format=%(refname)"], capture_output=True,
                          text=True, check=True).stdout
    assert "forgebot/" not in refs


def test_forgebot_run_implement_on_a_python_checkout_without_configuration_runs_pytest(tmp_path: Path) -> None:
    """No `.forgebot.yml`: the run says it detected Python from pyproject.toml, and the gates it prints
    in the change's description ran pytest on the coder's change (the fixture's three tests and one new)."""
    import os
    import shutil
    import subprocess
    import sys

    from tests.graph.conftest import FIXTURES, init_repo
    from tests.tools import need_check_pytest

    need_check_pytest()
    root = tmp_path / "calc"
    shutil.copytree(FIXTURES / "python_project", root)
    init_repo(root)
    env = {**os.environ, "FORGEBOT_DATA_DIR": str(tmp_path / "data"), "FORGEBOT_EMBEDDER__KIND": "off",
           "FORGEBOT_SANDBOX__ALLOW_ROOT": "true"}
    done = subprocess.run(
        [sys.executable, "-m", "tests.bot.local_main", "--python", "run", "--repo", str(root), "--mode", "implement",
         "--task", "Add multiplication\ncalc should multiply."],
        cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, env=env, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    chosen = "`python` (detected: pyproject.toml at the top level)"
    assert f"forgebot run: profile: {chosen}\n" in done.stderr
    assert f"Profile: {chosen}" in done.stdout
    assert "| test_runner | `passed` | 4 passed" in done.stdout
    assert "+def multiply(a: int, b: int) -> int:" in done.stdout  # the patch


@pytest.mark.php  # runs PHP tools (the review gates, the checks)
async def test_a_review_on_a_master_checkout_reads_its_configuration_from_master(tmp_path: Path) -> None:
    """A checkout whose default branch is master (nikic/PHP-Parser's) had its review read `.forgebot.yml`
    and the profile from `origin/main`, which is not there: no profile ("revision `origin/main` not
    found in the repository") and the file's settings silently left out."""
    from graph.schemas import Review

    root = tmp_path / "repo"
    _branch_with_changes(root)
    _git(root, "checkout", "-q", "main")
    (root / ".forgebot.yml").write_text("profile: php\n")
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")  # detection alone would say python
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "configure")
    _git(root, "branch", "-q", "-m", "main", "master")
    _git(root, "checkout", "-q", "feature")
    _git(root, "rebase", "-q", "master")
    review = Review(verdict="approve", summary="Fine.", findings=[], verified_criteria=[1])
    told: list[str] = []
    result = await run_local(_settings(tmp_path), root, "review", "Review the cart\n## Criteria\n- totals stay 1",
                             lambda role: scripted([AIMessage(content="done"), answer(Review, review)]),
                             notify=told.append)
    assert result.state["repo"]["default_branch"] == "master"
    assert [line for line in told if line.startswith("profile: ")] == ["profile: `php` (set: named in `.forgebot.yml`)"]
