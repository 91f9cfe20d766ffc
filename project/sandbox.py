"""Check sandbox: run a repository's check commands on a worktree so that they cannot harm the host.

Checks run code from the change under test (tests, composer.json, conftest.py). A run of checks
(install, tests, lints on one worktree) opens one `Sandbox`; each command then gets:

- **a writable layer that is bounded while it is written.** The worktree is seen through an overlay
  whose writable half, like the run's HOME, lives on a tmpfs of `disk_bytes`: a command that
  writes past it gets ENOSPC at that write, and whatever the run wrote vanishes when it ends. The
  worktree itself (and its `.git`) is never written by a check. The layer is held by one process
  per run (`project.sandbox_init`, role `layer`); each command joins its namespaces.
- **a read-only host.** Every mount the command sees is read-only except the worktree, HOME and
  private tmpfs on /tmp, /var/tmp and /dev/shm; /dev holds only null, zero, full, random, urandom
  and tty; the bot's data directory, its secrets, host sockets and the operator's extra paths are
  covered by empty mounts; every capability is dropped, so nothing can be remounted.
- **no network** (a namespace with only loopback), except an install the repository opts into:
  HTTPS through the worker's egress proxy (`project.egress`) to public addresses only.
- **limits**: a timeout that kills everything, CPU, address-space, file-size and process-count
  rlimits (the latter counted in the check's own user namespace; the kernel exempts root), and the
  whole check's memory and processes sampled by its init, which kills them all past a limit.
- **a clean environment** from an allow-list: the forge token and model keys never reach it.

It fails closed: a worker running as root is refused unless the policy accepts it (`allow_root`),
and where the host refuses namespaces a command is not run at all — status `refused`, with the
reason and what would be missing — unless the policy accepts running without them
(`allow_unisolated`). Whatever could not be applied is listed in `SandboxResult.not_enforced` with
the reason: a limit the kernel does not hold (sampled, or measured afterwards) is listed there,
never presented as enforced.
"""

from __future__ import annotations

import ast
import functools
import marshal
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from foundation import cabundle
from project.egress import Egress

SandboxStatus = Literal["passed", "failed", "timed_out", "error", "refused"]

DEFAULT_ENV_ALLOW = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "SOURCE_DATE_EPOCH")
# Refused even when allow-listed: a misconfigured allow-list must not leak a credential.
_SECRET_NAME = re.compile(r"^FORGEBOT_|TOKEN|SECRET|PASSW|CREDENTIAL|_KEY$|^KEY$|API_?KEY|AUTH", re.I)
_DRAIN_SECONDS = 0.5
_SAMPLE_SECONDS = 0.05
_EGRESS_PORT = 3128
# Below this much free space the layer counts as full: tmpfs refuses a write when no page is left.
_FULL_BYTES = 64 * 1024
# Shared scratch directories of the host: each gets a private, size-limited tmpfs in the sandbox.
PRIVATE_SCRATCH = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"))
# What each protection means to a reader of the status comment or the change description.
PROTECTIONS: dict[str, str] = {
    "no_network": "no network",
    "hidden_paths": "bot data, secrets and host sockets hidden",
    "read_only_root": "read-only host filesystem",
    "unprivileged": "not run as root",
    "private_pids": "private process space",
    "private_tmp": "private /tmp",
    "dropped_capabilities": "capabilities dropped",
    "pid_limit": "process limit",
    "file_size_limit": "file size limit",
    "disk_limit": "disk limit",
    "memory_limit": "memory limit",
}
ROOT_SETTING = "FORGEBOT_SANDBOX__ALLOW_ROOT=true"
UNISOLATED_SETTING = "FORGEBOT_SANDBOX__ALLOW_UNISOLATED=true"
# Applies rlimits and execs the command where there is no init of ours (unisolated runs).
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
# The interpreter that runs the sandbox's own processes: the real file, not a virtualenv's link
# (a venv under /tmp would vanish behind the private /tmp; `-I -S` needs no site-packages anyway).
INTERPRETER = Path(os.path.realpath(sys.executable))
# The init's code, compiled here once: the interpreter is this one, so its bytecode fits, and each
# command is spared compiling it (`python -c` caches nothing).
_INIT_PATH = Path(__file__).with_name("sandbox_init.py")
_INIT_CODE = marshal.dumps(compile(_INIT_PATH.read_text(encoding="utf-8"), str(_INIT_PATH), "exec")).hex()
_INIT = [str(INTERPRETER), "-I", "-S", "-c",
         "import marshal,sys;exec(marshal.loads(bytes.fromhex(sys.argv.pop(1))))", _INIT_CODE]


class SandboxPolicy(BaseModel):
    """Limits for one command; `hidden_paths` is typically the bot's data directory and secrets."""

    model_config = ConfigDict(frozen=True)

    timeout_seconds: float = Field(default=600.0, gt=0)
    cpu_seconds: int | None = Field(default=None, gt=0, description="None: the timeout, rounded up")
    memory_bytes: int | None = Field(default=2 * 1024**3, gt=0, description="the whole check's memory")
    output_limit_bytes: int = Field(default=64 * 1024, gt=0)
    network: bool = Field(default=False, description="HTTPS to public addresses through the egress proxy")
    private_hosts: tuple[str, ...] = Field(default=(), description="hosts the proxy reaches on private addresses")
    secret_env: dict[str, SecretStr] = Field(
        default_factory=dict, description="the operator's install secrets this command gets (`CommandSpec.secret_env`)"
    )
    upstream_proxy: SecretStr | None = Field(
        default=None, description="the operator's proxy the egress tunnels through (`project.checks.install_proxy`)"
    )
    isolate: bool = Field(default=True, description="use namespaces when the host allows them")
    allow_unisolated: bool = Field(
        default=False, description="run even without namespaces (no network isolation, nothing hidden)"
    )
    allow_root: bool = Field(default=False, description="run checks although the worker runs as root")
    hidden_paths: tuple[Path, ...] = ()
    max_processes: int = Field(default=256, gt=0, description="processes and threads of the command")
    max_file_bytes: int = Field(default=1024**3, gt=0, description="largest file the command may write")
    tmp_bytes: int = Field(default=512 * 1024**2, gt=0, description="size of each private tmpfs")
    disk_bytes: int | None = Field(
        default=2 * 1024**3, gt=0, description="the run's writes to the worktree and HOME, all commands together"
    )
    env_allow: tuple[str, ...] = DEFAULT_ENV_ALLOW
    env: dict[str, str] = Field(default_factory=dict, description="variables set for the command")


class SandboxResult(BaseModel):
    """What happened: status, exit code, the tail of the output, and which limits held.

    `refused`: the command was not run (the worker is root, or isolation was unavailable, and that
    was not accepted); `output` then says why and which setting accepts it, and `not_enforced` what
    would have been missing. `egress_refused`: destinations the install asked the proxy for and
    did not get.
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
    egress_refused: tuple[str, ...] = ()


class Isolation(BaseModel):
    """Whether the sandbox's namespaces and layer can be made here, and why not.

    `tools` holds absolute paths: the command's PATH comes from the target's environment and must
    not decide which `unshare` or `nsenter` the sandbox runs.
    """

    available: bool
    reason: str = ""
    tools: dict[str, str] = Field(default_factory=dict)


def probe_isolation() -> Isolation:
    """Whether namespaces work here, found with the worker's own PATH (once per distinct PATH)."""
    return _probe(os.environ.get("PATH", os.defpath))


@functools.cache
def _probe(search_path: str) -> Isolation:
    """Open a real sandbox once and run `true` in it: containers and old kernels often refuse a step."""
    tools = {name: shutil.which(name, path=search_path) for name in ("unshare", "nsenter")}
    for name, found in tools.items():
        if found is None:
            return Isolation(available=False, reason=f"`{name}` not installed")
    isolation = Isolation(available=True, tools={name: str(found) for name, found in tools.items()})
    with tempfile.TemporaryDirectory(prefix="forgebot-probe-") as target:
        policy = SandboxPolicy(timeout_seconds=20, allow_root=True, disk_bytes=1024**2, tmp_bytes=1024**2)
        with _Isolated(Path(target), policy, {}, isolation) as box:
            result = box.run("true")
    if result.status != "passed":
        detail = (result.output.strip().splitlines() or [f"exit status {result.exit_code}"])[-1]
        detail = detail.removeprefix("forgebot-sandbox: ")
        return Isolation(available=False, reason=f"namespaces refused by the host: {detail}")
    return isolation


def build_environment(base: Mapping[str, str], policy: SandboxPolicy, home: Path, tmp: Path) -> dict[str, str]:
    """The command's environment: allow-listed names from `base`, the policy's own, the run's HOME.

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
    # the operator's, by name, for an install of the profile's own that runs none of the repository's code
    env.update({name: value.get_secret_value() for name, value in policy.secret_env.items()})
    return env


_CERTIFICATES = ".forgebot-ca.pem"  # in the run's HOME


def _trust_operators_ca(env: dict[str, str], policy: SandboxPolicy, home: Path, seen_home: Path) -> None:
    """Give an install with network the operator's CA: an internal registry's certificate is signed by it.

    The worker's own variables name it (`foundation.cabundle`: process-wide, as `share` left them) and the
    check sees none of them. Its own copy goes in its HOME (written where this process sees that HOME:
    `seen_home`), named by each installer's variable. A CA certificate is no secret.

    The file is created, never opened: a name a check left there (a link to a host file, which this
    process would write through) stops the copy, and the install keeps its tools' own CAs.
    """
    certificates = cabundle.for_installers(os.environ) if policy.network else b""
    if not certificates:
        return
    try:
        fd = os.open(seen_home / _CERTIFICATES, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except OSError:
        return
    with os.fdopen(fd, "wb") as file:
        file.write(certificates)
    env.update(dict.fromkeys(cabundle.INSTALLER_VARIABLES, str(home / _CERTIFICATES)))


class DiskMeter:
    """Disk used by a worktree and its HOME as the last unisolated command left them.

    Without namespaces there is no bounded layer: growth is measured after each command (one walk
    of the tree), so a command can fill the disk before it is caught.
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
    missing = {"private_pids": reason, "private_tmp": reason, "dropped_capabilities": reason,
               "read_only_root": reason}
    missing |= {"hidden_paths": reason} if policy.hidden_paths else {}
    missing |= {} if policy.network else {"no_network": reason}
    if policy.disk_bytes:
        missing["disk_limit"] = f"measured after each command, not while it writes ({reason})"
    return missing


class Sandbox:
    """One run of checks on one worktree; `run` each command, `view` to see the worktree as they do."""

    def __init__(self, worktree: Path, policy: SandboxPolicy, base_env: Mapping[str, str]) -> None:
        self.worktree = worktree
        self.policy = policy
        self.base_env = dict(base_env)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the run: whatever its commands wrote outside the worktree's own files is gone."""

    def view(self) -> Path:
        """Where the worker reads the worktree as the commands see it (with what install added)."""
        return self.worktree

    def run(self, command: str, policy: SandboxPolicy | None = None) -> SandboxResult:
        """Run the shell command line `command` under `policy` (the run's, with this command's timeout,
        network and variables)."""
        raise NotImplementedError


@contextmanager
def open_sandbox(worktree: Path, policy: SandboxPolicy, base_env: Mapping[str, str]) -> Iterator[Sandbox]:
    """The sandbox for a run of checks on `worktree`: isolated, unisolated (accepted), or refusing.

    `base_env` is where allow-listed variables come from (the caller passes its environment).
    Raises ValueError when a hidden path would hide the worktree's own content.
    """
    worktree = worktree.resolve()
    hidden = tuple(p.resolve() for p in policy.hidden_paths)
    for path in hidden:
        if worktree == path or path.is_relative_to(worktree):
            raise ValueError(f"hidden path {path} is inside the worktree {worktree}")
    policy = policy.model_copy(update={"hidden_paths": hidden})
    box: Sandbox
    if not worktree.is_dir():
        box = _Broken(worktree, policy, base_env, f"worktree {worktree} is not a directory")
    elif os.geteuid() == 0 and not policy.allow_root:
        why = ("the worker runs as root, and a check run as root can read every file root can; run the worker "
               f"as an unprivileged user (the image does), or accept it with `{ROOT_SETTING}`")
        box = _Refused(worktree, policy, base_env, why, {"unprivileged": "the worker runs as root"})
    else:
        isolation = probe_isolation() if policy.isolate else Isolation(available=False, reason="disabled")
        why = "isolation disabled by the policy" if not policy.isolate else isolation.reason
        if isolation.available:
            box = _Isolated(worktree, policy, base_env, isolation)
        elif policy.allow_unisolated:
            box = _Unisolated(worktree, policy, base_env, why)
        else:
            missing = missing_without_isolation(policy, why)
            box = _Refused(worktree, policy, base_env,
                           f"not run without isolation ({why}); `{UNISOLATED_SETTING}` runs checks without it",
                           missing)
    with box:
        yield box


class _Broken(Sandbox):
    def __init__(self, worktree: Path, policy: SandboxPolicy, base_env: Mapping[str, str], message: str) -> None:
        super().__init__(worktree, policy, base_env)
        self.message = message

    def run(self, command: str, policy: SandboxPolicy | None = None) -> SandboxResult:
        return _error(command, self.message)


class _Refused(Sandbox):
    """Runs nothing: the worker is root, or isolation is missing, and that was not accepted."""

    def __init__(self, worktree: Path, policy: SandboxPolicy, base_env: Mapping[str, str], why: str,
                 missing: dict[str, str]) -> None:
        super().__init__(worktree, policy, base_env)
        self.why, self.missing = why, missing

    def run(self, command: str, policy: SandboxPolicy | None = None) -> SandboxResult:
        return SandboxResult(command=command, status="refused", exit_code=None, duration_seconds=0.0,
                             output=self.why, not_enforced=self.missing)


class _Unisolated(Sandbox):
    """No namespaces (accepted by the policy): rlimits, a clean environment, growth measured after."""

    def __init__(self, worktree: Path, policy: SandboxPolicy, base_env: Mapping[str, str], why: str) -> None:
        super().__init__(worktree, policy, base_env)
        self.why = why
        self._scratch = tempfile.TemporaryDirectory(prefix="forgebot-check-")
        self.home = Path(self._scratch.name, "home").resolve()
        self.home.mkdir()
        (self.home.parent / "tmp").mkdir()
        self._meter = DiskMeter()

    def close(self) -> None:
        self._scratch.cleanup()

    def run(self, command: str, policy: SandboxPolicy | None = None) -> SandboxResult:
        policy = policy or self.policy
        env = build_environment(self.base_env, policy, self.home, self.home.parent / "tmp")
        _trust_operators_ca(env, policy, self.home, self.home)
        roots = (self.worktree, self.home)
        before = self._meter.before(roots) if policy.disk_bytes else 0
        _rlimits, enforced, missing = _limited(command, policy)
        enforced += ["disk_limit"] if policy.disk_bytes else []
        missing |= missing_without_isolation(policy, self.why)
        enforced = [name for name in enforced if name not in missing]
        argv = _unisolated_argv(command, policy)
        result = _execute(command, argv, self.worktree, env, policy, enforced, missing)
        if policy.disk_bytes and result.status != "error":
            grown = self._meter.after(roots) - before
            if grown > policy.disk_bytes:
                limit = (f"wrote {grown // 2**20} MiB to the worktree and HOME, over the "
                         f"{policy.disk_bytes // 2**20} MiB disk limit")
                result = result.model_copy(update={"status": "failed", "limit_exceeded": limit})
        return result


class _Isolated(Sandbox):
    """Namespaces: the run's layer held by one process, each command in fresh namespaces joined to it."""

    def __init__(self, worktree: Path, policy: SandboxPolicy, base_env: Mapping[str, str],
                 isolation: Isolation) -> None:
        super().__init__(worktree, policy, base_env)
        self.tools = isolation.tools
        self._scratch = Path(tempfile.mkdtemp(prefix="forgebot-check-")).resolve()
        if any(self._scratch.is_relative_to(p) for p in policy.hidden_paths):
            shutil.rmtree(self._scratch)
            raise ValueError("the temporary directory lies under a hidden path")
        self.home = self._scratch / "home"
        for name in ("layer", "home", "stage"):
            (self._scratch / name).mkdir()
        self._holder: subprocess.Popen[bytes] | None = None
        self._problem = self._start_layer()

    def _start_layer(self) -> str:
        """Start the process that holds the run's layer; "" once it is ready, else what failed."""
        if any(c in str(self.worktree) for c in ",:\\"):
            return f"the worktree path {self.worktree} contains a comma, colon or backslash"
        config = {"role": "layer", "layer": str(self._scratch / "layer"), "worktree": str(self.worktree),
                  "home": str(self.home), "size": self.policy.disk_bytes or 2 * 1024**3}
        argv = [self.tools["unshare"], "--user", "--map-root-user", "--mount", "--", *_INIT, repr(config)]
        try:
            self._holder = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.STDOUT, cwd="/", env={"PATH": os.defpath},
                                            start_new_session=True)
        except OSError as exc:
            return f"could not start: {exc}"
        assert self._holder.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._holder.stdout, selectors.EVENT_READ)
            line = self._holder.stdout.readline() if selector.select(timeout=20) else b""
        if line == b"ready\n":
            return ""
        self._stop_layer()
        text = line.decode(errors="replace").strip() or "the layer did not start"
        return text.removeprefix("forgebot-sandbox: ")

    def _stop_layer(self) -> None:
        holder, self._holder = self._holder, None
        if holder is None:
            return
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()  # the holder exits at EOF, and its namespaces and tmpfs with it
        try:
            holder.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(holder.pid, signal.SIGKILL)
            holder.wait()
        holder.stdout.close()

    def close(self) -> None:
        self._stop_layer()
        shutil.rmtree(self._scratch, ignore_errors=True)

    def view(self) -> Path:
        if self._holder is None:
            return self.worktree
        return Path(f"/proc/{self._holder.pid}/root{self.worktree}")

    def run(self, command: str, policy: SandboxPolicy | None = None) -> SandboxResult:
        policy = policy or self.policy
        if self._problem or self._holder is None:
            return _error(command, f"sandbox setup failed: {self._problem or 'the layer has ended'}")
        env = build_environment(self.base_env, policy, self.home, Path("/tmp"))
        # the HOME every command of this run sees is the layer's, reached here through the holder's root
        _trust_operators_ca(env, policy, self.home, Path(f"/proc/{self._holder.pid}/root{self.home}"))
        upstream = policy.upstream_proxy.get_secret_value() if policy.upstream_proxy else None
        egress = Egress(policy.private_hosts, upstream) if policy.network else None
        if egress is not None:
            proxy = f"http://127.0.0.1:{_EGRESS_PORT}"
            env |= dict.fromkeys(("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"), proxy)
        _rlimits, enforced, missing = _limited(command, policy)
        enforced += ["private_pids", "private_tmp", "dropped_capabilities", "read_only_root"]
        enforced += ["hidden_paths"] if policy.hidden_paths else []
        enforced += ["disk_limit"] if policy.disk_bytes else []
        enforced += [] if policy.network else ["no_network"]
        config = {
            "role": "command", "command": command, "worktree": str(self.worktree),
            "stage": str(self._scratch / "stage"),
            "keep": self._kept(), "writable": [str(self.worktree), str(self.home)],
            "hidden": [str(p) for p in policy.hidden_paths], "tmp_size": policy.tmp_bytes,
            "rlimits": _rlimits, "processes": policy.max_processes, "memory": policy.memory_bytes or 0,
            "interval": _SAMPLE_SECONDS, "memory_files": ["/tmp", "/var/tmp", "/dev/shm", str(self.home)],
            "egress_fd": egress.theirs.fileno() if egress else -1, "egress_port": _EGRESS_PORT,
        }
        nsenter = [self.tools["nsenter"], "--target", str(self._holder.pid), "--user", "--mount",
                   "--preserve-credentials", "--"]
        unshare = [self.tools["unshare"], "--mount", "--pid", "--fork", "--mount-proc", "--ipc", "--net",
                   "--kill-child", "--"]
        argv = [*nsenter, *unshare, *_INIT, repr(config)]
        report_path = self._scratch / "report"
        try:
            with report_path.open("w") as report:
                result = _execute(command, argv, Path("/"), env, policy, enforced, missing, report.fileno(),
                                  egress)
        finally:
            if egress is not None:
                egress.close()
        return self._judged(result, report_path.read_text(), policy, egress)

    def _kept(self) -> list[str]:
        """Paths each command's view puts back after covering /tmp and the hidden paths: the worktree,
        HOME, and the worker's own Python when it lives under /tmp (read-only, like everything)."""
        keep = [str(self.worktree), str(self.home)]
        runtime = {str(p) for p in (INTERPRETER.parents[1], Path(sys.prefix))
                   if any(p.is_relative_to(scratch) for scratch in PRIVATE_SCRATCH)}
        return keep + sorted(r for r in runtime if not any(Path(r).is_relative_to(k) for k in keep))

    def _judged(
        self, result: SandboxResult, report: str, policy: SandboxPolicy, egress: Egress | None
    ) -> SandboxResult:
        """The result as the init reported it: setup failures, the limits it enforced, a full layer."""
        lines = report.splitlines()
        update: dict[str, object] = {"egress_refused": tuple(egress.refused) if egress else ()}
        if lines[:1] != ["ready"]:
            if result.status != "timed_out":
                detail = result.output.strip().splitlines()[-1:] or [f"exit status {result.exit_code}"]
                update |= {"status": "error", "output": f"sandbox setup failed: {detail[0]}"}
            return result.model_copy(update=update)
        verdict = ast.literal_eval(lines[1]) if len(lines) > 1 else {}
        if verdict.get("limit") == "processes":
            update |= {"status": "failed", "limit_exceeded": (
                f"ran more than {policy.max_processes} processes and threads at once, over the process limit; "
                "all were killed")}
        elif verdict.get("limit") == "memory":
            update |= {"status": "failed", "limit_exceeded": (
                f"held more than {(policy.memory_bytes or 0) // 2**20} MiB (its processes, and its files in /tmp, "
                "/dev/shm and the run's layer, which are memory too), over the memory limit; all its processes were "
                "killed")}
        elif result.status in ("passed", "failed") and policy.disk_bytes and self._layer_full():
            update |= {"status": "failed", "limit_exceeded": (
                f"filled the {policy.disk_bytes // 2**20} MiB disk limit for what the checks write to the worktree "
                "and HOME; the write past it failed, and nothing written was kept")}
        return result.model_copy(update=update)

    def _layer_full(self) -> bool:
        if self._holder is None:
            return False
        try:
            stats = os.statvfs(f"/proc/{self._holder.pid}/root{self._scratch / 'layer'}")
        except OSError:
            return False
        return stats.f_bavail * stats.f_frsize < _FULL_BYTES or stats.f_favail == 0


def _limited(command: str, policy: SandboxPolicy) -> tuple[dict[str, int], list[str], dict[str, str]]:
    """The rlimits for `command`, the protections they and the init give, and what they cannot."""
    cpu = policy.cpu_seconds or int(policy.timeout_seconds + 0.999)
    rlimits = {"CPU": cpu, "AS": policy.memory_bytes or 0, "NPROC": policy.max_processes,
               "FSIZE": policy.max_file_bytes}
    enforced = ["timeout", "process_group_kill", "cpu_limit", "clean_environment", "output_cap", "file_size_limit"]
    sampled = f"sampled every {_SAMPLE_SECONDS * 1000:.0f} ms, not held by the kernel (no cgroup)"
    missing: dict[str, str] = {}
    if policy.memory_bytes:
        missing["memory_limit"] = (f"the whole check's memory is {sampled}: a burst between two samples can pass "
                                   "it; each process alone is held to it (RLIMIT_AS)")
    else:
        missing["memory_limit"] = "no memory limit in the policy"
    if os.geteuid() == 0:
        missing["pid_limit"] = f"the worker runs as root, whom RLIMIT_NPROC does not bind: processes are {sampled}"
        missing["unprivileged"] = f"the worker runs as root (accepted by `{ROOT_SETTING}`)"
    else:
        enforced.append("pid_limit")
    if policy.network:
        missing["no_network"] = ("HTTPS to public addresses through the worker's egress proxy (the install's "
                                 "network, opted into by the repository); loopback, private and link-local refused")
        if policy.upstream_proxy:
            missing["no_network"] += ("; tunnels leave through the operator's proxy, which resolves the names "
                                      "this machine cannot")
    return rlimits, enforced, missing


def _unisolated_argv(command: str, policy: SandboxPolicy) -> list[str]:
    """The rlimit wrapper around `sh -c command`; without a user namespace RLIMIT_NPROC counts every
    process of the worker's user, so the worker's own are added."""
    limits, _enforced, _missing = _limited(command, policy)
    root = os.getuid() == 0
    processes = limits["NPROC"] + (0 if root else _tasks_of(os.getuid()))
    values = [str(limits["CPU"]), str(limits["AS"]), str(processes), str(limits["FSIZE"])]
    return [str(INTERPRETER), "-I", "-S", "-c", _LIMITS, *values, "/bin/sh", "-c", command]


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


def _execute(
    command: str,
    argv: list[str],
    worktree: Path,
    env: dict[str, str],
    policy: SandboxPolicy,
    enforced: list[str],
    missing: dict[str, str],
    report_fd: int | None = None,
    egress: Egress | None = None,
) -> SandboxResult:
    """Start `argv`, collect its output until it ends or times out, kill what it left."""
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=worktree,
            env=env,
            stdin=subprocess.DEVNULL if report_fd is None else report_fd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=(egress.theirs.fileno(),) if egress is not None else (),
        )
    except OSError as exc:
        return _error(command, f"could not start: {exc}")
    if egress is not None:
        egress.started()
    # A PID namespace is gone once its init is reaped; without one, stray members are waited for.
    tail, total, timed_out = _collect(proc, started + policy.timeout_seconds, policy.output_limit_bytes,
                                      members=report_fd is None)
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


def _collect(
    proc: subprocess.Popen[bytes], deadline: float, limit: int, members: bool
) -> tuple[bytearray, int, bool]:
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
    _kill_group(proc, members)
    proc.stdout.close()
    return tail, total, timed_out


def _kill_group(proc: subprocess.Popen[bytes], members: bool) -> None:
    """SIGKILL the group, reap the leader, and (`members`) wait briefly until no member is left."""
    give_up = time.monotonic() + _DRAIN_SECONDS * 4
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    # Members may still be exiting; in a PID namespace the kernel has killed them all before its
    # init is reaped (unshare waits for that), so only unisolated runs look.
    while members and time.monotonic() < give_up and _group_alive(proc.pid):
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
