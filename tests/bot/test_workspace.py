"""Workspaces against real git: local bare repositories, and a smart-HTTP server for token pushes."""

from __future__ import annotations

import base64
import logging
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic import SecretStr

from foundation.forge import GitCredentials
from foundation.gitrunner import GitError, GitTampered
from foundation.settings import WorkspaceSettings
from foundation.signing import Committer
from foundation.workspace import WorkspaceFull, Workspaces, origin_of, push_refusal, repo_key
from graph.coder import gitstate
from tests.fakes.git_http import create_git_server
from tests.fakes.server import serving

TOKEN = "glpat-workspace-token-never-stored"
PLAIN_ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent",
             "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "Alice", "GIT_AUTHOR_EMAIL": "alice@example.com",
             "GIT_COMMITTER_NAME": "Alice", "GIT_COMMITTER_EMAIL": "alice@example.com"}


def git(*args: str, cwd: Path | None = None) -> str:
    """Plain git, as a user (or an attacker preparing a repository) would run it."""
    done = subprocess.run(["git", *args], cwd=cwd, env=PLAIN_ENV, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def make_origin(tmp_path: Path, name: str = "app.git") -> Path:
    """A bare repository with one commit on `main`, like a project on a forge."""
    origin, seed = tmp_path / "server" / name, tmp_path / f"seed-{name}"
    git("init", "--bare", "--quiet", "-b", "main", str(origin))
    git("init", "--quiet", "-b", "main", str(seed))
    (seed / "README.md").write_text("hello\n")
    git("add", "README.md", cwd=seed)
    git("commit", "--quiet", "-m", "initial", cwd=seed)
    git("push", "--quiet", str(origin), "main", cwd=seed)
    return origin


def add_commit(origin: Path, tmp_path: Path, path: str, text: str) -> str:
    clone = tmp_path / f"clone-{path.replace('/', '_')}"
    git("clone", "--quiet", str(origin), str(clone))
    (clone / path).parent.mkdir(parents=True, exist_ok=True)
    (clone / path).write_text(text)
    git("add", "--all", cwd=clone)
    git("commit", "--quiet", "-m", f"add {path}", cwd=clone)
    git("push", "--quiet", "origin", "main", cwd=clone)
    return git("rev-parse", "HEAD", cwd=clone)


def commit(tree: Path, message: str) -> str | None:
    """The bot's one way to commit (the coder's `commit_all`), with the identity `local_workspaces` sets."""
    return gitstate.commit_all(tree, message, Committer("forgebot", "bot@forgebot.invalid"))


def local_workspaces(tmp_path: Path) -> Workspaces:
    settings = WorkspaceSettings(allowed_protocols=("file",), author_name="forgebot",
                                 author_email="bot@forgebot.invalid")
    return Workspaces(tmp_path / "ws", settings)


async def test_mirror_worktree_commit_push_cleanup(tmp_path: Path) -> None:
    origin = make_origin(tmp_path)
    ws = local_workspaces(tmp_path)
    mirror = await ws.mirror("gitlab-1", str(origin))
    newer = add_commit(origin, tmp_path, "src/Api.php", "<?php\n")
    await ws.mirror("gitlab-1", str(origin))  # incremental: picks up the new commit
    assert git("rev-parse", "refs/remotes/origin/main", cwd=mirror) == newer

    tree = await ws.worktree("gitlab-1", "task1", "forgebot/7-file-api", "origin/main")
    assert (tree / "src" / "Api.php").exists()
    (tree / "src" / "Api.php").write_text("<?php\nfunction create() {}\n")
    sha = commit(tree, "Add create()")
    assert sha is not None and commit(tree, "nothing") is None
    assert git("log", "-1", "--format=%an <%ae>|%cn", cwd=tree) == "forgebot <bot@forgebot.invalid>|forgebot"

    assert await ws.is_clean(tree) and git("rev-list", "origin/main..HEAD", cwd=tree) == sha
    (tree / "scratch.txt").write_text("untracked\n")
    assert not await ws.is_clean(tree)
    (tree / "scratch.txt").unlink()
    assert await ws.read_file("gitlab-1", "origin/main", "README.md") == "hello\n"
    assert await ws.read_file("gitlab-1", "origin/main", "missing.yml") is None
    with pytest.raises(ValueError):
        await ws.read_file("gitlab-1", "origin/main", "../outside")
    await ws.push(tree, str(origin), "forgebot/7-file-api")
    assert git("rev-parse", "refs/heads/forgebot/7-file-api", cwd=origin) == sha
    await ws.cleanup("gitlab-1", "task1")
    assert not tree.exists()
    assert git("worktree", "list", cwd=mirror).count("\n") == 0  # only the mirror itself is left


async def test_retried_task_reuses_its_worktree_and_names_are_checked(tmp_path: Path) -> None:
    origin = make_origin(tmp_path)
    ws = local_workspaces(tmp_path)
    await ws.mirror("gitlab-1", str(origin))
    first = await ws.worktree("gitlab-1", "task1", "forgebot/1-a", "origin/main")
    (first / "work.txt").write_text("in progress\n")
    again = await ws.worktree("gitlab-1", "task1", "forgebot/1-a", "origin/main")
    assert again == first and (again / "work.txt").exists()
    with pytest.raises(GitError, match="already works on"):
        await ws.worktree("gitlab-1", "task1", "forgebot/other", "origin/main")
    with pytest.raises(ValueError):
        await ws.worktree("gitlab-1", "../escape", "forgebot/1-a", "origin/main")
    with pytest.raises(GitError):
        await ws.worktree("gitlab-1", "task2", "bad..branch", "origin/main")
    with pytest.raises(ValueError):
        await ws.worktree("gitlab-1", "task2", "forgebot/2-b", "--upload-pack=touch /tmp/x")
    with pytest.raises(ValueError):
        await ws.mirror("gitlab-1", "--upload-pack=touch /tmp/x")
    assert repo_key("github", "octo/app") == "github-octo__app"


async def test_malicious_hooks_and_fsmonitor_never_run(tmp_path: Path) -> None:
    origin = make_origin(tmp_path)
    ws = local_workspaces(tmp_path)
    mirror = await ws.mirror("gitlab-1", str(origin))
    witness = tmp_path / "pwned"
    script = f"#!/bin/sh\necho \"$0\" >> {witness}\n"
    hooks = mirror / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in ("post-checkout", "pre-commit", "commit-msg", "post-commit", "pre-push", "reference-transaction"):
        (hooks / name).write_text(script)
        (hooks / name).chmod(0o755)
    monitor = tmp_path / "fsmonitor.sh"
    monitor.write_text(script)
    monitor.chmod(0o755)

    tree = await ws.worktree("gitlab-1", "task1", "forgebot/1-a", "origin/main")  # hooks in the default place
    (tree / "x.txt").write_text("x\n")
    commit(tree, "x")
    await ws.push(tree, str(origin), "forgebot/1-a")
    assert not witness.exists()

    # config naming a program in the bot's own mirror: git does not run at all
    git("config", "core.hooksPath", str(hooks), cwd=mirror)
    git("config", "core.fsmonitor", str(monitor), cwd=mirror)
    with pytest.raises(GitTampered, match="core.fsmonitor"):
        commit(tree, "y")
    with pytest.raises(GitTampered):
        await ws.mirror("gitlab-1", str(origin))
    assert not witness.exists()

    # control: the same repository under plain git runs both, so the assertions above can fail
    git("commit", "--quiet", "--allow-empty", "-m", "plain git", cwd=tree)
    git("status", "--porcelain", cwd=tree)
    ran = witness.read_text()
    assert "pre-commit" in ran and "fsmonitor.sh" in ran


async def test_submodules_are_not_fetched_and_transports_are_restricted(tmp_path: Path) -> None:
    inner = make_origin(tmp_path, "inner.git")
    origin = make_origin(tmp_path)
    clone = tmp_path / "with-sub"
    git("clone", "--quiet", str(origin), str(clone))
    git("-c", "protocol.file.allow=always", "submodule", "add", "--quiet", str(inner), "vendor/inner", cwd=clone)
    git("commit", "--quiet", "-m", "add submodule", cwd=clone)
    git("push", "--quiet", "origin", "main", cwd=clone)

    ws = local_workspaces(tmp_path)
    await ws.mirror("gitlab-1", str(origin))
    tree = await ws.worktree("gitlab-1", "task1", "forgebot/1-a", "origin/main")
    assert (tree / ".gitmodules").exists() and list((tree / "vendor" / "inner").iterdir()) == []

    https_only = Workspaces(tmp_path / "ws2", WorkspaceSettings())
    with pytest.raises(GitError, match="not allowed"):
        await https_only.mirror("gitlab-1", str(origin))


async def test_token_push_over_http_stores_the_token_nowhere(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    origin = make_origin(tmp_path)
    auth = GitCredentials(username="oauth2", token=SecretStr(TOKEN))
    expected = "Basic " + base64.b64encode(f"oauth2:{TOKEN}".encode()).decode()
    with serving(create_git_server(origin.parent, expected)) as server:
        ws = Workspaces(tmp_path / "ws", WorkspaceSettings(allowed_protocols=("http",)),
                        origins=frozenset({origin_of(server.url)}) - {None})  # type: ignore[arg-type]
        url = f"{server.url}/{origin.name}"
        await ws.mirror("gitlab-1", url, auth)
        tree = await ws.worktree("gitlab-1", "task1", "forgebot/1-a", "origin/main")
        (tree / "new.txt").write_text("new\n")
        sha = commit(tree, "new file")
        await ws.push(tree, url, "forgebot/1-a", auth)
        with pytest.raises(GitError) as refused:
            await ws.push(tree, url, "forgebot/1-a", GitCredentials(username="oauth2", token=SecretStr(TOKEN + "x")))
    assert git("rev-parse", "refs/heads/forgebot/1-a", cwd=origin) == sha
    assert TOKEN not in str(refused.value)
    for directory, _, files in os.walk(ws.root):
        for name in files:
            assert TOKEN.encode() not in (Path(directory) / name).read_bytes(), name
    assert TOKEN not in caplog.text


async def test_disk_bound_removes_finished_tasks_only(tmp_path: Path) -> None:
    origin = make_origin(tmp_path)
    ws = local_workspaces(tmp_path)
    await ws.mirror("gitlab-1", str(origin))
    for task in ("old", "done", "active"):
        tree = await ws.worktree("gitlab-1", task, f"forgebot/{task}", "origin/main")
        (tree / "blob.bin").write_bytes(os.urandom(200_000))
    ws.settings.max_bytes = ws.usage() - 150_000  # one finished task must go
    await ws.enforce_bound(active={"active"})
    remaining = sorted(p.name for p in (ws.root / "tasks").iterdir())
    assert remaining == ["active", "done"]  # the oldest finished task went first
    ws.settings.max_bytes = 1_000
    with pytest.raises(WorkspaceFull):
        await ws.enforce_bound(active={"active"})
    assert (ws.root / "tasks" / "active" / "blob.bin").exists()
    assert ws.mirror_path("gitlab-1").exists()  # the active task's mirror stays


async def test_disk_bound_removes_idle_mirrors_least_recently_fetched_first(tmp_path: Path) -> None:
    origin = make_origin(tmp_path)
    ws = local_workspaces(tmp_path)
    for key in ("gitlab-old", "gitlab-busy", "gitlab-new"):
        await ws.mirror(key, str(origin))
    await ws.worktree("gitlab-busy", "running", "forgebot/running", "origin/main")
    os.utime(ws.mirror_path("gitlab-old") / "FETCH_HEAD", (1, 1))  # fetched long ago
    os.utime(ws.mirror_path("gitlab-busy") / "FETCH_HEAD", (2, 2))  # older still than new, but in use
    ws.settings.max_bytes = ws.usage() - 1  # one idle mirror is enough
    assert await ws.enforce_bound(active={"running"}) == ["gitlab-old"]
    assert sorted(p.name for p in (ws.root / "mirrors").iterdir()) == ["gitlab-busy.git", "gitlab-new.git"]


@pytest.mark.parametrize(("stderr", "reason"), [
    # GitHub, an App pushing a change to a workflow file
    (" ! [remote rejected] HEAD -> forgebot/1-x (refusing to allow a GitHub App to create or update workflow "
     "`.github/workflows/ci.yml` without `workflows` permission)\nerror: failed to push some refs to 'https://g/o/r.git'",
     "refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` "
     "permission"),
    # GitHub, a protected branch pattern
    ("remote: error: GH006: Protected branch update failed for refs/heads/forgebot/1-x.\nremote: error: Changes must "
     "be made through a pull request.\n ! [remote rejected] HEAD -> forgebot/1-x (protected branch hook declined)",
     "GH006: Protected branch update failed for refs/heads/forgebot/1-x. Changes must be made through a pull request. "
     "protected branch hook declined"),
    # an account without push rights
    ("remote: Permission to o/r.git denied to forgebot.\nfatal: unable to access 'https://g/o/r.git/': The requested "
     "URL returned error: 403", "Permission to o/r.git denied to forgebot."),
    # GitLab, a push rule
    ("remote: GitLab: Commit message does not follow the pattern '^JIRA-'        \nTo https://gl/o.git\n ! [remote "
     "rejected] HEAD -> forgebot/1-x (pre-receive hook declined)", "GitLab: Commit message does not follow the "
     "pattern '^JIRA-'"),
    # not a refusal: the network, or git's own non-fast-forward check
    ("fatal: unable to access 'https://g/': Could not resolve host: g", None),
    (" ! [rejected]        HEAD -> forgebot/1-x (fetch first)", None),
])
def test_push_refusal_quotes_the_forge(stderr: str, reason: str | None) -> None:
    assert push_refusal(stderr) == reason


def test_every_repository_name_the_forges_allow_has_a_key() -> None:
    """A GitHub owner of 39 characters with a repository name of 100, or a name holding `..`: the key
    was refused (ValueError) and every task on such a repository stopped before its mirror."""
    longest = "o" * 39 + "/" + "r" * 100
    keys = {repo_key("github", name) for name in (longest, "octo/my..app", longest[:-1] + "s")}
    assert len(keys) == 3 and all(len(key) <= 128 and ".." not in key for key in keys)
    assert repo_key("github", "octo/app") == "github-octo__app" and repo_key("gitlab", "42") == "gitlab-42"  # unchanged


async def test_a_clean_up_git_refuses_never_replaces_how_the_task_ended(tmp_path: Path,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    """`release` runs where a task's end is recorded: a `worktree prune` that git refused there (past the
    git time limit under load, in CI) raised, and its traceback replaced the task's own failure. It is
    logged now; what is left, retention removes."""
    from foundation.forge import RepoRef
    from foundation.settings import Settings
    from graph.checkout import release

    origin = make_origin(tmp_path)
    settings = Settings(data_dir=tmp_path / "data")
    settings.workspace.allowed_protocols = ("file",)
    repo = RepoRef(forge="local", project="p1", path="p1", clone_url=str(origin))
    spaces = Workspaces.for_settings(settings)
    mirror = await spaces.mirror(repo_key("local", "p1"), str(origin))
    await spaces.worktree(repo_key("local", "p1"), "task1", "forgebot/1-a", "origin/main")
    shutil.rmtree(mirror / "objects")  # git now refuses every command on the mirror (a GitError, not tampering)
    with caplog.at_level(logging.WARNING, logger="graph.checkout"):
        await release(settings, repo, "task1")
    assert any("its worktree was not removed" in r.getMessage() for r in caplog.records)


def test_the_bots_author_is_the_configured_one_else_the_accounts_else_the_placeholder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each of name and email falls back on its own; a blank value (a chart's empty string) is unset, not an
    empty author git would refuse; the placeholder stays the bot's own for a branch an earlier release wrote."""
    from foundation.settings import DEFAULT_AUTHOR, Settings

    monkeypatch.setenv("FORGEBOT_WORKSPACE__AUTHOR_EMAIL", " ")
    monkeypatch.setenv("FORGEBOT_WORKSPACE__AUTHOR_NAME", "Platform Bot")
    workspace = Settings(_env_file=None, _secrets_dir=None).workspace  # type: ignore[call-arg]
    assert workspace.author("gitlab") == ("Platform Bot", DEFAULT_AUTHOR[1])
    assert workspace.own_emails("gitlab") == (DEFAULT_AUTHOR[1],)
    workspace.learn_author("gitlab", "forgebot", "4242-forgebot@users.noreply.gitlab.example.com")
    assert workspace.author("gitlab") == ("Platform Bot", "4242-forgebot@users.noreply.gitlab.example.com")
    assert workspace.own_emails("gitlab") == ("4242-forgebot@users.noreply.gitlab.example.com", DEFAULT_AUTHOR[1])
    assert workspace.author("github") == ("Platform Bot", DEFAULT_AUTHOR[1])  # GitLab's email is not GitHub's
    configured = workspace.model_copy(update={"author_email": "bot@corp.example"})
    assert configured.author("gitlab")[1] == "bot@corp.example"
    assert configured.own_emails("gitlab") == ("bot@corp.example",)
