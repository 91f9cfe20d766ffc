"""The runner's own limits against real git: time, output, environment, transports, secrets in errors."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from foundation.gitrunner import GitError, GitTampered, GitTimeout, Repo, environment, git, run

PLAIN = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
         "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.invalid", "GIT_COMMITTER_NAME": "a",
         "GIT_COMMITTER_EMAIL": "a@example.invalid"}


def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], env=PLAIN, check=True)
    (root / "big.txt").write_bytes(b"x" * 2_000_000)
    subprocess.run(["git", "add", "-A"], cwd=root, env=PLAIN, check=True)
    subprocess.run(["git", "commit", "-qm", "big"], cwd=root, env=PLAIN, check=True)
    return root


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    server.close()


def test_a_hanging_command_is_killed_at_its_timeout(tmp_path: Path, silent_server: int) -> None:
    root = checkout(tmp_path)
    with pytest.raises(GitTimeout, match="timed out after 1s"):
        run(["fetch", f"http://127.0.0.1:{silent_server}/x.git"], Repo.at(root), protocols=["http"], timeout=1)


def test_output_past_the_bound_kills_the_command(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    assert len(run(["show", "HEAD:big.txt"], Repo.at(root)).stdout) == 2_000_000
    with pytest.raises(GitError, match="output exceeds 1000000 bytes"):
        run(["show", "HEAD:big.txt"], Repo.at(root), max_output=1_000_000)


def test_secrets_and_url_passwords_never_reach_an_error(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    token = "glpat-never-in-an-error"
    for argument in (f"..{token}", f"http://oauth2:{token}@forge.example/x.git"):  # git echoes a bad name
        done = run(["check-ref-format", "--branch", argument], Repo.at(root), secrets=[token])
        assert done.returncode != 0 and "not a valid branch name" in done.stderr
        assert token not in done.stderr and "[REDACTED]" in done.stderr
    done = run(["check-ref-format", "--branch", "http://oauth2:hunter2@forge.example/x.git"], Repo.at(root))
    assert "hunter2" not in done.stderr and "://[REDACTED]@forge.example" in done.stderr


def test_transports_not_allowed_are_refused_even_if_the_repository_allows_them(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    other = checkout(tmp_path / "other")
    done = run(["fetch", str(other)], Repo.at(root))  # `file` is not in the allowed list
    assert done.returncode != 0 and "not allowed" in done.stderr
    assert run(["fetch", "-q", str(other)], Repo.at(root), protocols=["file"]).returncode == 0
    subprocess.run(["git", "config", "protocol.file.allow", "always"], cwd=root, env=PLAIN, check=True)
    with pytest.raises(GitTampered, match="protocol.file.allow"):
        run(["fetch", str(other)], Repo.at(root))


def test_the_environment_is_built_from_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_DIR", str(tmp_path))
    monkeypatch.setenv("FORGEBOT_GITLAB__TOKEN", "glpat-worker-token")
    env = environment({"http.extraHeader": "x"}, {"GIT_AUTHOR_NAME": "bot"})
    assert "GIT_DIR" not in env and "FORGEBOT_GITLAB__TOKEN" not in env
    assert env["GIT_CONFIG_GLOBAL"] == os.devnull and env["GIT_CONFIG_COUNT"] == "1"
    assert sorted(os.listdir(env["HOME"])) == []
    with pytest.raises(ValueError, match="GIT_EXTERNAL_DIFF"):
        environment({}, {"GIT_EXTERNAL_DIFF": "/bin/true"})
    root = checkout(tmp_path)
    assert git(root, "rev-parse", "--show-toplevel").strip() == str(root.resolve())


def test_a_users_repository_may_serve_partial_clones_but_not_run_a_program(tmp_path: Path) -> None:
    """`uploadpack.allowFilter` (a repository others clone with `--filter=blob:none`) and `protocol.version`
    only hold data: `forgebot run` refused such a repository outright. Keys under the same prefixes that
    run a program still stop git, and the refusal says how to remove one."""
    root = checkout(tmp_path)
    for key, value in (("uploadpack.allowFilter", "true"), ("uploadpack.allowAnySHA1InWant", "true"),
                       ("protocol.version", "2")):
        subprocess.run(["git", "config", key, value], cwd=root, env=PLAIN, check=True)
    assert git(root, "rev-parse", "HEAD").strip()
    subprocess.run(["git", "config", "uploadpack.packObjectsHook", "/bin/evil"], cwd=root, env=PLAIN, check=True)
    with pytest.raises(GitTampered, match=r"uploadpack.packobjectshook may not be set in this repository; refusing "
                                          r"to run git \(such a setting can run a program or read more configuration: "
                                          r"`git config --unset uploadpack.packobjectshook` removes it"):
        git(root, "rev-parse", "HEAD")
