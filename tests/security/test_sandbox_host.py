"""Attacks on the host from a check, through the real sandbox process, for a root and a non-root worker.

A check runs the repository's code. Each test runs it the way the product does (`open_sandbox` with
the policy `project.checks.sandbox_policy` builds, or `run_checks`) and shows the attack stopped:
it creates no file outside its worktree, its HOME and its private tmpfs — not in the worker
interpreter's site-packages, /usr/bin, the worker's HOME, its data directory or a `forgebot run`
user's `.git/hooks`, on no mount at all — writes past the disk limit fail while they are written
and leave nothing, the whole check's memory and processes are limited (the processes of a root
worker too), a root worker runs nothing unless the operator accepts it, and an install gets network
only when its repository asks, through a proxy that refuses loopback.

The non-root worker is the chart's uid 10001: the test (as root) starts the sandbox under
`setpriv --reuid=10001` with the system Python, which loads this checkout and its virtualenv.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from foundation.settings import SandboxSettings, Settings
from project.checks import context_for, run_checks, sandbox_policy
from project.repoconfig import RepoConfig, parse_repo_config
from project.sandbox import INTERPRETER, SandboxPolicy, SandboxResult
from tests.fakes.connect_proxy import ConnectProxy
from tests.sandboxes import run_sandboxed
from tests.security.conftest import accepted
from tests.tools import need, need_namespaces

ROOT = Path(__file__).resolve().parents[2]
UNPRIVILEGED = 10001  # the chart's uid
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
SYSTEM_PYTHON = Path("/usr/bin/python3")

# Inside the check: try to create a file at the root of every mount and in every named directory,
# and to open for writing the kernel's core_pattern and a host disk; report (and remove) what worked.
_CREATE_EVERYWHERE = r"""
import json, os, sys
marker, allowed, targets = sys.argv[1], sys.argv[2].split(":"), [t for t in sys.argv[3].split(":") if t]
def allowed_here(path):
    return any(path == a or path.startswith(a.rstrip("/") + "/") for a in allowed)
points = [line.split()[4].encode().decode("unicode_escape") for line in open("/proc/self/mountinfo")]
created = []
for directory in sorted(set(points + targets)):
    if allowed_here(directory) or not os.path.isdir(directory):
        continue
    path = os.path.join(directory, marker)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        continue
    os.unlink(path)
    created.append(directory)
opened = []
for path in ["/proc/sys/kernel/core_pattern"] + ["/dev/" + d for d in sorted(os.listdir("/dev"))]:
    if os.path.basename(path) in ("null", "zero", "full", "random", "urandom", "tty", "fd", "stdin", "stdout",
                                  "stderr", "ptmx", "pts", "shm"):
        continue
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        opened.append(path)
    except OSError:
        pass
print("RESULT " + json.dumps({"created": created, "opened": opened, "mounts": len(points)}))
"""

_DRIVER = """
import json, sys
sys.path[:0] = sys.argv[1].split(":")
from pathlib import Path
from project.sandbox import SandboxPolicy
from tests.sandboxes import run_sandboxed
spec = json.loads(sys.argv[2])
policy = SandboxPolicy.model_validate(spec["policy"])
print(json.dumps([run_sandboxed(command, Path(spec["worktree"]), policy, spec["env"]).model_dump(mode="json")
                  for command in spec["commands"]]))
"""


def _settings(data_dir: Path, **sandbox: Any) -> Settings:
    return Settings(_env_file=None, _secrets_dir=None, data_dir=data_dir,  # type: ignore[call-arg]
                    sandbox=SandboxSettings(**{"allow_root": True, **sandbox}))


def _run_as(uid: int, worktree: Path, policy: SandboxPolicy, commands: list[str]) -> list[SandboxResult]:
    """Run each of `commands` in a sandbox as a worker of `uid`: this process for root, else setpriv."""
    if uid == os.geteuid():
        return [run_sandboxed(command, worktree, policy, ENV) for command in commands]
    setpriv = shutil.which("setpriv")
    need(os.geteuid() == 0 and setpriv is not None and SYSTEM_PYTHON.is_file(),
         "root, setpriv and /usr/bin/python3 to become an unprivileged worker")
    assert setpriv is not None
    site = next(Path(sys.prefix, "lib").glob("python3*/site-packages"))
    spec = {"worktree": str(worktree), "policy": policy.model_dump(mode="json"), "env": ENV, "commands": commands}
    as_worker = [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    done = subprocess.run([*as_worker, str(SYSTEM_PYTHON), "-I", "-c", _DRIVER, f"{ROOT}:{site}", json.dumps(spec)],
                          capture_output=True, text=True, timeout=300, check=False, cwd="/")
    if done.returncode != 0 and "ModuleNotFoundError" in done.stderr:
        need(False, f"/usr/bin/python3 able to load this virtualenv ({done.stderr.strip().splitlines()[-1]})")
    assert done.returncode == 0, done.stderr
    return [SandboxResult.model_validate(r) for r in json.loads(done.stdout.strip().splitlines()[-1])]


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Path]:
    """A directory outside /tmp the unprivileged worker can use (pytest's tmp_path is root's and
    under /tmp, which the sandbox replaces anyway)."""
    root = Path(tempfile.mkdtemp(prefix=".forgebot-host-", dir="/var/lib" if os.access("/var/lib", os.W_OK)
                                 else Path.home()))
    os.chmod(root, 0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _worker_files(host: Path, uid: int) -> dict[str, Path]:
    """What a worker of `uid` owns: its HOME, its virtualenv, its data dir with the task's worktree,
    and a `forgebot run` user's checkout; all of it writable by that uid on the host."""
    paths = {
        "home": host / "home",
        "site-packages": host / "venv" / "lib" / "python3.11" / "site-packages",
        "data": host / "data",
        "worktree": host / "data" / "workspaces" / "tasks" / "task-1",
        "hooks": host / "checkout" / ".git" / "hooks",
    }
    for path in paths.values():
        path.mkdir(parents=True, exist_ok=True)
    (paths["worktree"] / "code.php").write_text("<?php\n")
    for path in host.rglob("*"):
        os.chown(path, uid, uid)
    os.chown(host, uid, uid)
    return paths


def _create_everywhere(uid: int, host: Path) -> dict[str, Any]:
    files = _worker_files(host, uid)
    marker = f"forgebot-attack-{uuid.uuid4().hex}"
    real_site = next(Path(sys.prefix, "lib").glob("python3*/site-packages"))
    interpreter_site = next(INTERPRETER.parents[1].glob("lib/python3*/site-packages"), INTERPRETER.parent)
    targets = [files["site-packages"], files["home"], files["data"], files["hooks"], real_site, interpreter_site,
               Path("/usr/bin"), Path("/etc"), Path.home(), Path("/var/lib"), Path("/")]
    settings = _settings(files["data"])
    policy = sandbox_policy(settings, RepoConfig()).model_copy(update={"timeout_seconds": 60})
    worktree = files["worktree"]
    script = f"{SYSTEM_PYTHON} -I -c '{_CREATE_EVERYWHERE}' {marker} \"$PWD:$HOME:/tmp:/var/tmp:/dev/shm\" "
    script += ":".join(map(str, targets))
    script += "; echo in-worktree > ./made-here && echo in-home > $HOME/made-here && echo ok > /tmp/made-here"
    script += " && cat ./made-here $HOME/made-here"
    (result,) = _run_as(uid, worktree, policy, [script])
    line = next(x for x in result.output.splitlines() if x.startswith("RESULT "))
    report: dict[str, Any] = json.loads(line.removeprefix("RESULT "))
    report["result"] = result
    report["left"] = [str(p) for p in [*host.rglob(marker), *host.rglob("made-here")]]
    for leftover in (*targets, worktree):  # whatever an unprotected run could create, removed again
        (Path(leftover) / marker).unlink(missing_ok=True)
    return report


@pytest.mark.parametrize("uid", [0, UNPRIVILEGED], ids=["root-worker", "unprivileged-worker"])
def test_a_check_creates_no_file_outside_its_worktree_home_and_tmp(host: Path, uid: int) -> None:
    need_namespaces()
    if uid == 0:
        need(os.geteuid() == 0, "a worker running as root")
    report = _create_everywhere(uid, host)
    result = report["result"]
    assert result.status == "passed", result.output
    assert "in-worktree\nin-home\n" in result.output  # the check still writes where it may
    assert report["mounts"] > 5  # it looked at every mount of its view
    assert report["created"] == [], f"a check created files in {report['created']}"
    assert report["opened"] == [], f"a check opened for writing {report['opened']}"
    assert report["left"] == []  # and its own writes to the worktree did not reach the host
    assert "read_only_root" in result.enforced


@pytest.mark.parametrize("uid", [0, UNPRIVILEGED], ids=["root-worker", "unprivileged-worker"])
def test_a_check_writing_past_the_disk_limit_is_stopped_while_writing_and_leaves_nothing(host: Path, uid: int) -> None:
    need_namespaces()
    if uid == 0:
        need(os.geteuid() == 0, "a worker running as root")
    worktree = _worker_files(host, uid)["worktree"]
    before, files_before = shutil.disk_usage(host).used, _bytes_under(host)
    settings = _settings(host / "data", disk_mb=8)
    policy = sandbox_policy(settings, RepoConfig()).model_copy(update={"timeout_seconds": 60})
    command = f"head -c {64 * 2**20} /dev/zero > blob; echo written=$(wc -c < blob)"
    (result,) = _run_as(uid, worktree, policy, [command])
    assert "No space left on device" in result.output  # the write itself failed, at the limit
    written = int(result.output.split("written=")[1].split()[0])
    assert written <= 8 * 2**20  # the file never grew past the limit
    assert result.status == "failed" and "8 MiB disk limit" in result.limit_exceeded
    assert "disk_limit" in result.enforced
    assert sorted(p.name for p in worktree.iterdir()) == ["code.php"]  # nothing left behind
    # and nothing on the host's disk: not under the worker's directories (the data directory, where an
    # on-disk writable layer would live), nor anywhere else on that file system, where other processes
    # (the suite's parallel workers) also write, so only a 64 MiB blob landing there would show
    assert _bytes_under(host) - files_before < 2**20
    assert shutil.disk_usage(host).used - before < 48 * 2**20


def _bytes_under(root: Path) -> int:
    return sum(entry.stat().st_size for entry in root.rglob("*") if entry.is_file() and not entry.is_symlink())


def test_the_disk_limit_holds_for_the_whole_run_of_checks(host: Path) -> None:
    need_namespaces()
    worktree = _worker_files(host, os.geteuid())["worktree"]
    config = parse_repo_config("commands:\n  install: head -c 6000000 /dev/zero > vendor.bin\n"
                               "  test: head -c 6000000 /dev/zero > $HOME/cache.bin\n  lint: false\n")
    context = context_for(worktree, config, [], _settings(host / "data", disk_mb=8), ENV)
    install, test, _smoke = run_checks(context, ("install", "test", "smoke")).results
    assert install.status == "passed"
    assert test.status == "failed" and "8 MiB disk limit" in test.reason  # install's 6 MB count too
    assert sorted(p.name for p in worktree.iterdir()) == ["code.php"]


_HOLD = ("import os, time\n"
         "for _ in range(3):\n"
         "    if os.fork() == 0:\n"
         "        block = bytearray({size}); block[::4096] = b'x' * len(block[::4096]); time.sleep(20); os._exit(0)\n"
         "time.sleep(20)\n")


@pytest.mark.parametrize("uid", [0, UNPRIVILEGED], ids=["root-worker", "unprivileged-worker"])
def test_the_memory_limit_holds_for_the_whole_check_not_each_process(host: Path, uid: int) -> None:
    """Three children of 120 MiB each under a 256 MiB limit: each is under RLIMIT_AS, together they are not."""
    need_namespaces()
    if uid == 0:
        need(os.geteuid() == 0, "a worker running as root")
    worktree = _worker_files(host, uid)["worktree"]
    policy = SandboxPolicy(allow_root=True, memory_bytes=256 * 2**20, timeout_seconds=15)
    command = f"{SYSTEM_PYTHON} -c \"{_HOLD.format(size=120 * 2**20)}\""
    (result,) = _run_as(uid, worktree, policy, [command])
    # killed when caught: a check killed at its timeout is `timed_out`
    assert result.status == "failed" and "over the memory limit" in result.limit_exceeded, result
    assert "sampled" in result.not_enforced["memory_limit"]  # and it says the kernel does not hold it


_COUNT = ("import os, time\n"
          "n = 0\n"
          "try:\n"
          "    while n < 100:\n"
          "        if os.fork() == 0:\n"
          "            time.sleep(20)\n"
          "            os._exit(0)\n"
          "        n += 1\n"
          "except OSError as e:\n"
          "    print('forks', n, e.strerror, flush=True)\n"
          "print('forks', n, flush=True)\n"
          "time.sleep(20)\n")


def test_a_root_workers_check_has_a_process_limit(host: Path) -> None:
    need(os.geteuid() == 0, "a worker running as root")
    need_namespaces()
    worktree = _worker_files(host, 0)["worktree"]
    policy = SandboxPolicy(allow_root=True, max_processes=40, timeout_seconds=15)
    (result,) = _run_as(0, worktree, policy, [f"{SYSTEM_PYTHON} -c \"{_COUNT}\""])
    # killed when caught: a check killed at its timeout is `timed_out`
    assert result.status == "failed" and "over the process limit" in result.limit_exceeded, result
    assert "root" in result.not_enforced["pid_limit"] and "sampled" in result.not_enforced["pid_limit"]


def test_a_root_worker_runs_no_check_unless_the_operator_accepts_it(host: Path) -> None:
    need(os.geteuid() == 0, "a worker running as root")
    worktree = _worker_files(host, 0)["worktree"]
    refused = run_checks(context_for(worktree, parse_repo_config("commands:\n  test: touch ran\n  lint: false\n"),
                                     [], _settings(host / "data", allow_root=False), ENV), ("test",)).results
    (test,) = refused
    assert test.status == "not_run" and "the worker runs as root" in test.reason
    assert "FORGEBOT_SANDBOX__ALLOW_ROOT=true" in test.reason and not (worktree / "ran").exists()
    assert test.not_enforced == {"unprivileged": "the worker runs as root"}


# Inside the install: connect to the worker's loopback directly, then through the proxy it was given.
_REACH = ("import os, socket, sys\n"
          "port = int(sys.argv[1])\n"
          "try:\n"
          "    socket.create_connection(('127.0.0.1', port), 3); print('DIRECT reached')\n"
          "except OSError as e:\n"
          "    print('DIRECT', e.strerror)\n"
          "proxy = os.environ.get('HTTPS_PROXY', '')\n"
          "print('PROXY', proxy or 'none')\n"
          "if proxy:\n"
          "    host, _, proxy_port = proxy.removeprefix('http://').partition(':')\n"
          "    for target in (f'127.0.0.1:{port}', f'localhost:{port}', f'[::1]:{port}', '169.254.169.254:443',\n"
          "                   '10.0.0.1:443', '127.0.0.1:443'):\n"
          "        s = socket.create_connection((host, int(proxy_port)), 3)\n"
          "        s.sendall(f'CONNECT {target} HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n'.encode())\n"
          "        print('CONNECT', target, s.recv(200).split(b'\\r\\n')[0].decode())\n"
          "sys.exit(0)\n")


@pytest.mark.parametrize(("server_allows", "repository_asks"), [(True, True), (True, False), (False, True)],
                         ids=["granted", "not-asked", "server-forbids"])
def test_install_network_is_opt_in_per_repository_and_never_reaches_loopback(
    host: Path, listener: socket.socket, server_allows: bool, repository_asks: bool
) -> None:
    need_namespaces()
    worktree = _worker_files(host, os.geteuid())["worktree"]
    (worktree / "reach.py").write_text(_REACH)
    port = listener.getsockname()[1]
    asks = "  install_network: true\n" if repository_asks else ""
    config = parse_repo_config(f"commands:\n  install: python3 reach.py {port}\n{asks}  test: python3 reach.py {port}\n"
                               "  lint: false\n")
    settings = _settings(host / "data", install_network=server_allows)
    install, test, _smoke = run_checks(context_for(worktree, config, [], settings, ENV),
                                       ("install", "test", "smoke")).results
    assert not accepted(listener)  # the worker's loopback service never saw a connection
    assert "DIRECT reached" not in install.output and "DIRECT reached" not in test.output
    assert "PROXY none" in test.output and "no_network" in test.runs[0].enforced  # tests never have network
    if server_allows and repository_asks:
        assert install.status == "passed"
        for target in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "169.254.169.254:443",
                       "10.0.0.1:443", "127.0.0.1:443"):
            assert f"CONNECT {target} HTTP/1.1 40" in install.output, install.output  # 403, or 400/port refused
        assert "loopback, private and link-local refused" in install.not_enforced["no_network"]
    else:
        assert "PROXY none" in install.output and "no_network" in install.runs[0].enforced


def test_a_granted_install_reaches_a_package_registry(host: Path) -> None:
    """The proxy is a real way out: PyPI over HTTPS, the registry this machine may reach. Where it
    resolves to a non-global address (a mirror, as on the CI machine), only the operator's
    `install_private_hosts` lets the install reach it."""
    need_namespaces()
    try:
        address = socket.getaddrinfo("pypi.org", 443, type=socket.SOCK_STREAM)[0][4][0]
        socket.create_connection((address, 443), 5).close()
    except OSError as exc:  # a machine without the registry, not a missing tool: CI need not fail here
        pytest.skip(f"no route to pypi.org ({exc})")
    mirrored = not ipaddress.ip_address(address).is_global
    worktree = _worker_files(host, os.geteuid())["worktree"]
    fetch = ("python3 -c \"import urllib.request; "
             "print(urllib.request.urlopen('https://pypi.org/simple/pip/', timeout=20).status)\"")
    config = parse_repo_config(f"commands:\n  install: {json.dumps(fetch)}\n  install_network: true\n  lint: false\n")
    if mirrored:
        (refused,) = run_checks(context_for(worktree, config, [], _settings(host / "data"), ENV), ("install",)).results
        assert refused.status == "failed" and "pypi.org:443 (not a public address)" in refused.reason
    settings = _settings(host / "data", install_private_hosts=("pypi.org",) if mirrored else ())
    (install,) = run_checks(context_for(worktree, config, [], settings, ENV), ("install",)).results
    assert install.status == "passed" and install.output.strip().endswith("200"), install.output


# Inside the install: each target through the proxy it was given, and whether its environment holds the
# corporate proxy's password.
_THROUGH = ("import os, socket, sys\n"
            "host, _, port = os.environ['HTTPS_PROXY'].removeprefix('http://').partition(':')\n"
            "print('ENV', 'holds' if any(sys.argv[1] in v for v in os.environ.values()) else 'clean')\n"
            "for target in sys.argv[2:]:\n"
            "    s = socket.create_connection((host, int(port)), 5)\n"
            "    s.sendall(f'CONNECT {target} HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n'.encode())\n"
            "    s.settimeout(5)\n"
            "    got = b''\n"
            "    while True:\n"
            "        chunk = s.recv(200)\n"
            "        if not chunk:\n"
            "            break\n"
            "        got += chunk\n"
            "    print('CONNECT', target, got.split(b'\\r\\n')[0].decode(), got.split(b'\\r\\n\\r\\n')[-1].decode())\n")


@pytest.mark.parametrize("told", ["setting", "worker-env"])
def test_behind_a_corporate_proxy_the_install_tunnels_through_it_and_never_holds_its_password(
    host: Path, monkeypatch: pytest.MonkeyPatch, told: str
) -> None:
    """An install's only way out behind a mandatory proxy: its tunnels leave through it, by name (a name
    this machine cannot resolve included: only the proxy can). What this machine can tell is internal is
    still refused before the proxy hears of it, and the proxy's password never enters the install."""
    need_namespaces()
    password = f"pw-{uuid.uuid4().hex[:12]}"
    proxy = ConnectProxy(credentials=("bot", password), greet=True)  # the install has no internet here
    monkeypatch.delenv("https_proxy", raising=False)
    if told == "setting":
        monkeypatch.delenv("HTTPS_PROXY", raising=False)
        settings = _settings(host / "data", install_proxy=proxy.url)
    else:  # the worker's own proxy, as its model calls use it
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        settings = _settings(host / "data")
    worktree = _worker_files(host, os.geteuid())["worktree"]
    (worktree / "through.py").write_text(_THROUGH)
    inside = ["packages.invalid:443", "127.0.0.1:443", "localhost:443", "10.0.0.1:443", "169.254.169.254:443"]
    config = parse_repo_config(f"commands:\n  install: python3 through.py {password} {' '.join(inside)}\n"
                               "  install_network: true\n  lint: false\n")
    (install,) = run_checks(context_for(worktree, config, [], settings, ENV), ("install",)).results
    assert "ENV clean" in install.output, install.output
    assert "CONNECT packages.invalid:443 HTTP/1.1 200 Connection established HELLO packages.invalid:443" \
        in install.output, install.output
    for internal in inside[1:]:
        assert f"CONNECT {internal} HTTP/1.1 403" in install.output, install.output
    assert [head.split("\r\n")[0] for head in proxy.heads] == ["CONNECT packages.invalid:443 HTTP/1.1"]
    assert "operator's proxy" in install.not_enforced["no_network"]


def test_files_a_check_keeps_in_memory_count_against_its_memory_limit(host: Path) -> None:
    """/tmp, /dev/shm and the run's layer are tmpfs: 80 MiB there is 80 MiB of the worker's RAM."""
    need_namespaces()
    worktree = _worker_files(host, os.geteuid())["worktree"]
    policy = SandboxPolicy(allow_root=True, memory_bytes=64 * 2**20, tmp_bytes=48 * 2**20, timeout_seconds=15)
    command = "head -c 40000000 /dev/zero > /tmp/a && head -c 40000000 /dev/zero > /dev/shm/b && sleep 10"
    result = run_sandboxed(command, worktree, policy, ENV)
    assert result.status == "failed" and "over the memory limit" in result.limit_exceeded, result
    assert result.duration_seconds < 8
