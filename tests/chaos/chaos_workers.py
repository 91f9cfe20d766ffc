"""Chaos: N analyze tasks on real worker processes, workers SIGKILLed at random moments.

    /work/venv/bin/python tests/chaos/chaos_workers.py --tasks 60 --kills 50
    /work/venv/bin/python tests/chaos/chaos_workers.py --postgres postgresql://postgres@127.0.0.1:5432/test

Starts a private redis-server, the fake HTTP forge and `--workers` worker processes
(`tests.durability.worker_main`: the product's worker with a scripted model that takes `--delay`
seconds per call). While tasks remain, it SIGKILLs a random worker every 0.2-`--max-gap` seconds
and restarts killed workers, until `--kills` kills have landed; then it waits for every task.
A task is killed on at most `--max-tries` - 1 of its tries (on all of them with `--poison`: it then
ends failed, with one comment).
Reports: the share of tasks in a terminal state, duplicate comments on the fake forge (every issue
must end with exactly one comment: the report or one failure note), and recovery time: from the
kill of a worker in the middle of a task to that task's next start on another worker.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bot.cli.redisserver import PrivateRedis
from tests.durability.harness import Cluster, analyze_event, drop_schema, fresh_schema, seed_forge, submit, task_rows
from tests.fakes.forge_http import FakeForgeState, create_fake_forge
from tests.fakes.server import ServerThread

TERMINAL = ("done", "failed", "cancelled", "waiting")
START = re.compile(r"^(\d+\.\d+) w(\d+) bot\.jobs task start delivery=(\S+) task=(\w+)", re.M)
RELEASED = re.compile(r"^(\d+\.\d+) w\d+ bot\.recovery released job (\S+):", re.M)
END = re.compile(r"^(\d+\.\d+) w(\d+) arq\.worker .*← \S+:run_task ", re.M)


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


async def _chaos(cluster: Cluster, tasks: list[str], args: argparse.Namespace) -> list[tuple[float, int]]:
    """Kill workers at random until enough kills landed; returns (time, pid) of each kill."""
    kills: list[tuple[float, int]] = []
    rng = random.Random(args.seed)
    per_task: dict[str, int] = {}
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        cluster.keep(args.workers)
        states = (await task_rows(cluster)).values()
        if all(t.state in TERMINAL for t in states) and len(states) == len(tasks):
            break
        await asyncio.sleep(rng.uniform(0.2, args.max_gap))
        alive = cluster.alive()
        # mid-task, at a random moment: that is what recovery is about; unless --poison, a task is
        # killed on fewer tries than it has, so a failure would be the product's, not the try limit's
        limit = args.max_tries if args.poison else args.max_tries - 1
        busy = [(p, t) for p in alive if (t := _current(cluster.log_path(p))) and per_task.get(t, 0) < limit]
        if len(kills) < args.kills and busy:
            victim, task = rng.choice(busy)
            victim.send_signal(signal.SIGKILL)
            kills.append((time.time(), victim.pid))
            per_task[task] = per_task.get(task, 0) + 1
    return kills


def _current(log: Path) -> str | None:
    """The task the worker writing `log` is in the middle of, if any."""
    text = log.read_text(errors="replace")
    starts, ends = START.findall(text), END.findall(text)
    if starts and (not ends or float(starts[-1][0]) > float(ends[-1][0])):
        return str(starts[-1][3])
    return None


def _recoveries(logs: str, kills: list[tuple[float, int]]) -> tuple[list[float], list[float]]:
    """For each kill that interrupted a task: seconds until its job was released to other workers,
    and until the task started again (that one includes waiting for a free worker)."""
    starts = [(float(t), int(pid), job, task) for t, pid, job, task in START.findall(logs)]
    ends = [(float(t), int(pid)) for t, pid in END.findall(logs)]
    released = [(float(t), job) for t, job in RELEASED.findall(logs)]
    to_release: list[float] = []
    to_restart: list[float] = []
    for killed_at, pid in kills:
        mine = [(t, job, task) for t, p, job, task in starts if p == pid and t <= killed_at]
        if not mine:
            continue  # killed while idle or starting up
        began, job, task = max(mine)
        if any(p == pid and began <= t <= killed_at for t, p in ends):
            continue  # its last task had finished
        freed = [t for t, other in released if other == job and t > killed_at]
        if freed:
            to_release.append(min(freed) - killed_at)
        later = [t for t, _, _, other in starts if other == task and t > killed_at]
        if later:
            to_restart.append(min(later) - killed_at)
    return to_release, to_restart


def _spread(name: str, values: list[float]) -> None:
    if values:
        values = sorted(values)
        median, worst = values[len(values) // 2], values[-1]
        _out(f"{name}: n={len(values)} median {median:.1f}s max {worst:.1f}s")


def _report(forge: FakeForgeState, rows: dict[str, str], numbers: range, kills: int) -> None:
    terminal = sum(state in TERMINAL for state in rows.values())
    comments = {n: forge.comments_on("gitlab", "1", n) for n in numbers}
    duplicates = sum(max(len(c) - 1, 0) for c in comments.values())
    by_state: dict[str, int] = {}
    for state in rows.values():
        by_state[state] = by_state.get(state, 0) + 1
    _out(f"tasks {len(rows)}  kills {kills}  states {dict(sorted(by_state.items()))}")
    _out(f"terminal {terminal}/{len(rows)} = {100 * terminal / max(len(rows), 1):.1f}%")
    _out(f"duplicate comments {duplicates}  issues without a comment {sum(not c for c in comments.values())}")


async def main(args: argparse.Namespace) -> int:
    root = Path(tempfile.mkdtemp(prefix="fb-chaos-"))
    state = FakeForgeState()
    redis_server, forge = PrivateRedis(root / "redis"), ServerThread(create_fake_forge(state))
    (root / "redis").mkdir()
    redis_server.start()
    forge.start()
    extra = {"database_url": fresh_schema(args.postgres)} if args.postgres else {}
    cluster = Cluster.create(root / "cluster", redis_server.url, forge.url, delay=args.delay,
                             max_tries=args.max_tries, job_timeout=args.job_timeout, **extra)
    numbers = range(1, args.tasks + 1)
    try:
        seed_forge(state, numbers)
        tasks = await submit(cluster, [analyze_event(n, f"chaos-{args.seed}-{n}") for n in numbers])
        began = time.monotonic()
        kills = await _chaos(cluster, tasks, args)
        rows: dict[str, str] = {t: r.state for t, r in (await task_rows(cluster)).items()}
        _out(f"wall {time.monotonic() - began:.1f}s  workers {args.workers}  delay {args.delay}s/model call")
        await asyncio.sleep(1)  # a failure note posted right after its state change
        _report(state, rows, numbers, len(kills))
        exhausted = len(re.findall(r"run_task max retries \d+ exceeded", cluster.logs()))
        _out(f"tasks failed because every one of their {args.max_tries} tries was killed: {exhausted}")
        release, restart = _recoveries(cluster.logs(), kills)
        _out(f"lease {cluster.config['lease_seconds']}s, reaper every {cluster.config['reap_interval']}s")
        _spread("recovery, kill → job released to the other workers", release)
        _spread("kill → task running again (includes waiting for a free worker)", restart)
        ok = all(s in TERMINAL for s in rows.values())
        return 0 if ok else 1
    finally:
        cluster.stop()
        if args.postgres:
            drop_schema(cluster.config["database_url"])
        forge.stop()
        redis_server.stop()
        if args.keep:
            _out(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=60)
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--delay", type=float, default=0.5, help="seconds per scripted model call")
    parser.add_argument("--max-gap", type=float, default=2.0, help="longest pause between two kills")
    parser.add_argument("--max-tries", type=int, default=5)
    parser.add_argument("--job-timeout", type=int, default=60)
    parser.add_argument("--timeout", type=float, default=600.0, help="give up after this many seconds")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the worker logs and data")
    parser.add_argument("--poison", action="store_true", help="allow killing one task on every one of its tries")
    parser.add_argument("--postgres", default="", help="database URL: checkpointer and task store on Postgres")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse())))
