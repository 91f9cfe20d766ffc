"""Attacks on the check sandbox from a repository's own check commands, with real processes.

Each test runs a check the way the product does — the policy `project.checks.sandbox_policy` builds
from the settings — and shows the attack refused: the secrets directory, the data directory and the
Redis socket are empty or absent, the worker's environment is not there, a local listener receives
no connection, host /tmp stays untouched, a fork bomb stops at the process limit, a huge file at the
file-size limit. Where the host refuses namespaces (a real kernel refusal: `max_user_namespaces`
set to 0 in an enclosing user namespace, or `unshare` missing from the worker's PATH), checks are
not run unless `sandbox.allow_unisolated` accepts it, nor for a worker running as root unless
`sandbox.allow_root` does, and the status comment and the merge request description say why or
what was missing. The host's own protections (read-only root, disk, memory, install network) are
in `test_sandbox_host.py`.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli.redisserver import PrivateRedis
from foundation.settings import SandboxSettings, Settings
from project.checks import sandbox_policy
from project.repoconfig import RepoConfig
from project.sandbox import INTERPRETER, SandboxPolicy, SandboxResult, probe_isolation
from tests.fakes.forge_http import FakeForgeState
from tests.sandboxes import run_sandboxed
from tests.security.conftest import accepted
from tests.tools import need, need_namespaces

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "glpat-escape-0123456789abcdef"
WORKER_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "FORGEBOT_GITLAB__TOKEN": TOKEN,
              "OPENAI_API_KEY": "sk-escape-0123456789abcdef", "HOME": "/root"}
UNPRIVILEGED = 10001  # the chart's uid


def _settings(data_dir: Path, **fields: object) -> Settings:
    """The worker's settings; the suite runs as root, which the sandbox refuses unless accepted."""
    fields.setdefault("sandbox", SandboxSettings(allow_root=True))
    return Settings(_env_file=None, _secrets_dir=None, data_dir=data_dir, **fields)  # type: ignore[call-arg]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A data directory as the worker keeps it, the task's worktree inside it."""
    data = tmp_path / "data"
    (data / "workspaces" / "tasks" / "task-1").mkdir(parents=True)
    (data / "workspaces" / "tasks" / "task-2").mkdir(parents=True)
    (data / "workspaces" / "tasks" / "task-2" / "other.php").write_text("<?php // another project\n")
    (data / "inbox.sqlite").write_text("task store\n")
    (data / "workspaces" / "tasks" / "task-1" / "code.php").write_text("<?php\n")
    return data


def _worktree(data_dir: Path) -> Path:
    return data_dir / "workspaces" / "tasks" / "task-1"


def _run(command: str, settings: Settings, worktree: Path, **update: object) -> SandboxResult:
    policy = sandbox_policy(settings, RepoConfig()).model_copy(update={"timeout_seconds": 30, **update})
    return run_sandboxed(command, worktree, policy, WORKER_ENV)


@pytest.fixture
def secrets_outside_tmp() -> Iterator[Path]:
    """A secrets directory outside /tmp (the private /tmp alone would hide anything under it)."""
    secrets = Path(tempfile.mkdtemp(prefix=".fb-secrets-", dir=Path.home()))
    (secrets / "gitlab__token").write_text("glpat-attacks-on-the-check-sandbox")
    try:
        yield secrets
    finally:
        shutil.rmtree(secrets, ignore_errors=True)


def test_a_check_cannot_read_the_configured_secrets_directory(data_dir: Path, secrets_outside_tmp: Path) -> None:
    need_namespaces()
    secrets = secrets_outside_tmp
    assert not secrets.is_relative_to("/tmp")
    settings = _settings(data_dir, secrets_dir=secrets)
    command = f"ls -a {secrets}; cat {secrets}/gitlab__token; cat code.php"
    result = _run(command, settings, _worktree(data_dir))
    assert "attacks-on-the-check-sandbox" not in result.output.lower()
    assert result.output.startswith(".\n..\ncat: ")  # an empty directory where the secrets were
    assert "<?php" in result.output  # the worktree stays reachable
    assert "hidden_paths" in result.enforced
    assert Path("/etc/forgebot/secrets") in sandbox_policy(settings, RepoConfig()).hidden_paths  # the chart's


def test_a_check_cannot_read_the_data_directory_or_another_worktree(data_dir: Path) -> None:
    need_namespaces()
    other = data_dir / "workspaces" / "tasks" / "task-2" / "other.php"
    read = _run(f"cat {data_dir}/inbox.sqlite {other}", _settings(data_dir), _worktree(data_dir))
    assert read.status == "failed" and "task store" not in read.output and "another project" not in read.output
    listed = _run(f"ls -R {data_dir}", _settings(data_dir), _worktree(data_dir))
    assert "inbox.sqlite" not in listed.output and "task-2" not in listed.output
    assert "task-1" in listed.output  # only the path down to its own worktree


def test_a_check_cannot_reach_the_redis_socket(data_dir: Path, tmp_path: Path) -> None:
    need_namespaces()
    server = PrivateRedis(tmp_path / "redis")
    server.start()
    try:
        settings = _settings(data_dir, redis_url=server.url)
        assert server.socket.resolve() in sandbox_policy(settings, RepoConfig()).hidden_paths
        probe = (f"{INTERPRETER} -c 'import socket; s = socket.socket(socket.AF_UNIX); "
                 f"s.connect(\"{server.socket}\"); s.sendall(b\"PING\\r\\n\"); print(s.recv(64))'")
        result = _run(probe, settings, _worktree(data_dir))
        assert result.status == "failed" and "PONG" not in result.output
        assert "No such file" in result.output or "refused" in result.output
    finally:
        server.stop()


def test_env_shows_no_secret_of_the_worker(data_dir: Path) -> None:
    need_namespaces()
    result = _run("env; cat /proc/1/environ; cat /proc/*/environ", _settings(data_dir), _worktree(data_dir))
    assert TOKEN not in result.output and "sk-escape" not in result.output
    assert "FORGEBOT_" not in result.output and "HOME=/root" not in result.output


def _connect(port: int) -> str:
    return f"{INTERPRETER} -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 3); print(\"IN\")'"


def test_a_check_cannot_connect_to_a_local_listener(data_dir: Path, listener: socket.socket) -> None:
    need_namespaces()
    result = _run(_connect(listener.getsockname()[1]), _settings(data_dir), _worktree(data_dir))
    assert result.status == "failed" and "IN" not in result.output
    assert not accepted(listener)


def test_writes_to_tmp_stay_inside_the_sandbox(data_dir: Path, tmp_path: Path) -> None:
    need_namespaces()
    name = f"forgebot-escape-{uuid.uuid4().hex}"
    (tmp_path / "host-only").write_text("on the host's /tmp\n")
    command = f"echo x > /tmp/{name} && echo x > /var/tmp/{name} && echo x > $TMPDIR/{name}.2 && ls -a {tmp_path}"
    result = _run(command, _settings(data_dir), _worktree(data_dir))
    assert result.status == "passed"
    assert not Path("/tmp", name).exists() and not Path("/var/tmp", name).exists()
    assert not Path("/tmp", f"{name}.2").exists()
    assert "host-only" not in result.output  # the host's /tmp is not there, only the worktree's path


def test_private_tmp_is_size_limited(data_dir: Path) -> None:
    need_namespaces()
    settings = _settings(data_dir, sandbox=SandboxSettings(tmp_mb=1, allow_root=True))
    result = _run("head -c 3000000 /dev/zero > /tmp/fill", settings, _worktree(data_dir))
    assert result.status == "failed" and "No space left" in result.output


def test_a_huge_file_stops_at_the_file_size_limit(data_dir: Path) -> None:
    settings = _settings(data_dir, sandbox=SandboxSettings(max_file_mb=1, allow_unisolated=True, allow_root=True))
    result = _run("head -c 50000000 /dev/zero > big; echo status=$?; wc -c < big", settings, _worktree(data_dir))
    assert "file_size_limit" in result.enforced
    assert int(result.output.split()[-1]) <= 2**20  # the file stopped at the limit
    assert "status=0" not in result.output


def test_without_namespaces_the_disk_limit_is_measured_after_and_says_so(data_dir: Path) -> None:
    settings = _settings(data_dir, sandbox=SandboxSettings(disk_mb=1, allow_unisolated=True, allow_root=True))
    policy = sandbox_policy(settings, RepoConfig()).model_copy(update={"timeout_seconds": 30, "isolate": False})
    result = run_sandboxed("for i in 1 2 3; do head -c 900000 /dev/urandom > blob$i; done", _worktree(data_dir),
                           policy, WORKER_ENV)
    assert result.status == "failed" and "over the 1 MiB disk limit" in result.limit_exceeded
    assert "measured after each command" in result.not_enforced["disk_limit"]


# --- process limit: enforced by the kernel for the chart's unprivileged uid, never for root ---------

_BOMB = """
import json, os, sys
sys.path[:0] = sys.argv[1].split(":")
from pathlib import Path
from project.sandbox import SandboxPolicy
from tests.sandboxes import run_sandboxed
counter = "import os, time\\nn = 0\\ntry:\\n    while True:\\n        if os.fork() == 0:\\n" \\
    "            time.sleep(20)\\n            os._exit(0)\\n        n += 1\\nexcept OSError as e:\\n" \\
    "    print('forks', n, e.strerror)\\n"
policy = SandboxPolicy(max_processes=40, timeout_seconds=15)
result = run_sandboxed(f"python3 -c \\"{counter}\\"", Path(sys.argv[2]), policy, {"PATH": "/usr/bin:/bin"})
short = policy.model_copy(update={"timeout_seconds": 3})
bomb = run_sandboxed("b() { b | b & }; b; sleep 10", Path(sys.argv[2]), short, {"PATH": "/usr/bin:/bin"})
print(json.dumps({"counter": result.model_dump(), "bomb": bomb.model_dump()}))
"""


@pytest.fixture
def shared_worktree() -> Iterator[Path]:
    """A worktree the unprivileged uid can use (pytest's tmp_path is private to root)."""
    root = Path(tempfile.mkdtemp(prefix="forgebot-escape-"))
    os.chmod(root, 0o755)
    worktree = root / "worktree"
    worktree.mkdir()
    os.chown(worktree, UNPRIVILEGED, UNPRIVILEGED)
    yield worktree
    shutil.rmtree(root)


def test_a_fork_bomb_stops_at_the_process_limit(shared_worktree: Path) -> None:
    setpriv, system_python = shutil.which("setpriv"), Path("/usr/bin/python3")
    need(os.getuid() == 0 and setpriv is not None and system_python.is_file(),
         "root, setpriv and /usr/bin/python3 (to become the chart's unprivileged uid)")
    assert setpriv is not None
    site = next(Path(sys.prefix, "lib").glob("python3*/site-packages"))
    as_worker = [setpriv, f"--reuid={UNPRIVILEGED}", f"--regid={UNPRIVILEGED}", "--clear-groups"]
    done = subprocess.run([*as_worker, str(system_python), "-I", "-c", _BOMB, f"{ROOT}:{site}", str(shared_worktree)],
                          capture_output=True, text=True, timeout=120, check=False, cwd="/")
    need(done.returncode == 0 or "ModuleNotFoundError" not in done.stderr,
         f"a /usr/bin/python3 that loads this venv ({done.stderr.strip().splitlines()[-1:]})")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    counter, bomb = report["counter"], report["bomb"]
    need("pid_limit" in counter["enforced"], f"user namespaces for uid {UNPRIVILEGED} ({counter['output']})")
    forks = int(counter["output"].split()[1])
    assert 20 <= forks < 40 and "Resource temporarily unavailable" in counter["output"]
    # killed at the timeout, or the shell itself could not fork `sleep` any more: either way it ended
    assert bomb["status"] in ("timed_out", "failed")
    assert _none_left(UNPRIVILEGED, within=10)  # the bomb's processes died with its PID namespace


def _none_left(uid: int, within: float) -> bool:
    """Wait until no process of `uid` is left (a PID namespace is torn down asynchronously)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = subprocess.run(["pgrep", "-u", str(uid)], capture_output=True, text=True, check=False)
        if not found.stdout.strip():
            return True
        time.sleep(0.05)
    return False


# --- a host without namespaces: the kernel refuses, checks do not run unless accepted ------------------

_NO_NAMESPACES = """
import json, sys
from pathlib import Path
from foundation.settings import SandboxSettings, Settings
from project.checks import context_for, run_checks
from project.repoconfig import parse_repo_config
data, allow = Path(sys.argv[1]), sys.argv[2] == "allow"
settings = Settings(_env_file=None, _secrets_dir=None, data_dir=data,
                    sandbox=SandboxSettings(allow_unisolated=allow, allow_root=True))
config = parse_repo_config("commands:\\n  test: cat " + str(data) + "/inbox.sqlite\\n  lint: false\\n")
context = context_for(data / "workspaces" / "tasks" / "task-1", config, [], settings, {"PATH": "/usr/bin:/bin"})
(test,) = run_checks(context, ("test",)).results
print(json.dumps({"status": test.status, "reason": test.reason, "output": test.output,
                  "not_enforced": test.not_enforced}))
"""


def _without_user_namespaces(data_dir: Path, allow: bool) -> dict[str, object]:
    """Run the checks in a process whose kernel refuses new user namespaces (max_user_namespaces=0)."""
    need_namespaces()
    unshare = shutil.which("unshare")
    assert unshare is not None
    script = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'
    argv = [unshare, "--user", "--map-root-user", "sh", "-c", script, "sh", sys.executable, "-c", _NO_NAMESPACES,
            str(data_dir), "allow" if allow else "refuse"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=ROOT,
                          env={"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_without_namespaces_checks_are_not_run(data_dir: Path) -> None:
    result = _without_user_namespaces(data_dir, allow=False)
    assert result["status"] == "not_run" and "task store" not in str(result["output"])
    assert "namespaces refused by the host" in str(result["reason"])
    assert "FORGEBOT_SANDBOX__ALLOW_UNISOLATED=true" in str(result["reason"])
    assert {"no_network", "hidden_paths", "private_tmp"} <= set(result["not_enforced"])  # type: ignore[arg-type]


def test_without_namespaces_the_accepting_setting_runs_them_and_lists_what_is_missing(data_dir: Path) -> None:
    result = _without_user_namespaces(data_dir, allow=True)
    assert result["status"] == "passed"  # it ran — and could read the data dir, which is why it is opt-in
    missing = result["not_enforced"]
    assert isinstance(missing, dict) and {"no_network", "hidden_paths", "private_pids"} <= set(missing)
    assert "namespaces refused by the host" in missing["no_network"]


def test_isolation_disabled_and_unaccepted_refuses_even_a_harmless_command(tmp_path: Path) -> None:
    result = run_sandboxed("touch ran", tmp_path, SandboxPolicy(isolate=False, allow_root=True), WORKER_ENV)
    assert result.status == "refused" and not (tmp_path / "ran").exists()
    assert "FORGEBOT_SANDBOX__ALLOW_UNISOLATED=true" in result.output


# --- through the service: a label on a host without `unshare`, the merge request and status say so ---

def _path_without(tmp_path: Path, tool: str) -> str:
    """The worker's PATH with `tool` taken out: every other program stays reachable by name."""
    bin_dir = tmp_path / f"path-without-{tool}"
    bin_dir.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            target = bin_dir / entry.name
            if entry.name != tool and not target.exists() and not target.is_symlink():
                target.symlink_to(entry.path)
    return str(bin_dir)


@pytest.mark.php
@pytest.mark.parametrize("case", ["refused", "accepted", "root"])
async def test_a_host_without_unshare_runs_no_checks_and_the_merge_request_says_why(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, case: str,
) -> None:
    """Through the service: a host without `unshare` (refused, or accepted by the operator), and a
    worker running as root that the operator has not accepted: the merge request and the status
    comment say which checks did not run, why, and which setting would accept it."""
    from tests.conftest import GITLAB_TOKEN
    from tests.e2e import implement_harness as h
    from tests.fakes.samples import sample
    from tests.intake import deliveries
    from tests.intake.payloads import serve_samples

    sample_body = sample("gitlab/issue.labels-changed.json")
    if case == "root":
        need(os.geteuid() == 0, "a worker running as root")
        settings.sandbox.allow_root = False
    else:
        monkeypatch.setenv("PATH", _path_without(tmp_path, "unshare"))  # the worker's own PATH
        assert "`unshare` not installed" in probe_isolation().reason
        settings.sandbox.allow_unisolated = case == "accepted"
    for served in h.served_project(tmp_path / "forge", "oauth2", GITLAB_TOKEN):
        settings.workspace.git_hosts = (served.url,)
        serve_samples(fake_forge, settings, clone_url=served.url)  # the repository as the forge resolves it
        h.setup(settings, redis_url, "Platform")
        fake_forge.grant("gitlab", "1", "1", 30)
        fake_forge.grant("gitlab", "1", "7", 30)
        h.issue(fake_forge, "gitlab", "1", 23)
        delivery = deliveries.gitlab(h.labelled(sample_body, served.url), "Issue Hook")
        assert await h.post(settings, "gitlab", *delivery) == 202
        assert (await h.work(settings, h.implement_roles().__getitem__)).jobs_failed == 0
    change = h.the_change(fake_forge, "gitlab", "1")
    (status,) = [c.body for c in fake_forge.comments_on("gitlab", "1", 23, status=True) if ":purpose=status" in c.body]
    for text in (change.body, status):
        if case == "root":
            assert "**Checks not run** (" in text and "the worker runs as root" in text
            assert "FORGEBOT_SANDBOX__ALLOW_ROOT=true" in text and "not run as root" in text
            continue
        assert "'unshare' not installed" in text  # the host's reason, as plain text
        if case == "accepted":
            assert "Checks ran without these sandbox protections" in text
            assert "- no network: 'unshare' not installed" in text
            assert "bot data, secrets and host sockets hidden" in text
        else:
            assert "**Checks not run** (" in text and "FORGEBOT_SANDBOX__ALLOW_UNISOLATED=true" in text
    if case == "accepted":
        assert "| test_runner | `passed` |" in change.body
    else:
        assert "| test_runner | `not_run` |" in change.body and "| test_runner | `passed` |" not in change.body


def test_check_output_quoted_by_the_model_is_redacted_in_the_description() -> None:
    """The failing line reaches the coder (fix context); a note that quotes it is redacted too."""
    from typing import cast

    from graph.nodes import delivery
    from graph.state import TaskState

    plan = {"items": [{"id": 1, "title": "Fix it", "criteria": [1], "paths": ["src/App.php"], "status": "done",
                       "note": f"the test printed {TOKEN} and configured-s3cret-value"}],
            "scope": {"writable": ["src/App.php"], "context_only": []}}
    state = cast(TaskState, {"task_id": "t1", "mode": "implement", "forge": "gitlab", "number": 3, "title": "T",
                             "criteria": [], "plan": plan, "gates": [], "started_at": 0.0})
    text = delivery.description(state, secrets=["configured-s3cret-value"])
    assert TOKEN not in text and "configured-s3cret-value" not in text and "[REDACTED]" in text
