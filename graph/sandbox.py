"""Check sandbox: run one check command in a worktree under limits, and report what was enforced.

Checks run code from the change under test (tests, composer.json, conftest.py), so a command gets:
a timeout after which its whole process group is killed; CPU, address-space and core-file rlimits;
an environment built from an allow-list, so the forge token and model keys never reach it; and,
where the host allows user namespaces, no network, a private PID space (no reading the bot's
`/proc/<pid>/environ`) and empty mounts over the bot's data directory, with all capabilities
dropped so the command cannot unmount them. Whatever could not be applied is listed in
`SandboxResult.not_enforced` with the reason; nothing is assumed.
"""

from __future__ import annotations

import functools
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SandboxStatus = Literal["passed", "failed", "timed_out", "error"]

DEFAULT_ENV_ALLOW = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "SOURCE_DATE_EPOCH")
# Refused even when allow-listed: a misconfigured allow-list must not leak a credential.
_SECRET_NAME = re.compile(r"^FORGEBOT_|TOKEN|SECRET|PASSW|CREDENTIAL|_KEY$|^KEY$|API_?KEY|AUTH", re.I)
_DRAIN_SECONDS = 0.5
# Runs inside the new namespaces as their root: keep the worktree reachable (it may live under the
# data directory), cover each hidden path with an empty tmpfs (or /dev/null for a file), then drop
# every capability so the command cannot unmount what covers them. The shell stays PID 1 and runs
# the command as its child: PID 1 ignores signals it has no handler for, which would make SIGXCPU
# and `kill -9 $$` no-ops. The `ready` file tells the host the command started; its absence, not
# anything the command could print, is what marks a setup failure.
_SETUP = r"""
fail() { echo "forgebot-sandbox: setup failed: $*" >&2; exit 125; }
mount=$1; mkdir=$2; setpriv=$3; ready=$4; wt=$5; stash=$6; shift 6
"$mount" --bind "$wt" "$stash" || fail "bind $wt"
while [ "$1" != "--" ]; do
  if [ -d "$1" ]; then "$mount" -t tmpfs -o size=64k,mode=0755 forgebot-hidden "$1" || fail "hide $1"
  elif [ -e "$1" ]; then "$mount" --bind /dev/null "$1" || fail "hide $1"; fi
  shift
done
shift
"$mkdir" -p "$wt" && "$mount" --bind "$stash" "$wt" || fail "restore $wt"
cd "$wt" || fail "cd $wt"
: > "$ready" || fail "ready"
"$setpriv" --no-new-privs --inh-caps=-all --bounding-set=-all -- "$@"
exit $?
"""
# Applies rlimits and execs the command; a Python one-liner works on every host we run on.
_LIMITS = (
    "import os,resource as r,sys\n"
    "c,m=int(sys.argv[1]),int(sys.argv[2])\n"
    "r.setrlimit(r.RLIMIT_CORE,(0,0))\n"
    "c>0 and r.setrlimit(r.RLIMIT_CPU,(c,c+1))\n"
    "m>0 and r.setrlimit(r.RLIMIT_AS,(m,m))\n"
    "os.execvp(sys.argv[3],sys.argv[3:])"
)


class SandboxPolicy(BaseModel):
    """Limits for one command; `hidden_paths` is typically the bot's data directory."""

    model_config = ConfigDict(frozen=True)

    timeout_seconds: float = Field(default=600.0, gt=0)
    cpu_seconds: int | None = Field(default=None, gt=0, description="None: the timeout, rounded up")
    memory_bytes: int | None = Field(default=2 * 1024**3, gt=0)
    output_limit_bytes: int = Field(default=64 * 1024, gt=0)
    network: bool = False
    isolate: bool = Field(default=True, description="use namespaces when the host allows them")
    hidden_paths: tuple[Path, ...] = ()
    env_allow: tuple[str, ...] = DEFAULT_ENV_ALLOW
    env: dict[str, str] = Field(default_factory=dict, description="variables set for the command")


class SandboxResult(BaseModel):
    """What happened: status, exit code, the tail of the output, and which limits held."""

    command: str
    status: SandboxStatus
    exit_code: int | None
    duration_seconds: float
    output: str
    output_truncated: bool = False
    enforced: tuple[str, ...] = ()
    not_enforced: dict[str, str] = Field(default_factory=dict)


class Isolation(BaseModel):
    """Whether user, network, PID and mount namespaces can be created here, and why not.

    `tools` holds absolute paths: the command's PATH comes from the target's environment and must
    not decide which `mount` or `setpriv` the setup runs.
    """

    available: bool
    reason: str = ""
    tools: dict[str, str] = Field(default_factory=dict)


@functools.cache
def probe_isolation() -> Isolation:
    """Try the namespaces once per process: containers and hardened hosts often forbid them."""
    tools = {name: shutil.which(name) for name in ("unshare", "setpriv", "mount", "mkdir", "sh")}
    for name, found in tools.items():
        if found is None:
            return Isolation(available=False, reason=f"`{name}` not installed")
    paths = {name: str(found) for name, found in tools.items()}
    with tempfile.TemporaryDirectory(prefix="forgebot-probe-") as target:
        script = ["-c", '"$0" -t tmpfs none "$1"', paths["mount"], target]
        argv = [*_unshare_argv(paths["unshare"], network=False), paths["sh"], *script]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Isolation(available=False, reason=f"unshare failed: {exc}")
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or ["exit status " + str(done.returncode)])[-1]
        return Isolation(available=False, reason=f"namespaces refused by the host: {detail}")
    return Isolation(available=True, tools=paths)


def build_environment(base: Mapping[str, str], policy: SandboxPolicy, home: Path) -> dict[str, str]:
    """The command's environment: allow-listed names from `base`, the policy's own, a throwaway HOME.

    Raises ValueError when the policy tries to pass a variable whose name looks like a credential.
    """
    for name in (*policy.env_allow, *policy.env):
        if _SECRET_NAME.search(name):
            raise ValueError(f"refusing to pass {name!r} into a check: the name looks like a secret")
    env = {name: base[name] for name in policy.env_allow if name in base}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(policy.env)
    # A fresh HOME keeps ~/.composer/auth.json, ~/.netrc, ~/.pypirc and the like out of reach.
    env.update({"HOME": str(home), "TMPDIR": str(home), "CI": "1", "COMPOSER_HOME": str(home / ".composer")})
    return env


def run_sandboxed(
    command: str,
    worktree: Path,
    policy: SandboxPolicy,
    base_env: Mapping[str, str],
    home: Path | None = None,
) -> SandboxResult:
    """Run the shell command line `command` in `worktree` under `policy`.

    `base_env` is where allow-listed variables come from (the caller passes its environment);
    `home` is the command's HOME, shared by a sequence of checks (install, then test); without it a
    throwaway directory is used. Raises ValueError when a hidden path would hide the worktree's own
    content or the sandbox's scratch directory.
    """
    worktree = worktree.resolve()
    if not worktree.is_dir():
        return _error(command, f"worktree {worktree} is not a directory")
    hidden = tuple(p.resolve() for p in policy.hidden_paths)
    for path in hidden:
        if worktree == path or path.is_relative_to(worktree):
            raise ValueError(f"hidden path {path} is inside the worktree {worktree}")
    with tempfile.TemporaryDirectory(prefix="forgebot-check-") as scratch:
        scratch_dir = Path(scratch)
        if any(scratch_dir.resolve().is_relative_to(p) for p in hidden):
            raise ValueError("the temporary directory lies under a hidden path")
        run_home = home if home is not None else scratch_dir / "home"
        run_home.mkdir(parents=True, exist_ok=True)
        env = build_environment(base_env, policy, run_home)
        argv, enforced, missing = _argv(command, worktree, policy, hidden, scratch_dir)
        result = _execute(command, argv, worktree, env, policy, enforced, missing)
        if "private_pids" in result.enforced and not (scratch_dir / "ready").exists():
            return result.model_copy(update={"status": "error"})  # the namespaces or setup failed
        return result


def _argv(
    command: str, worktree: Path, policy: SandboxPolicy, hidden: tuple[Path, ...], scratch: Path
) -> tuple[list[str], list[str], dict[str, str]]:
    cpu = policy.cpu_seconds or int(policy.timeout_seconds + 0.999)
    memory = policy.memory_bytes or 0
    inner = [sys.executable, "-I", "-S", "-c", _LIMITS, str(cpu), str(memory), "/bin/sh", "-c", command]
    enforced = ["timeout", "process_group_kill", "cpu_limit", "clean_environment", "output_cap"]
    enforced += ["memory_limit"] if memory else []
    missing: dict[str, str] = {} if memory else {"memory_limit": "no memory limit in the policy"}
    isolation = probe_isolation() if policy.isolate else Isolation(available=False, reason="disabled")
    if policy.network:
        missing["no_network"] = "network allowed for this command"
    if not isolation.available:
        why = "isolation disabled by the policy" if not policy.isolate else isolation.reason
        missing["private_pids"] = why
        missing |= {"data_dir_hidden": why} if hidden else {}
        missing |= {} if policy.network else {"no_network": why}
        return inner, enforced, missing
    (scratch / "stash").mkdir()
    tools = isolation.tools
    setup = [tools["sh"], "-c", _SETUP, "forgebot-sandbox", tools["mount"], tools["mkdir"], tools["setpriv"]]
    setup += [str(scratch / "ready"), str(worktree), str(scratch / "stash"), *map(str, hidden), "--"]
    enforced += ["private_pids", "dropped_capabilities"] + (["data_dir_hidden"] if hidden else [])
    enforced += [] if policy.network else ["no_network"]
    unshare = _unshare_argv(tools["unshare"], network=not policy.network)
    return [*unshare, *setup, *inner], enforced, missing


def _unshare_argv(unshare: str, network: bool) -> list[str]:
    flags = ["--user", "--map-root-user", "--mount", "--pid", "--fork", "--mount-proc", "--kill-child"]
    return [unshare, *flags, *(["--net"] if network else []), "--"]


def _execute(
    command: str,
    argv: list[str],
    worktree: Path,
    env: dict[str, str],
    policy: SandboxPolicy,
    enforced: list[str],
    missing: dict[str, str],
) -> SandboxResult:
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=worktree,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        return _error(command, f"could not start: {exc}")
    tail, total, timed_out = _collect(proc, started + policy.timeout_seconds, policy.output_limit_bytes)
    output = bytes(tail).decode("utf-8", errors="replace")
    code = proc.returncode
    if timed_out:
        status: SandboxStatus = "timed_out"
    else:
        status = "passed" if code == 0 else "failed"
    return SandboxResult(
        command=command,
        status=status,
        exit_code=None if timed_out else code,
        duration_seconds=round(time.monotonic() - started, 3),
        output=output,
        output_truncated=total > len(tail),
        enforced=tuple(enforced),
        not_enforced=missing,
    )


def _collect(proc: subprocess.Popen[bytes], deadline: float, limit: int) -> tuple[bytearray, int, bool]:
    """Read output until the process ends or the deadline passes; keep only the last `limit` bytes."""
    assert proc.stdout is not None
    tail, total, timed_out = bytearray(), 0, False
    exited_at: float | None = None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if now >= deadline:
                timed_out = proc.poll() is None
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            # A background child may hold the pipe after the command exits: drain briefly, then stop.
            if exited_at is not None and now - exited_at > _DRAIN_SECONDS:
                break
            if not selector.select(timeout=min(0.1, deadline - now)):
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                if proc.poll() is not None or _wait(proc, deadline):
                    break
                continue
            total += len(chunk)
            tail += chunk
            if len(tail) > limit:
                del tail[: len(tail) - limit]
    # Kill the whole group: on timeout, and after a normal exit to reap stray background children.
    _kill_group(proc)
    proc.stdout.close()
    return tail, total, timed_out


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the group, reap the leader, and wait briefly until no member is left."""
    give_up = time.monotonic() + _DRAIN_SECONDS * 4
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    # Members may still be exiting (a PID namespace is torn down asynchronously).
    while time.monotonic() < give_up and _group_alive(proc.pid):
        time.sleep(0.01)


def _group_alive(pgid: int) -> bool:
    """Whether a live (not zombie) process is still in the group; zombies wait for a reaper."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def _wait(proc: subprocess.Popen[bytes], deadline: float) -> bool:
    """After EOF: wait for the exit, up to the deadline; True when the process ended."""
    try:
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return False
    return True


def _error(command: str, message: str) -> SandboxResult:
    return SandboxResult(
        command=command, status="error", exit_code=None, duration_seconds=0.0, output=message
    )
