"""A project check must not make the bot's next git command run a program outside the sandbox.

Each attack is a real check process (`project.sandbox.run_sandboxed`, isolation OFF, so the runner
alone has to hold) in a real task worktree made by `foundation.workspace` from a real mirror. After it,
every git call the bot makes on that worktree — coder commit and snapshot, patch apply, planning
context, review diff, `.forgebot.yml` read, code search, index listing, workspace commit and push —
either runs without running the attacker's program or, where the git metadata was tampered
with, refuses (`GitTampered`). The attacker's program only appends to a marker file: the marker
must never appear. Each test also runs plain git on the same setup as a control, so it can fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import SecretStr

from foundation.gitrunner import GitError, GitTampered, Repo
from foundation.settings import Settings, WorkspaceSettings
from foundation.signing import Committer
from foundation.workspace import Workspaces
from graph.coder import gitstate
from graph.coder.patch import PatchPolicy, apply
from graph.planning_context import diff_part
from graph.reviewdiff import collect
from graph.tools.code_search import search_code
from project.index.index_cli import list_files
from project.index.taskindex import source_files
from project.repoconfig import load_repo_config
from project.sandbox import SandboxPolicy
from tests.conftest import GITLAB_TOKEN
from tests.e2e import implement_harness as h
from tests.fakes.forge_http import FakeForgeState
from tests.fakes.samples import sample
from tests.graph.implement.conftest import FORGEBOT_YML
from tests.intake import deliveries
from tests.intake.payloads import serve_samples
from tests.sandboxes import run_sandboxed

PLAIN = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
         "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.invalid", "GIT_COMMITTER_NAME": "a",
         "GIT_COMMITTER_EMAIL": "a@example.invalid"}
AUTHOR = Committer("forgebot", "bot@forgebot.invalid")


def plain_git(*args: str, cwd: Path, env: dict[str, str] | None = None, check: bool = True) -> str:
    """git as a user (or an attacker) runs it: whatever the repository and environment say."""
    done = subprocess.run(["git", *args], cwd=cwd, env=env or PLAIN, capture_output=True, text=True, check=check)
    return done.stdout


class Setup:
    """A served origin, the bot's mirror and task worktree, and the attacker's program."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.origin = tmp_path / "origin.git"
        seed = tmp_path / "seed"
        plain_git("init", "-q", "-b", "main", str(seed), cwd=tmp_path)
        (seed / "src").mkdir()
        (seed / "src" / "App.php").write_text("<?php\nfunction app() { return 1; }\n")
        (seed / ".forgebot.yml").write_text("profile: php\n")
        plain_git("add", "-A", cwd=seed)
        plain_git("commit", "-qm", "initial", cwd=seed)
        plain_git("clone", "-q", "--bare", str(seed), str(self.origin), cwd=tmp_path)
        self.data = tmp_path / "data"
        settings = WorkspaceSettings(allowed_protocols=("file",), author_name=AUTHOR.name, author_email=AUTHOR.email)
        self.ws = Workspaces(self.data / "workspaces", settings)
        key = tmp_path / "signing-key"  # the operator's FORGEBOT_WORKSPACE__SIGNING_KEY
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True,
                       stdin=subprocess.DEVNULL)
        self.signer = Committer(AUTHOR.name, AUTHOR.email, SecretStr(key.read_text()))
        self.marker = tmp_path / "marker"
        self.evil = tmp_path / "evil.sh"
        self.evil.write_text(f'#!/bin/sh\necho "$0 $*" >> {self.marker}\ncat\n')  # a filter passes content on
        self.evil.chmod(0o755)

    async def task(self) -> tuple[Path, str]:
        await self.ws.mirror("gitlab-1", str(self.origin))
        root = await self.ws.worktree("gitlab-1", "task1", "forgebot/1-x", "origin/main")
        (root / "src" / "App.php").write_text("<?php\nfunction app() { return 2; }\n")  # the coder's work
        return root, plain_git("rev-parse", "HEAD", cwd=root).strip()

    def check(self, root: Path, script: str) -> None:
        """Run `script` as the project's check: a real sandboxed process, isolation off."""
        policy = SandboxPolicy(allow_root=True, isolate=False, allow_unisolated=True, timeout_seconds=60,
                               hidden_paths=(self.data,))
        result = run_sandboxed(script, root, policy, {"PATH": "/usr/bin:/bin"})
        assert result.status == "passed", result.output
        assert not self.marker.exists(), "the check itself ran the program: the test proves nothing"


def bot_calls(setup: Setup, root: Path, base: str) -> dict[str, Callable[[], object]]:
    """Every git call the bot makes on a task worktree, by the code path that makes it."""
    patch = ("--- a/src/App.php\n+++ b/src/App.php\n@@ -1,2 +1,2 @@\n <?php\n"
             "-function app() { return 2; }\n+function app() { return 3; }\n")
    policy = PatchPolicy(writable=lambda: ["src/App.php"], protected=lambda path: False)
    return {
        "coder snapshot": lambda: gitstate.snapshot(root),
        "coder patch": lambda: apply(root, patch, policy),
        "coder commit": lambda: gitstate.commit_all(root, "step", AUTHOR),
        "signed coder commit": lambda: gitstate.commit_all(root, "signed step", setup.signer),
        "planning context": lambda: diff_part(root, base),
        "review diff": lambda: collect(root, base),
        "repo config": lambda: load_repo_config(root, "HEAD"),
        "code search": lambda: search_code(root, "app"),
        "index files": lambda: (source_files(root), list_files(root)),
    }


async def workspace_calls(setup: Setup, root: Path) -> None:
    assert await setup.ws.is_clean(root) in (True, False)
    gitstate.commit_all(root, "workspace commit", AUTHOR)
    await setup.ws.push(root, str(setup.origin), "forgebot/1-x", lease="")
    await setup.ws.mirror("gitlab-1", str(setup.origin))
    await setup.ws.read_file("gitlab-1", "origin/main", ".forgebot.yml")


REPLACE_DOTGIT = """
set -e
rm -f .git
git init -q .
git -c user.name=x -c user.email=x@x add -A
git -c user.name=x -c user.email=x@x commit -qm planted
mkdir -p .git/hooks-evil
for h in pre-commit post-commit pre-push post-checkout reference-transaction; do
  cp {evil} .git/hooks-evil/$h; cp {evil} .git/hooks/$h
done
git config core.fsmonitor {evil}
git config core.hooksPath "$PWD/.git/hooks-evil"
git config filter.evil.clean {evil}
git config filter.evil.smudge {evil}
git config filter.evil.required true
git config diff.evil.textconv {evil}
git config diff.external {evil}
git config credential.helper '!{evil}'
printf '* filter=evil diff=evil\\n' > .gitattributes
"""


async def test_a_dotgit_replaced_by_a_check_stops_every_bot_git_call(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    root, base = await setup.task()
    setup.check(root, REPLACE_DOTGIT.format(evil=setup.evil))

    for name, call in bot_calls(setup, root, base).items():
        with pytest.raises(GitTampered, match="replaced|not the file"):
            call()
        assert not setup.marker.exists(), name
    with pytest.raises(GitTampered):
        await workspace_calls(setup, root)
    with pytest.raises(GitTampered):  # a retried job does not reuse the tampered worktree either
        await setup.ws.worktree("gitlab-1", "task1", "forgebot/1-x", "origin/main")
    assert not setup.marker.exists()
    assert "forgebot/1-x" not in plain_git("branch", "--list", cwd=setup.origin)  # nothing was pushed

    planted = tmp_path / "planted"
    shutil.copytree(root, planted, symlinks=True)  # for the control below
    await setup.ws.cleanup("gitlab-1", "task1")  # the finished task's worktree goes without git reading it
    assert not root.exists() and not setup.marker.exists()
    assert "task1" not in plain_git("worktree", "list", cwd=setup.ws.mirror_path("gitlab-1"))

    plain_git("status", "--porcelain", cwd=planted)  # control: plain git runs the planted fsmonitor
    assert setup.marker.exists()


@pytest.mark.parametrize("how", ["elsewhere", "symlink", "another task"])
async def test_a_dotgit_pointing_anywhere_but_its_admin_dir_is_refused(tmp_path: Path, how: str) -> None:
    setup = Setup(tmp_path)
    root, base = await setup.task()
    evil_repo = tmp_path / "evil-repo"
    plain_git("init", "-q", "--bare", str(evil_repo), cwd=tmp_path)
    plain_git("config", "core.fsmonitor", str(setup.evil), cwd=evil_repo)
    admin = Path((root / ".git").read_text().split(": ", 1)[1].strip())
    other = await setup.ws.worktree("gitlab-1", "task2", "forgebot/2-x", "origin/main")
    target = {"elsewhere": f"gitdir: {evil_repo}\n", "symlink": "", "another task": (other / ".git").read_text()}[how]
    script = f"rm .git && ln -s {admin} .git" if how == "symlink" else f"printf '{target}' > .git"
    setup.check(root, script)

    for name, call in bot_calls(setup, root, base).items():
        with pytest.raises(GitTampered):
            call()
        assert not setup.marker.exists(), name
    with pytest.raises(GitTampered):
        await workspace_calls(setup, root)
    assert not setup.marker.exists()


async def test_attributes_naming_drivers_defined_outside_the_repository_run_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`.gitattributes` + filter/diff/merge drivers in every config file git could read but the repo's."""
    setup = Setup(tmp_path)
    root, base = await setup.task()
    home = tmp_path / "worker-home"
    (home / ".config" / "git").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))  # the worker's own HOME, which the check (isolation off) can write
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    drivers = (f"[filter \"evil\"]\n\tclean = {setup.evil}\n\tsmudge = {setup.evil}\n\trequired = true\n"
               f"[diff \"evil\"]\n\ttextconv = {setup.evil}\n\tcommand = {setup.evil}\n"
               f"[merge \"evil\"]\n\tdriver = {setup.evil} %O %A %B\n[core]\n\tfsmonitor = {setup.evil}\n")
    script = (f"cat > {home}/.gitconfig <<'EOF'\n{drivers}EOF\n"
              f"cp {home}/.gitconfig {home}/.config/git/config\n"
              f"printf '* filter=evil diff=evil merge=evil\\n' > .gitattributes\n"
              f"printf '* filter=evil diff=evil\\n' > {home}/.config/git/attributes\n")
    setup.check(root, script)

    for name, call in bot_calls(setup, root, base).items():
        call()  # the metadata is intact: every call works, none runs a driver
        assert not setup.marker.exists(), name
    await workspace_calls(setup, root)
    assert not setup.marker.exists()
    assert ".gitattributes" in plain_git("ls-tree", "--name-only", "HEAD", cwd=root)  # committed, unfiltered

    (root / "src" / "App.php").write_text("<?php\n// control\n")
    env = {**PLAIN, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    env.pop("GIT_CONFIG_GLOBAL")  # control: git as the worker's environment would run it
    plain_git("add", "-A", cwd=root, env=env)
    assert setup.marker.exists()


async def test_hooks_written_into_the_git_dir_never_run(tmp_path: Path) -> None:
    """With the sandbox's data-dir hiding off, a check can reach the mirror's hooks: they still never run."""
    setup = Setup(tmp_path)
    root, base = await setup.task()
    admin = Path((root / ".git").read_text().split(": ", 1)[1].strip())
    hooks = " ".join(f"{d}/hooks/{h}" for d in (admin.parent.parent, admin)
                     for h in ("pre-commit", "commit-msg", "post-commit", "pre-push", "post-checkout",
                               "reference-transaction", "post-index-change", "pre-auto-gc"))
    setup.check(root, f"mkdir -p {admin}/hooks && for h in {hooks}; do cp {setup.evil} $h; done")

    for name, call in bot_calls(setup, root, base).items():
        call()
        assert not setup.marker.exists(), name
    await workspace_calls(setup, root)
    assert not setup.marker.exists()

    plain_git("commit", "-q", "--allow-empty", "-m", "control", cwd=root)  # control: plain git runs them
    assert "pre-commit" in setup.marker.read_text()


@pytest.mark.parametrize("entry", [
    "[core]\n\tfsmonitor = {evil}",
    "[credential]\n\thelper = !{evil}",
    "[filter \"evil\"]\n\tclean = {evil}",
    "[diff \"evil\"]\n\ttextconv = {evil}",
    "[include]\n\tpath = {tmp}/more.config",
    "[remote \"origin\"]\n\tuploadpack = {evil}",
    "[protocol \"ext\"]\n\tallow = always",
    "[core]\n\tsshCommand = {evil}",
])
async def test_config_the_bot_never_writes_stops_git_on_the_mirror(tmp_path: Path, entry: str) -> None:
    """A check that reaches the mirror (isolation off) and adds a key: every bot call refuses."""
    setup = Setup(tmp_path)
    root, base = await setup.task()
    (tmp_path / "more.config").write_text(f"[core]\n\tfsmonitor = {setup.evil}\n")
    config = setup.ws.mirror_path("gitlab-1") / "config"
    setup.check(root, f"cat >> {config} <<'EOF'\n{entry.format(evil=setup.evil, tmp=tmp_path)}\nEOF\n")

    for name, call in bot_calls(setup, root, base).items():
        with pytest.raises(GitTampered, match="may not be set"):
            call()
        assert not setup.marker.exists(), name
    with pytest.raises(GitTampered):
        await workspace_calls(setup, root)
    assert not setup.marker.exists()


async def test_a_nested_repository_planted_by_a_check_runs_nothing(tmp_path: Path) -> None:
    """A repository planted in the tree (git would run *its* filters when checking it for changes)."""
    setup = Setup(tmp_path)
    root, base = await setup.task()
    script = f"""
set -e
mkdir -p vendor/evil && cd vendor/evil
git init -q . && echo x > x.txt
git -c user.name=x -c user.email=x@x add -A && git -c user.name=x -c user.email=x@x commit -qm nested
git config core.fsmonitor {setup.evil}
git config filter.evil.clean {setup.evil}
printf '* filter=evil\\n' > .gitattributes && echo y > x.txt
"""
    setup.check(root, script)

    refused = []
    for name, call in bot_calls(setup, root, base).items():
        try:
            call()  # staged as a gitlink without looking inside; once in the index, no command may look inside
        except GitTampered as exc:
            assert "planted at vendor/evil" in str(exc)
            refused.append(name)
        assert not setup.marker.exists(), name
    with pytest.raises(GitTampered, match="planted"):
        gitstate.commit_all(root, "workspace commit", AUTHOR)
    assert refused and not setup.marker.exists()

    env = {**PLAIN, "GIT_DIR": Path((root / ".git").read_text()[8:].strip()).as_posix(), "GIT_WORK_TREE": str(root)}
    plain_git("add", "--all", cwd=root, env=env)  # control: plain git runs the planted repository's filter
    assert setup.marker.exists()


async def test_the_worker_environment_reaches_no_git_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GIT_* and friends in the worker's environment (e.g. set by a compromised parent) change nothing."""
    setup = Setup(tmp_path)
    root, base = await setup.task()
    evil_repo = tmp_path / "evil-repo"
    plain_git("init", "-q", str(evil_repo), cwd=tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(f"[core]\n\tfsmonitor = {setup.evil}\n[credential]\n\thelper = !{setup.evil}\n")
    hostile = {
        "GIT_DIR": str(evil_repo / ".git"), "GIT_WORK_TREE": str(evil_repo), "GIT_INDEX_FILE": str(tmp_path / "ix"),
        "GIT_CONFIG_PARAMETERS": f"'core.fsmonitor'='{setup.evil}'",
        "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor", "GIT_CONFIG_VALUE_0": str(setup.evil),
        "GIT_EXTERNAL_DIFF": str(setup.evil), "GIT_ASKPASS": str(setup.evil), "SSH_ASKPASS": str(setup.evil),
        "GIT_SSH_COMMAND": str(setup.evil), "GIT_EDITOR": str(setup.evil), "GIT_PAGER": str(setup.evil),
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"), "HOME": str(home), "GIT_TRACE": str(tmp_path / "trace"),
    }
    for name, value in hostile.items():
        monkeypatch.setenv(name, value)

    for name, call in bot_calls(setup, root, base).items():
        call()
        assert not setup.marker.exists(), name
    await workspace_calls(setup, root)
    assert not setup.marker.exists() and not (tmp_path / "trace").exists()
    pushed = plain_git("rev-parse", "refs/heads/forgebot/1-x", cwd=setup.origin)
    assert pushed == plain_git("rev-parse", "HEAD", cwd=root)  # the bot's repository, not GIT_DIR's

    subprocess.run(["git", "status"], cwd=root, env={**os.environ}, capture_output=True, check=False)  # control
    assert setup.marker.exists()


def test_an_untrusted_checkout_naming_a_program_is_refused(tmp_path: Path) -> None:
    """Outside the bot's workspaces (`forgebot run`, evaluation, the index CLI) config may not name programs."""
    repo = tmp_path / "checkout"
    plain_git("init", "-q", str(repo), cwd=tmp_path)
    plain_git("config", "user.name", "someone", cwd=repo)  # ordinary settings are the user's business
    plain_git("commit", "-q", "--allow-empty", "-m", "first", cwd=repo)
    assert Repo.at(repo).work_tree == repo.resolve()
    gitstate.snapshot(repo)
    plain_git("config", "filter.lfs.clean", "git-lfs clean -- %f", cwd=repo)
    with pytest.raises(GitTampered, match="filter.lfs.clean"):
        gitstate.snapshot(repo)
    with pytest.raises(GitError, match="not a git repository"):
        Repo.at(tmp_path / "nowhere")


@pytest.mark.php
@pytest.mark.parametrize("isolated", [True, False], ids=["sandboxed", "unisolated"])
async def test_a_task_whose_check_replaces_dotgit_fails_closed(
    tmp_path: Path, settings: Settings, redis_url: str, fake_forge: FakeForgeState,
    monkeypatch: pytest.MonkeyPatch, isolated: bool,
) -> None:
    """Through the service: a GitLab label webhook to the real receiver, the arq worker, a mirror
    over HTTP with the forge token, real gates whose test command plants a `.git`. In the sandbox the
    plant lands on the run's discarded layer: the task delivers the coder's commit alone. Without
    namespaces (accepted) the plant reaches the worktree and the runner stops the task (GitTampered):
    one note saying the working copy was changed, nothing pushed or opened. The planted program
    never runs."""
    from tests.security.test_sandbox_escape import _path_without

    marker = tmp_path / "marker"
    if not isolated:
        monkeypatch.setenv("PATH", _path_without(tmp_path, "unshare"))
        settings.sandbox.allow_unisolated = True
    for served in h.served_project(tmp_path / "forge", "oauth2", GITLAB_TOKEN):
        settings.workspace.git_hosts = (served.url,)
        seed = tmp_path / "forge" / "seed"
        (seed / "tools").mkdir()
        (seed / "tools" / "evil.sh").write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\ncat\n')
        (seed / "tools" / "evil.sh").chmod(0o755)
        (seed / "tools" / "check.sh").write_text(REPLACE_DOTGIT.format(evil="$PWD/tools/evil.sh"))
        config = FORGEBOT_YML.replace("commands:\n", "commands:\n  test: sh tools/check.sh\n")
        (seed / ".forgebot.yml").write_text(config)
        plain_git("add", "-A", cwd=seed)
        plain_git("commit", "-qm", "a check", cwd=seed)
        plain_git("push", "-q", str(served.origin), "main:master", cwd=seed)
        h.setup(settings, redis_url, "Platform")
        serve_samples(fake_forge, settings, clone_url=served.url)  # what the worker resolves project 1 to
        fake_forge.grant("gitlab", "1", "1", 30)
        fake_forge.grant("gitlab", "1", "7", 30)
        h.issue(fake_forge, "gitlab", "1", 23)
        delivery = deliveries.gitlab(h.labelled(sample("gitlab/issue.labels-changed.json"), served.url), "Issue Hook")
        assert await h.post(settings, "gitlab", *delivery) == 202
        worker = await h.work(settings, h.implement_roles().__getitem__)
        assert not marker.exists()
        branches = plain_git("for-each-ref", "--format=%(refname:short)", "refs/heads", cwd=served.origin).split()
        if isolated:
            assert worker.jobs_failed == 0 and await h.task_states(settings) == [("done", "delivered")]
            (branch,) = [b for b in branches if b != "master"]
            assert served.branch_log(branch)[:2] == ["Add multiply with its test", "a check"]  # nothing planted
            assert "| test_runner | `passed` |" in h.the_change(fake_forge, "gitlab", "1").body
            continue
        assert worker.jobs_failed == 0  # the job recorded the failure: no exception left for arq
        assert await h.task_states(settings) == [("failed", "tampered checkout")]
        notes = [c.body for c in fake_forge.comments_on("gitlab", "1", 23)]
        assert any("could not finish this task: its working copy was changed by something other than forgebot"
                   in n for n in notes), notes
        assert not fake_forge.changes and branches == ["master"]
        (task,) = (settings.data_dir / "workspaces" / "tasks").iterdir()
        assert (task / ".git").is_dir()  # the check did run and plant its repository
