"""The check sandbox: clean environment, timeouts that kill the group, limits, and honest reports."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from project.sandbox import INTERPRETER, SandboxPolicy, build_environment
from tests.sandboxes import run_sandboxed
from tests.tools import need_namespaces

SECRETS = {
    "FORGEBOT_GITLAB__TOKEN": "glpat-sandbox-leak",
    "FORGEBOT_LLM__API_KEY": "sk-sandbox-leak",
    "GITHUB_TOKEN": "ghp_sandbox_leak",
    "OPENAI_API_KEY": "sk-openai-leak",
    "AWS_SECRET_ACCESS_KEY": "aws-leak",
}
BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/root", **SECRETS}


def _processes_with(marker: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in text:
            found.append(text)
    return found


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    path = tmp_path / "worktree"
    path.mkdir()
    (path / "README.md").write_text("hello\n")
    return path


@pytest.mark.parametrize("isolate", [True, False])
def test_a_check_that_reads_the_environment_finds_no_secret(worktree: Path, isolate: bool) -> None:
    policy = SandboxPolicy(allow_root=True, isolate=isolate, allow_unisolated=True)
    result = run_sandboxed("env", worktree, policy, BASE_ENV)
    assert result.status == "passed"
    for name, value in SECRETS.items():
        assert name not in result.output and value not in result.output
    assert "PATH=/usr/local/bin:/usr/bin:/bin" in result.output
    assert "HOME=/root" not in result.output  # a throwaway HOME: no ~/.composer/auth.json, no ~/.netrc
    assert "clean_environment" in result.enforced


@pytest.mark.parametrize("name", ["GITLAB_TOKEN", "FORGEBOT_DATA_DIR", "DB_PASSWORD", "STRIPE_API_KEY"])
def test_allow_listing_a_secret_looking_name_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="looks like a secret"):
        build_environment(BASE_ENV, SandboxPolicy(allow_root=True, env_allow=("PATH", name)), tmp_path, tmp_path)
    with pytest.raises(ValueError, match="looks like a secret"):
        build_environment(BASE_ENV, SandboxPolicy(allow_root=True, env={name: "x"}), tmp_path, tmp_path)


def test_exit_status_decides_passed_or_failed(worktree: Path) -> None:
    assert run_sandboxed("cat README.md", worktree, SandboxPolicy(allow_root=True), BASE_ENV).status == "passed"
    failed = run_sandboxed("echo broken >&2; exit 3", worktree, SandboxPolicy(allow_root=True), BASE_ENV)
    assert (failed.status, failed.exit_code) == ("failed", 3)
    assert "broken" in failed.output  # stderr is part of the output


@pytest.mark.parametrize("isolate", [True, False])
def test_a_check_over_its_timeout_is_killed_with_its_children(worktree: Path, isolate: bool) -> None:
    marker = f"98765.{int(isolate)}"
    result = run_sandboxed(
        f"sleep {marker} & sleep {marker}; echo never",
        worktree,
        SandboxPolicy(allow_root=True, timeout_seconds=1, isolate=isolate, allow_unisolated=True),
        BASE_ENV,
    )
    assert result.status == "timed_out" and result.exit_code is None
    assert "never" not in result.output
    assert _processes_with(marker) == []


def test_a_background_child_does_not_hold_the_result(worktree: Path) -> None:
    unisolated = SandboxPolicy(allow_root=True, isolate=False, allow_unisolated=True)
    result = run_sandboxed("(sleep 54321 &); echo done", worktree, unisolated, BASE_ENV)
    # a runner that waited for the child would wait its 54321 s (the test's timeout ends it first)
    assert result.status == "passed" and result.output == "done\n"
    assert _processes_with("54321") == []


def test_output_keeps_only_the_tail(worktree: Path) -> None:
    script = "i=0; while [ $i -lt 3000 ]; do echo line-$i; i=$((i+1)); done; echo LAST"
    result = run_sandboxed(script, worktree, SandboxPolicy(allow_root=True, output_limit_bytes=1000), BASE_ENV)
    assert result.output_truncated and len(result.output.encode()) <= 1000
    assert result.output.endswith("LAST\n") and "line-0\n" not in result.output


def test_memory_limit_stops_a_large_allocation(worktree: Path) -> None:
    command = f"{sys.executable} -c 'b = bytearray(1 << 30); print(len(b))'"
    limited = run_sandboxed(command, worktree, SandboxPolicy(allow_root=True, memory_bytes=256 * 1024**2), BASE_ENV)
    assert limited.status == "failed" and "MemoryError" in limited.output  # RLIMIT_AS, per process
    assert "memory_limit" not in limited.enforced  # the whole check's is only sampled, and says so
    assert "sampled every 50 ms" in limited.not_enforced["memory_limit"]


def test_a_check_cannot_fake_a_sandbox_error_or_escape_its_signals(worktree: Path) -> None:
    faked = run_sandboxed(
        "echo 'forgebot-sandbox: setup failed: x'; exit 125", worktree, SandboxPolicy(allow_root=True), BASE_ENV
    )
    assert (faked.status, faked.exit_code) == ("failed", 125)
    killed = run_sandboxed("kill -9 $$", worktree, SandboxPolicy(allow_root=True), BASE_ENV)  # not PID 1: it works
    assert killed.status == "failed" and killed.exit_code in (137, -9)


def test_cpu_limit_stops_a_busy_loop_before_the_timeout(worktree: Path) -> None:
    result = run_sandboxed(
        "while :; do :; done", worktree, SandboxPolicy(allow_root=True, cpu_seconds=1, timeout_seconds=20), BASE_ENV
    )
    assert result.status == "failed"  # stopped by the CPU limit: a check killed at its timeout is `timed_out`


def test_without_isolation_the_missing_limits_are_reported(worktree: Path) -> None:
    result = run_sandboxed(
        "true",
        worktree,
        SandboxPolicy(allow_root=True, isolate=False, allow_unisolated=True, hidden_paths=(worktree.parent / "data",)),
        BASE_ENV,
    )
    assert result.status == "passed"
    expected = {"no_network", "private_pids", "private_tmp", "dropped_capabilities", "hidden_paths"}
    assert expected <= set(result.not_enforced)
    assert "isolation disabled" in result.not_enforced["no_network"]


def test_without_isolation_and_without_consent_nothing_runs(worktree: Path) -> None:
    result = run_sandboxed("touch ran", worktree, SandboxPolicy(allow_root=True, isolate=False), BASE_ENV)
    assert result.status == "refused" and not (worktree / "ran").exists()
    assert "isolation disabled" in result.output and "no_network" in result.not_enforced


def test_network_allowed_by_policy_is_reported_not_assumed(worktree: Path) -> None:
    result = run_sandboxed("true", worktree, SandboxPolicy(allow_root=True, network=True), BASE_ENV)
    assert "no_network" not in result.enforced
    assert "no_network" in result.not_enforced


@pytest.fixture
def listener() -> Iterator[int]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


def test_isolated_checks_have_no_network(worktree: Path, listener: int) -> None:
    need_namespaces()
    probe = f"{sys.executable} -c 'import socket; socket.create_connection((\"127.0.0.1\", {listener}), 2)'"
    unisolated = SandboxPolicy(allow_root=True, isolate=False, allow_unisolated=True)
    open_result = run_sandboxed(probe, worktree, unisolated, BASE_ENV)
    assert open_result.status == "passed"  # the listener is reachable from outside the sandbox
    closed = run_sandboxed(probe, worktree, SandboxPolicy(allow_root=True), BASE_ENV)
    assert closed.status == "failed" and "no_network" in closed.enforced
    assert "Network is unreachable" in closed.output or "refused" in closed.output


def test_isolated_checks_cannot_see_the_data_directory(tmp_path: Path) -> None:
    need_namespaces()
    data = tmp_path / "data"
    (data / "worktrees" / "task-1").mkdir(parents=True)
    (data / "tasks.sqlite").write_text("secret task store\n")
    worktree = data / "worktrees" / "task-1"  # worktrees may live under the data directory
    (worktree / "code.php").write_text("<?php\n")
    script = f"cat {data}/tasks.sqlite; ls {data}; cat code.php; umount {data} && echo UN''MOUNTED"
    script += "; cat /proc/1/comm"
    result = run_sandboxed(script, worktree, SandboxPolicy(allow_root=True, hidden_paths=(data,)), BASE_ENV)
    assert "secret task store" not in result.output, result.output
    assert "UNMOUNTED" not in result.output, result.output
    assert "<?php" in result.output  # the worktree itself stays reachable
    assert "hidden_paths" in result.enforced and "private_pids" in result.enforced
    assert result.output.rstrip().endswith(INTERPRETER.name[:15])  # PID 1: the sandbox's init, not the bot


def test_a_hidden_path_inside_the_worktree_is_refused(worktree: Path) -> None:
    with pytest.raises(ValueError, match="inside the worktree"):
        run_sandboxed("true", worktree, SandboxPolicy(allow_root=True, hidden_paths=(worktree / "vendor",)), BASE_ENV)


def test_a_missing_worktree_is_an_error_not_a_failure(tmp_path: Path) -> None:
    result = run_sandboxed("true", tmp_path / "absent", SandboxPolicy(allow_root=True), BASE_ENV)
    assert result.status == "error" and "not a directory" in result.output
