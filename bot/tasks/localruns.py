"""Which process runs a `forgebot run` task, and settling the runs whose process is gone.

A local run records itself as a `running` task and writes its end when it finishes, fails or is
interrupted. A process killed outright (`kill -9`, the out-of-memory killer, a machine that lost
power) writes nothing: no arq job stands behind it for the worker's reaper to ask about, so the task
would read `running` forever in `forgebot tasks` and the console. Each run therefore records its
owner as `local:<host>:<pid>:<start>` (`start`: the process's start time, so a reused pid is not
taken for the run), and a reader on the same host that finds the process gone settles the task as
failed with a record saying so. `forgebot tasks` settles before it lists; the worker's reaper (in
`serve`, every reap interval) settles for the console.

This module stays light: `forgebot tasks` imports it.
"""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path

from bot.tasks.inbox import Inbox
from graph.failure import run_lost

log = logging.getLogger(__name__)

PREFIX = "local:"  # the start of a local run's task key and of its owner


def _started(pid: int) -> str:
    """The process's start time in clock ticks since boot ("" where /proc cannot tell)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    fields = stat.rsplit(")", 1)[-1].split()  # after the command name, which may hold spaces
    return fields[19] if len(fields) > 19 else ""


def _zombie(pid: int) -> bool:
    """Exited, not yet reaped by its parent: gone for our purposes."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat.rsplit(")", 1)[-1].split()
    return bool(fields) and fields[0] in ("Z", "X")


def owner() -> str:
    """This process as the owner of the run it records."""
    pid = os.getpid()
    return f"{PREFIX}{socket.gethostname()}:{pid}:{_started(pid)}"


def where(job_id: str) -> tuple[str, int] | None:
    """(host, pid) of a local run's owner; None for an owner that is not one.

    An owner written before the host and start time were recorded (`local:<pid>`) is this host's.
    """
    rest = job_id.removeprefix(PREFIX)
    if rest == job_id:
        return None
    if rest.isdigit():
        return socket.gethostname(), int(rest)
    parts = rest.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    return parts[0], int(parts[1])


def gone(job_id: str) -> bool:
    """True when the owner is a process of this host that no longer runs (or whose pid now belongs
    to a later process); False when it runs, or when this host cannot tell (another machine)."""
    found = where(job_id)
    if found is None or found[0] != socket.gethostname():
        return False
    pid = found[1]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's live process
        return False
    if _zombie(pid):
        return True
    start = job_id.rsplit(":", 1)[-1] if job_id.count(":") >= 3 else ""
    now = _started(pid)
    return bool(start and now) and start != now


async def settle_lost(inbox: Inbox) -> list[str]:
    """Fail every running local task whose process is gone; their ids. One warning line each."""
    settled: list[str] = []
    for task in await inbox.tasks_in("running"):
        if not task.task_key.startswith(PREFIX) or not gone(task.job_id):
            continue
        host, pid = where(task.job_id) or ("?", 0)
        record = run_lost(pid, host)
        if await inbox.set_state(task.task_id, "failed", record.kind, only_from=("running",),
                                 failure=record.to_json()):
            log.warning("%s", record.log_line(task.task_id))
            settled.append(task.task_id)
    return settled
