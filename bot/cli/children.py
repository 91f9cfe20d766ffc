"""Child processes that must not outlive the process that started them.

`forgebot serve` starts a private redis-server and a worker process. If `serve` is killed with
SIGKILL (the OOM killer, `kill -9`, a container runtime out of patience) it gets no chance to stop
them, and an orphaned redis-server would keep the data directory's socket and AOF busy for the
next start. Linux's parent-death signal covers that: `prctl(PR_SET_PDEATHSIG, sig)` set in the
child between fork and exec makes the kernel send `sig` to the child the moment its parent dies,
whatever killed the parent. It survives `exec`, so it works for any program.

The kernel ties the signal to the *thread* that forked the child, so `die_with_parent` only arms
it when called from the main thread (a pool thread ending would otherwise kill a healthy child);
elsewhere, and on systems without `prctl`, it arms nothing and says so in the log.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import signal
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1


def _prctl() -> Callable[..., int] | None:
    """libc's prctl, looked up before any fork (nothing may be loaded between fork and exec)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        function: Callable[..., int] = libc.prctl
    except (OSError, AttributeError):
        return None
    return function


_PRCTL = _prctl()


def die_with_parent(sig: signal.Signals = signal.SIGTERM) -> Callable[[], None] | None:
    """A `preexec_fn` for `subprocess.Popen`: the child gets `sig` when this process dies.

    The child also checks that its parent is still the one that forked it: a parent dying between
    fork and `prctl` would otherwise leave it orphaned after all.
    """
    if _PRCTL is None:
        log.warning("no prctl here: child processes may outlive a killed parent")
        return None
    if threading.current_thread() is not threading.main_thread():
        log.warning("child started off the main thread: no parent-death signal")
        return None
    parent, prctl = os.getpid(), _PRCTL

    def arm() -> None:
        prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the signal was armed
            os.kill(os.getpid(), sig)

    return arm
