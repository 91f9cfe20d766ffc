"""Check sandbox: run one check command in a worktree under limits, and report what was enforced.

Checks run code from the change under test (tests, composer.json, conftest.py), so a command gets:
a timeout after which its whole process group is killed; CPU, address-space, process-count and
file-size rlimits; an environment built from an allow-list, so the forge token and model keys never
reach it; a growth check of the worktree and HOME against a disk limit; and, in user namespaces, no
network, a private PID space (no reading the bot's `/proc/<pid>/environ`), private size-limited
`/tmp`, `/var/tmp` and `/dev/shm`, and empty mounts over the hidden paths (the bot's data directory,
its secrets, the Redis socket), with all capabilities dropped so the command cannot unmount them.

It fails closed: where the host refuses user namespaces (a RuntimeDefault seccomp profile, no
`unshare`), a command is not run at all — status `refused`, with the reason and the protections that
would be missing — unless the policy explicitly accepts running without them (`allow_unisolated`).
Whatever could not be applied is listed in `SandboxResult.not_enforced` with the reason.
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

SandboxStatus = Literal["passed", "failed", "timed_out", "error", "refused"]

DEFAULT_ENV_ALLOW = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "SOURCE_DATE_EPOCH")
# Refused even when allow-listed: a misconfigured allow-list must not leak a credential.
_SECRET_NAME = re.compile(r"^FORGEBOT_|TOKEN|SECRET|PASSW|CREDENTIAL|_KEY$|^KEY$|API_?KEY|AUTH", re.I)
_DRAIN_SECONDS = 0.5
# Shared scratch directories of the host: each gets a private, size-limited tmpfs in the sandbox.
PRIVATE_SCRATCH = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"))
# What each protection means to a reader of the status comment or the change description.
PROTECTIONS: dict[str, str] = {
    "no_network": "no network",
    "hidden_paths": "bot data, secrets and Redis socket hidden",
    "private_pids": "private process space",
    "private_tmp": "private /tmp",
    "dropped_capabilities": "capabilities dropped",
    "pid_limit": "process limit",
    "file_size_limit": "file size limit",
    "disk_limit": "disk limit",
    "memory_limit": "memory limit",
}
# Runs inside the new namespaces as their root. It stages the paths the command keeps (the worktree,
# its HOME) on a fresh size-limited tmpfs, moves that tmpfs over /tmp (so the host's /tmp is gone),
# gives /var/tmp and /dev/shm their own, covers each hidden path with an empty tmpfs (or /dev/null
# for a file, a socket), puts the kept paths back at their own names, then drops every capability
# so the command cannot unmount what covers them. The shell stays PID 1 and runs the command as its
# child: PID 1 ignores signals it has no handler for, which would make SIGXCPU and `kill -9 $$`
# no-ops. "ready" goes to the setup's stdin, a file the host opened for writing, which is replaced by
# /dev/null before the command starts: its absence, not anything the command could print, is what
# marks a setup failure.
_SETUP = r"""
set -f
fail() { echo "forgebot-sandbox: setup failed: $*" >&2; exit 125; }
mount=$1; umount=$2; mkdir=$3; rmdir=$4; setpriv=$5; stage=$6; size=$7; shift 7
"$mount" -t tmpfs -o "size=$size,mode=1777" forgebot-tmp "$stage" && "$mkdir" "$stage/.staged" || fail "tmpfs"
n=0
for keep in $FORGEBOT_SANDBOX_KEEP; do
  n=$((n+1)); "$mkdir" "$stage/.keep$n" && "$mount" --bind "$keep" "$stage/.keep$n" || fail "stage $keep"
done
# util-linux 2.38 reports a failed follow-up step after a move that worked (unprivileged users): the
# marker directory, not the exit status, says whether the tmpfs is now /tmp.
"$mount" --move "$stage" /tmp 2>/dev/null
[ -d /tmp/.staged ] && "$rmdir" /tmp/.staged || fail "private /tmp"
for scratch in /var/tmp /dev/shm; do
  if [ -d "$scratch" ]; then "$mount" -t tmpfs -o "size=$size,mode=1777" forgebot-tmp "$scratch" || fail "$scratch"; fi
done
while [ "$1" != "--" ]; do
  if [ -d "$1" ]; then "$mount" -t tmpfs -o size=64k,mode=0755 forgebot-hidden "$1" || fail "hide $1"
  elif [ -e "$1" ]; then "$mount" --bind /dev/null "$1" || fail "hide $1"; fi
  shift
done
shift
n=0
for keep in $FORGEBOT_SANDBOX_KEEP; do
  n=$((n+1)); "$mkdir" -p "$keep" && "$mount" --bind "/tmp/.keep$n" "$keep" || fail "restore $keep"
  "$umount" "/tmp/.keep$n" && "$rmdir" "/tmp/.keep$n" || fail "unstage $keep"
  case " $FORGEBOT_SANDBOX_KEEP_RO " in
    *" $keep "*) "$mount" -o remount,bind,ro "$keep" || fail "read-only $keep" ;;
  esac
done
cd "$FORGEBOT_SANDBOX_WT" || fail "cd $FORGEBOT_SANDBOX_WT"
echo ready >&0 || fail "ready"
exec 0</dev/null
unset FORGEBOT_SANDBOX_KEEP FORGEBOT_SANDBOX_KEEP_RO FORGEBOT_SANDBOX_WT
set +f
"$setpriv" --no-new-privs --inh-caps=-all --bounding-set=-all -- "$@"
exit $?
"""
# Applies rlimits and execs the command; a Python one-liner works on every host we run on.
_LIMITS = (
    "import os,resource as r,sys\n"
    "c,m,p,f=(int(a) for a in sys.argv[1:5])\n"
    "r.setrlimit(r.RLIMIT_CORE,(0,0))\n"
    "c>0 and r.setrlimit(r.RLIMIT_CPU,(c,c+1))\n"
    "m>0 and r.setrlimit(r.RLIMIT_AS,(m,m))\n"
    "p>0 and r.setrlimit(r.RLIMIT_NPROC,(p,p))\n"
    "f>0 and r.setrlimit(r.RLIMIT_FSIZE,(f,f))\n"
    "os.execvp(sys.argv[5],sys.argv[5:])"
)


class SandboxPolicy(BaseModel):
    """Limits for one command; `hidden_paths` is typically the bot's data directory and secrets."""

    model_config = ConfigDict(frozen=True)

    timeout_seconds: float = Field(default=600.0, gt=0)
    cpu_seconds: int | None = Field(default=None, gt=0, description="None: the timeout, rounded up")
    memory_bytes: int | None = Field(default=2 * 1024**3, gt=0)
    output_limit_bytes: int = Field(default=64 * 1024, gt=0)
    network: bool = False
    isolate: bool = Field(default=True, description="use namespaces when the host allows them")
    allow_unisolated: bool = Field(
        default=False, description="run even without namespaces (no network isolation, nothing hidden)"
    )
    hidden_paths: tuple[Path, ...] = ()
    max_processes: int = Field(default=256, gt=0, description="processes and threads of the command")
    max_file_bytes: int = Field(default=1024**3, gt=0, description="largest file the command may write")
    tmp_bytes: int = Field(default=512 * 1024**2, gt=0, description="size of each private tmpfs")
    disk_bytes: int | None = Field(default=2 * 1024**3, gt=0, description="growth of worktree + HOME")
    env_allow: tuple[str, ...] = DEFAULT_ENV_ALLOW
    env: dict[str, str] = Field(default_factory=dict, description="variables set for the command")


class SandboxResult(BaseModel):
    """What happened: status, exit code, the tail of the output, and which limits held.

    `refused`: the command was not run because isolation was unavailable and not waived; `output`
    then says why, and `not_enforced` what would have been missing.
    """

    command: str
    status: SandboxStatus
    exit_code: int | None
    duration_seconds: float
    output: str
    output_truncated: bool = False
    enforced: tuple[str, ...] = ()
    not_enforced: dict[str, str] = Field(default_factory=dict)
    limit_exceeded: str = ""


class Isolation(BaseModel):
    """Whether user, network, PID and mount namespaces can be created here, and why not.

    `tools` holds absolute paths: the command's PATH comes from the target's environment and must
    not decide which `mount` or `setpriv` the setup runs.
    """

    available: bool
    reason: str = ""
    tools: dict[str, str] = Field(default_factory=dict)


def probe_isolation() -> Isolation:
    """Whether namespaces work here, found with the worker's own PATH (once per distinct PATH)."""
    return _probe(os.environ.get("PATH", os.defpath))


@functools.cache
def _probe(search_path: str) -> Isolation:
    """Try the namespaces once: containers and hardened hosts often forbid them."""
    names = ("unshare", "setpriv", "mount", "umount", "mkdir", "rmdir", "sh")
    tools = {name: shutil.which(name, path=search_path) for name in names}
    for name, found in tools.items():
        if found is None:
            return Isolation(available=False, reason=f"`{name}` not installed")
    paths = {name: str(found) for name, found in tools.items()}
    with tempfile.TemporaryDirectory(prefix="forgebot-probe-") as target:
        move = '"$0" -t tmpfs none "$1" && "$2" "$1/.m" && { "$0" --move "$1" /tmp 2>/dev/null; [ -d /tmp/.m ]; }'
        script = ["-c", move, paths["mount"], target, paths["mkdir"]]
        argv = [*_unshare_argv(paths["unshare"], network=False), paths["sh"], *script]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Isolation(available=False, reason=f"unshare failed: {exc}")
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or ["exit status " + str(done.returncode)])[-1]
        return Isolation(available=False, reason=f"namespaces refused by the host: {detail}")
    return Isolation(available=True, tools=paths)


def build_environment(base: Mapping[str, str], policy: SandboxPolicy, home: Path, tmp: Path) -> dict[str, str]:
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
    env.update({"HOME": str(home), "TMPDIR": str(tmp), "CI": "1", "COMPOSER_HOME": str(home / ".composer")})
    return env


class DiskMeter:
    """Disk used by a worktree and its HOME as the last sandboxed command left them.

    Consecutive commands on one worktree (install, test, a lint per changed file) then walk the tree
    once each instead of twice. What the bot itself writes between them (a patch) counts against
    the next command, which errs on the side of the limit.
    """

    def __init__(self) -> None:
        self._last: dict[tuple[Path, ...], int] = {}

    def before(self, roots: tuple[Path, ...]) -> int:
        return self._last[roots] if roots in self._last else _usage(roots)

    def after(self, roots: tuple[Path, ...]) -> int:
        self._last[roots] = _usage(roots)
        return self._last[roots]


def missing_without_isolation(policy: SandboxPolicy, reason: str) -> dict[str, str]:
    """The protections only namespaces give, each with `reason`: what running unisolated gives up."""
    missing = {"private_pids": reason, "private_tmp": reason, "dropped_capabilities": reason}
    missing |= {"hidden_paths": reason} if policy.hidden_paths else {}
    missing |= {} if policy.network else {"no_network": reason}
    return missing


def run_sandboxed(
    command: str,
    worktree: Path,
    policy: SandboxPolicy,
    base_env: Mapping[str, str],
    home: Path | None = None,
    meter: DiskMeter | None = None,
) -> SandboxResult:
    """Run the shell command line `command` in `worktree` under `policy`.

    `base_env` is where allow-listed variables come from (the caller passes its environment);
    `home` is the command's HOME, shared by a sequence of checks (install, then test); without it a
    throwaway directory is used. `meter`, shared by such a sequence, saves a walk of the worktree
    per command. Raises ValueError when a hidden path would hide the worktree's own content or the
    sandbox's scratch directory.
    """
    worktree = worktree.resolve()
    if not worktree.is_dir():
        return _error(command, f"worktree {worktree} is not a directory")
    hidden = tuple(p.resolve() for p in policy.hidden_paths)
    for path in hidden:
        if worktree == path or path.is_relative_to(worktree):
            raise ValueError(f"hidden path {path} is inside the worktree {worktree}")
    isolation = probe_isolation() if policy.isolate else Isolation(available=False, reason="disabled")
    why = "isolation disabled by the policy" if not policy.isolate else isolation.reason
    if not isolation.available and not policy.allow_unisolated:
        return _refused(command, policy, why)
    with tempfile.TemporaryDirectory(prefix="forgebot-check-") as scratch:
        scratch_dir = Path(scratch)
        if any(scratch_dir.resolve().is_relative_to(p) for p in hidden):
            raise ValueError("the temporary directory lies under a hidden path")
        run_home = (home if home is not None else scratch_dir / "home").resolve()
        run_home.mkdir(parents=True, exist_ok=True)
        tmp = Path("/tmp") if isolation.available else scratch_dir / "tmp"
        tmp.mkdir(exist_ok=True)
        env = build_environment(base_env, policy, run_home, tmp)
        meter = meter or DiskMeter()
        # A throwaway HOME starts empty: only a shared one needs measuring before the command.
        roots = (worktree,) if home is None else (worktree, run_home)
        before = meter.before(roots) if policy.disk_bytes else 0
        if isolation.available:
            result = _run_isolated(command, worktree, run_home, policy, hidden, scratch_dir, isolation, env)
        else:
            argv, enforced, missing = _limited(command, policy, isolated=False)
            missing |= missing_without_isolation(policy, why)
            result = _execute(command, argv, worktree, env, policy, enforced, missing)
        if policy.disk_bytes and result.status != "error":
            grown = meter.after(roots) + (_usage((run_home,)) if home is None else 0) - before
            if grown > policy.disk_bytes:
                limit = (f"wrote {grown // 2**20} MiB to the worktree and HOME, over the "
                         f"{policy.disk_bytes // 2**20} MiB disk limit")
                result = result.model_copy(update={"status": "failed", "limit_exceeded": limit})
        return result


def _run_isolated(
    command: str,
    worktree: Path,
    home: Path,
    policy: SandboxPolicy,
    hidden: tuple[Path, ...],
    scratch: Path,
    isolation: Isolation,
    env: dict[str, str],
) -> SandboxResult:
    argv, enforced, missing = _limited(command, policy, isolated=True)
    (scratch / "stage").mkdir()
    keep = [str(worktree)] + ([] if home.is_relative_to(worktree) else [str(home)])
    # the worker's own Python (its prefix, a virtualenv's too) under /tmp would vanish behind the private
    # /tmp: it is put back read-only, so a check can run it and can never change what the worker runs
    runtime = {str(p) for p in (INTERPRETER.parents[1], Path(sys.prefix))
               if any(p.is_relative_to(scratch_dir) for scratch_dir in PRIVATE_SCRATCH)}
    read_only = sorted(r for r in runtime if not any(Path(r).is_relative_to(k) for k in keep))
    keep += read_only
    if any(" " in k or "\t" in k or "\n" in k for k in keep):
        return _error(command, "the worktree or HOME path contains whitespace")
    tools = isolation.tools
    setup = [tools["sh"], "-c", _SETUP, "forgebot-sandbox", tools["mount"], tools["umount"], tools["mkdir"]]
    setup += [tools["rmdir"]]
    setup += [tools["setpriv"], str(scratch / "stage"), str(policy.tmp_bytes)]
    setup += [*map(str, hidden), "--"]
    enforced += ["private_pids", "private_tmp", "dropped_capabilities"] + (["hidden_paths"] if hidden else [])
    enforced += [] if policy.network else ["no_network"]
    unshare = _unshare_argv(tools["unshare"], network=not policy.network)
    ready_path = scratch / "ready"
    with ready_path.open("w") as ready:
        setup_env = {**env, "FORGEBOT_SANDBOX_KEEP": " ".join(keep), "FORGEBOT_SANDBOX_KEEP_RO": " ".join(read_only),
                     "FORGEBOT_SANDBOX_WT": str(worktree)}
        argv = [*unshare, *setup, *argv]
        result = _execute(command, argv, worktree, setup_env, policy, enforced, missing, ready.fileno())
    if ready_path.read_text() != "ready\n" and result.status != "timed_out":
        detail = result.output.strip().splitlines()[-1:] or [f"exit status {result.exit_code}"]
        return result.model_copy(update={"status": "error", "output": f"sandbox setup failed: {detail[0]}"})
    return result


# The interpreter that applies the limits inside the sandbox: the real file, not a virtualenv's link
# (a venv under /tmp would vanish behind the private /tmp; `-I -S` needs no site-packages anyway).
INTERPRETER = Path(os.path.realpath(sys.executable))


def _limited(command: str, policy: SandboxPolicy, isolated: bool) -> tuple[list[str], list[str], dict[str, str]]:
    """The rlimit wrapper around `sh -c command`, what it enforces, and what it cannot."""
    cpu = policy.cpu_seconds or int(policy.timeout_seconds + 0.999)
    memory = policy.memory_bytes or 0
    # In its own user namespace the command's processes are counted apart from the worker's; without
    # one RLIMIT_NPROC counts every process of the worker's user, so the worker's own are added.
    root = os.getuid() == 0
    processes = policy.max_processes + (0 if isolated or root else _tasks_of(os.getuid()))
    limits = [str(cpu), str(memory), str(processes), str(policy.max_file_bytes)]
    inner = [str(INTERPRETER), "-I", "-S", "-c", _LIMITS, *limits, "/bin/sh", "-c", command]
    enforced = ["timeout", "process_group_kill", "cpu_limit", "clean_environment", "output_cap", "file_size_limit"]
    enforced += ["memory_limit"] if memory else []
    enforced += ["disk_limit"] if policy.disk_bytes else []
    missing: dict[str, str] = {} if memory else {"memory_limit": "no memory limit in the policy"}
    if root:
        missing["pid_limit"] = "the worker runs as root, whom the kernel's process limit does not bind"
    else:
        enforced.append("pid_limit")
    if policy.network:
        missing["no_network"] = "network allowed for this command"
    return inner, enforced, missing


def _tasks_of(uid: int) -> int:
    """Processes and threads of `uid` now: what RLIMIT_NPROC counts outside a user namespace."""
    count = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        if fields.get("Uid", "").split()[:1] == [str(uid)]:
            count += int(fields.get("Threads", "1").strip() or 1)
    return count


def _usage(roots: tuple[Path, ...]) -> int:
    """Bytes of disk used under `roots` (each inode once, symlinks not followed)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    stack = [str(r) for r in roots]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            total += info.st_blocks * 512
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
    return total


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
    ready_fd: int | None = None,
) -> SandboxResult:
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=worktree,
            env=env,
            stdin=subprocess.DEVNULL if ready_fd is None else ready_fd,
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


def _refused(command: str, policy: SandboxPolicy, why: str) -> SandboxResult:
    """Not run: isolation is unavailable and the policy does not accept running without it."""
    return SandboxResult(
        command=command,
        status="refused",
        exit_code=None,
        duration_seconds=0.0,
        output=f"not run without isolation ({why})",
        not_enforced=missing_without_isolation(policy, why),
    )


def _error(command: str, message: str) -> SandboxResult:
    return SandboxResult(
        command=command, status="error", exit_code=None, duration_seconds=0.0, output=message
    )
