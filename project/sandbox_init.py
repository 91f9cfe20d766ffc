"""The check sandbox's processes inside its namespaces: the layer holder and each command's init.

`project.sandbox` does not import this module: it compiles its source once and runs the code with the
worker's own interpreter (`python -I -S -c <loader> <bytecode> <config>`), as root of a user namespace, so it uses the
standard library only and makes its system calls through ctypes (mount(2), mount_setattr(2),
capset(2), prctl(2)). Every command starts one, so it imports only what it needs before the command
runs: the C modules `_signal` and `_socket` rather than `signal` and `socket` (which import `enum`
and `selectors`), no `json` (which imports `re`): the config is a Python literal the worker wrote,
read with `eval` and no builtins, and the report is one written back.

Two roles, picked by the JSON's `role`:

- `layer` (one per run of checks): mounts a size-capped tmpfs, puts an overlay over the worktree
  whose writable half lives on it, and binds the run's HOME onto it, then waits until its stdin
  closes (the worker ends the run, or dies). Everything a check writes to the worktree or HOME lands
  on that tmpfs: a check that writes past the limit gets ENOSPC while writing, and the writes vanish
  with the namespace.
- `command` (one per command, PID 1 of a fresh PID, mount, IPC and network namespace joined to the
  layer's): builds the private view — fresh tmpfs on /tmp, /var/tmp and /dev/shm, a /dev holding
  only harmless device nodes, empty mounts over the hidden paths, the kept paths put back — makes
  every mount read-only except the worktree, HOME and those tmpfs, brings up loopback, drops every
  capability, and runs the command as its child under rlimits. It samples the namespace's
  processes and memory and kills them all past the whole-check limits, relays the install's
  connections to the worker's egress proxy, and reports to the worker on a file descriptor the
  command cannot reach (it is not inherited, and this process is not dumpable).
"""

from __future__ import annotations

import _signal as signal  # type: ignore[import-not-found]  # no stubs: `signal` without its enum wrapper
import _socket
import ctypes
import fcntl
import os
import resource
import struct
import sys
import time

TYPE_CHECKING = False  # `typing` costs every command ~10 ms to import; only the type checker needs it
if TYPE_CHECKING:
    from typing import Any

_LIBC = ctypes.CDLL(None, use_errno=True)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_BIND, MS_MOVE, MS_REC = 4096, 8192, 16384
MNT_DETACH = 2
AT_FDCWD, AT_RECURSIVE = -100, 0x8000
MOUNT_ATTR_RDONLY = 1
SYS_MOUNT_SETATTR = 442  # the same number on every architecture since the syscall tables were unified
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 4, 24, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 1
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
_RESERVED_PIDS = 300  # the kernel's: PIDs below it are not reused once the counter has wrapped


class SetupError(Exception):
    """A step of the namespace setup failed; the message names it."""


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(errno)}")


def mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    """mount(2); a failure names the target."""
    result = _LIBC.mount(source.encode(), target.encode(), fstype.encode() if fstype else None,
                         ctypes.c_ulong(flags), data.encode() if data else None)
    _check(result, f"mount {fstype or 'bind'} on {target}")


def tmpfs(target: str, size: int, mode: str, noexec: bool = False) -> None:
    """A size- and inode-capped tmpfs (one inode per 4 KiB page, as many as it can hold)."""
    flags = MS_NOSUID | MS_NODEV | (MS_NOEXEC if noexec else 0)
    mount("forgebot", target, "tmpfs", flags, f"size={size},nr_inodes={max(64, size // 4096)},mode={mode}")


def read_only(path: str, recursive: bool, writable: bool = False) -> None:
    """Set (or clear) the read-only flag of the mount at `path`, with its submounts if `recursive`."""
    attr = _MountAttr(0, MOUNT_ATTR_RDONLY, 0, 0) if writable else _MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
    flags = AT_RECURSIVE if recursive else 0
    result = _LIBC.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path.encode(), flags, ctypes.byref(attr),
                           ctypes.sizeof(attr))
    _check(result, f"{'writable' if writable else 'read-only'} {path}")


def layer(config: dict[str, Any]) -> int:
    """The run's writable layer: a bounded tmpfs under the worktree overlay and HOME; waits for EOF."""
    try:
        root, worktree, home = config["layer"], config["worktree"], config["home"]
        tmpfs(root, config["size"], "0755")
        for name in ("upper", "work", "home"):
            os.mkdir(f"{root}/{name}")
        options = f"lowerdir={worktree},upperdir={root}/upper,workdir={root}/work,userxattr"
        mount("forgebot-worktree", worktree, "overlay", 0, options)
        mount(f"{root}/home", home, None, MS_BIND)
    except (OSError, SetupError) as exc:
        os.write(1, f"forgebot-sandbox: layer failed: {exc}\n".encode())
        return 125
    os.write(1, b"ready\n")
    sys.stdin.buffer.read()  # the worker holds the other end: EOF when the run ends or the worker dies
    return 0


def _private_view(config: dict[str, Any]) -> None:
    """Private /tmp, /var/tmp, /dev and /dev/shm, hidden paths covered, kept paths back in place."""
    stage, keep, size = config["stage"], config["keep"], config["tmp_size"]
    tmpfs(stage, size, "1777")
    for n, path in enumerate(keep):
        os.mkdir(f"{stage}/.keep{n}")
        mount(path, f"{stage}/.keep{n}", None, MS_BIND | MS_REC)
    os.mkdir(f"{stage}/.dev", 0o755)
    tmpfs(f"{stage}/.dev", 64 * 1024, "0755", noexec=True)
    for name in DEVICES:
        if os.path.exists(f"/dev/{name}"):
            os.close(os.open(f"{stage}/.dev/{name}", os.O_WRONLY | os.O_CREAT, 0o666))  # to bind onto
            mount(f"/dev/{name}", f"{stage}/.dev/{name}", None, MS_BIND)
    for name in ("shm", "pts"):
        os.mkdir(f"{stage}/.dev/{name}")
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2"), ("ptmx", "pts/ptmx")):
        os.symlink(target, f"{stage}/.dev/{name}")
    mount(stage, "/tmp", None, MS_MOVE)
    mount("/tmp/.dev", "/dev", None, MS_MOVE)
    os.rmdir("/tmp/.dev")
    writable = ["/tmp", "/dev/shm"]
    tmpfs("/dev/shm", size, "1777")
    if os.path.isdir("/var/tmp"):
        tmpfs("/var/tmp", size, "1777")
        writable.append("/var/tmp")
    try:  # terminals for tests that need one; without it only those tests fail
        mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620")
    except SetupError:
        pass
    for path in config["hidden"]:
        if os.path.isdir(path):
            tmpfs(path, 64 * 1024, "0755")
        elif os.path.lexists(path):
            mount("/dev/null", path, None, MS_BIND)
    for n, path in enumerate(keep):
        os.makedirs(path, exist_ok=True)
        mount(f"/tmp/.keep{n}", path, None, MS_BIND | MS_REC)
        _check(_LIBC.umount2(f"/tmp/.keep{n}".encode(), MNT_DETACH), f"unstage {path}")
        os.rmdir(f"/tmp/.keep{n}")
    # everything read-only, then the writable mounts alone (a kept runtime below /tmp stays read-only)
    read_only("/", recursive=True)
    for path in [*writable, *config["writable"]]:
        read_only(path, recursive=False, writable=True)


def _loopback_up() -> None:
    """The fresh network namespace's loopback, down until now: local test servers need it."""
    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
    try:
        request = struct.pack("16sh14x", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, request)[:18])[1]
        fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, struct.pack("16sh14x", b"lo", flags | IFF_UP))
    finally:
        sock.close()


def _cap_pid_namespace(processes: int) -> None:
    """A hard ceiling on the namespace's PIDs where the kernel keeps pid_max per namespace (6.14+).

    Once the PID counter has wrapped, the kernel allocates only from RESERVED_PIDS (300) up to
    pid_max, so pid_max is the limit plus that: a long test run keeps all the PIDs it may use, and a
    burst between two samples stops below limit + 300. Older kernels refuse the write, and then
    only the sampling holds.
    """
    try:
        with open("/proc/sys/kernel/pid_max", "w") as handle:
            handle.write(str(processes + _RESERVED_PIDS))
    except OSError:
        pass


def _drop_privileges() -> None:
    """No capability left (bounding set included, so executing anything as root regains none), no
    new privileges from setuid files, and not dumpable, so the command cannot ptrace this process
    or read its file descriptors through /proc."""
    with open("/proc/sys/kernel/cap_last_cap") as handle:
        last = int(handle.read())
    for cap in range(last + 1):
        _check(_LIBC.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"drop capability {cap}")
    _check(_LIBC.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient capabilities")
    header, data = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    _check(_LIBC.capset(ctypes.byref(header), data), "drop capabilities")
    _check(_LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no new privileges")
    _check(_LIBC.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "not dumpable")


def _relay_connections(control_fd: int, port: int) -> None:
    """Accept the install's proxy connections on loopback and hand each socket to the worker."""
    import socket
    import threading

    control = socket.socket(fileno=control_fd)
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(64)

    def accept() -> None:
        while True:
            connection, _ = server.accept()
            try:
                socket.send_fds(control, [b"c"], [connection.fileno()])
            except OSError:
                return
            finally:
                connection.close()

    threading.Thread(target=accept, daemon=True).start()


def _exec_command(config: dict[str, Any]) -> None:
    """In the forked child: default signals, the rlimits, then the shell with the command."""
    try:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        for name, value in config["rlimits"].items():
            if value > 0:
                hard = value + 1 if name == "CPU" else value  # SIGXCPU first, SIGKILL a second later
                resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (value, hard))
        os.execv("/bin/sh", ["/bin/sh", "-c", config["command"]])
    except BaseException as exc:  # the child must never return into the supervisor
        os.write(2, f"forgebot-sandbox: could not start the command: {exc}\n".encode())
    os._exit(127)


def _files_in_memory(paths: list[str]) -> int:
    """Bytes held by the check's memory-backed filesystems (its tmpfs and the run's layer), each once."""
    seen: set[int] = set()
    total = 0
    for path in paths:
        try:
            device, stats = os.stat(path).st_dev, os.statvfs(path)
        except OSError:
            continue
        if device not in seen:
            seen.add(device)
            total += (stats.f_blocks - stats.f_bfree) * stats.f_frsize
    return total


def _sample(files: list[str]) -> tuple[int, int]:
    """Threads of the namespace (this process excluded), and the memory the check holds: resident
    anonymous and shared-memory pages of its processes plus its files in tmpfs, which are RAM too.
    Forked children that share pages count each: an overestimate."""
    threads, memory = 0, _files_in_memory(files)
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or entry == "1":
            continue
        try:
            with open(f"/proc/{entry}/status", "rb") as handle:
                text = handle.read()
        except OSError:
            continue
        for line in text.split(b"\n"):
            if line.startswith(b"Threads:"):
                threads += int(line.split()[1])
            elif line.startswith((b"RssAnon:", b"RssShmem:")):
                memory += int(line.split()[1]) * 1024
    return threads, memory


def _kill_all() -> None:
    try:
        os.kill(-1, signal.SIGKILL)  # from PID 1: every other process of the namespace
    except ProcessLookupError:
        pass


def _supervise(child: int, config: dict[str, Any]) -> dict[str, Any]:
    """Reap, sample and enforce until the command exits; then kill whatever it left running."""
    max_threads, max_memory = config["processes"], config["memory"]
    interval = config["interval"]
    files = config["memory_files"]
    status: int | None = None
    limit, peak_threads, peak_memory = "", 0, 0
    while status is None:
        for _ in range(1024):  # bounded: orphans of a fork bomb exit faster than any loop reaps them
            try:
                pid, code = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid, code = child, 0
            if pid == 0:
                break
            if pid == child:
                status = code
                break
        if status is not None:
            break
        threads, memory = _sample(files)
        peak_threads, peak_memory = max(peak_threads, threads), max(peak_memory, memory)
        if not limit and max_threads and threads > max_threads:
            limit = "processes"
        elif not limit and max_memory and memory > max_memory:
            limit = "memory"
        if limit:
            _kill_all()
        signal.sigtimedwait([signal.SIGCHLD], interval)  # woken at once when a child exits
    deadline = time.monotonic() + 2  # past it, this process exits and the kernel kills the rest
    while time.monotonic() < deadline:
        _kill_all()
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                time.sleep(0.005)
        except ChildProcessError:
            break
    exit_code = os.waitstatus_to_exitcode(status)
    return {"exit": exit_code, "limit": limit, "peak_threads": peak_threads, "peak_memory": peak_memory}


def command(config: dict[str, Any]) -> int:
    """PID 1 of one command's namespaces: set up, drop privileges, run, supervise, report."""
    report = os.dup(0)  # the worker's report file; not inheritable, so the command never gets it
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.close(null)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # signals from inside must not end the supervision early
    try:
        _cap_pid_namespace(config["processes"])  # while /proc is writable
        _private_view(config)
        os.chdir(config["worktree"])
        _loopback_up()
        _drop_privileges()
    except (OSError, SetupError) as exc:
        os.write(2, f"forgebot-sandbox: setup failed: {exc}\n".encode())
        return 125
    os.write(report, b"ready\n")
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})  # for sigtimedwait; threads inherit it
    if config["egress_fd"] >= 0:
        _relay_connections(config["egress_fd"], config["egress_port"])
    child = os.fork()
    if child == 0:
        if config["egress_fd"] >= 0:
            os.close(config["egress_fd"])
        os.close(report)
        _exec_command(config)
    verdict = _supervise(child, config)
    os.write(report, (repr(verdict) + "\n").encode())
    code = int(verdict["exit"])
    return code if code >= 0 else 128 - code


def main() -> int:
    config: dict[str, Any] = eval(sys.argv[1], {"__builtins__": {}})  # the worker's own literal, nothing else
    return layer(config) if config["role"] == "layer" else command(config)


if __name__ == "__main__":
    sys.exit(main())
