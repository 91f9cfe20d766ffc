"""Real worker processes on a real Redis: cancel, one run per issue, poison jobs, timeouts, SIGTERM."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest

from tests.durability.harness import (
    DEADLINE,
    Cluster,
    analyze_event,
    reaper_settled,
    seed_forge,
    submit,
    task_rows,
    until,
    wait_for,
    workers_ready,
)
from tests.durability.script import REPORT_HEADING
from tests.fakes.forge_http import FakeForgeState
from tests.fakes.server import ServerThread

FINISHED = ("done", "failed", "cancelled")
pytestmark = pytest.mark.timeout(300)  # worker processes start slowly on a loaded machine; the polls bound each step


def _bodies(forge: FakeForgeState, number: int) -> list[str]:
    return [c.body for c in forge.comments_on("gitlab", "1", number)]


async def _settled(cluster: Cluster, forge: FakeForgeState, number: int) -> list[str]:
    """The comments once the note posted just after the state change has landed, and every live
    worker's reaper has since had its chance to (wrongly) post again."""
    await until(lambda: bool(_bodies(forge, number)), f"a comment on issue {number}")
    await reaper_settled(cluster)
    return _bodies(forge, number)


async def test_cancel_stops_a_running_task(cluster: Cluster, fake_forge: FakeForgeState) -> None:
    cluster.configure(delay=3.0)  # each model call: the task is surely mid-node when /cancel arrives
    seed_forge(fake_forge, [3])
    await workers_ready(cluster, 2)  # the second worker takes /cancel while the first runs the task
    [task] = await submit(cluster, [analyze_event(3, "slow-task")])
    assert await wait_for(cluster, [task], ("running",)) == {task: "running"}
    await submit(cluster, [analyze_event(3, "cancel-it", trigger="cancel")])
    assert await wait_for(cluster, [task], FINISHED) == {task: "cancelled"}
    # arq logs "⊘ <job> aborted" once the job's coroutine has ended on the cancellation: from then on
    # it cannot post; an un-aborted run would have gone on to the next node and its report
    await until(lambda: "aborted" in cluster.logs(), "arq to abort the running job")
    # the /cancel job posts its note after the state change
    await until(lambda: any(f"Cancelled task {task}" in b for b in _bodies(fake_forge, 3)), "the cancel note")
    bodies = _bodies(fake_forge, 3)
    assert len(bodies) == 1 and bodies[0].startswith(f"Cancelled task {task}"), bodies
    assert (await task_rows(cluster))[task].detail == "cancelled by root"


async def test_two_workers_never_run_one_issue_at_once(cluster: Cluster, fake_forge: FakeForgeState) -> None:
    cluster.configure(delay=1.0)  # the first run is still going when the second request is taken
    seed_forge(fake_forge, [4])
    await workers_ready(cluster, 2)  # both requests are taken at once, one by each worker
    first, second = analyze_event(4, "label-then"), analyze_event(4, "command-now", trigger="command")
    tasks = await submit(cluster, [first, second])
    states = await wait_for(cluster, tasks, FINISHED)
    assert sorted(states.values()) == ["cancelled", "done"], cluster.logs()
    bodies = _bodies(fake_forge, 4)
    assert len(bodies) == 2 and sum(REPORT_HEADING in b for b in bodies) == 1, bodies
    assert sum("is already running here" in b for b in bodies) == 1, bodies


def _cluster(tmp_path: Path, redis_url: str, forge: ServerThread, **overrides: object) -> Cluster:
    return Cluster.create(tmp_path / "cluster", redis_url, forge.url, **overrides)


@pytest.mark.slow
async def test_poison_job_fails_once_with_one_comment(
    tmp_path: Path, redis_url: str, forge_server: ServerThread, fake_forge: FakeForgeState
) -> None:
    """Every try kills its worker: bounded by max_tries, then one failure comment and the lock freed."""
    cluster = _cluster(tmp_path, redis_url, forge_server, max_tries=2)
    try:
        seed_forge(fake_forge, [5])
        event = analyze_event(5, "poison")
        cluster.arm(event.task_id, "analyzer!")
        [task] = await submit(cluster, [event])
        states = await wait_for(cluster, [task], FINISHED, workers=2)
        assert states == {task: "failed"}, cluster.logs()
        assert cluster.killed() == 2  # max_tries tries, no more
        bodies = await _settled(cluster, fake_forge, 5)
        assert len(bodies) == 1 and bodies[0].startswith("forgebot could not finish this task"), bodies
        # the issue is free again: a new request runs
        (Path(cluster.config["kill_dir"]) / task).unlink()
        [again] = await submit(cluster, [analyze_event(5, "after-poison")])
        assert await wait_for(cluster, [again], FINISHED, workers=1) == {again: "done"}
    finally:
        cluster.stop()


@pytest.mark.slow
async def test_job_timeout_fails_once_with_one_comment(
    tmp_path: Path, redis_url: str, forge_server: ServerThread, fake_forge: FakeForgeState
) -> None:
    cluster = _cluster(tmp_path, redis_url, forge_server, job_timeout=2, delay=4.0)
    try:
        seed_forge(fake_forge, [6])
        [task] = await submit(cluster, [analyze_event(6, "too-slow")])
        assert await wait_for(cluster, [task], FINISHED, workers=1) == {task: "failed"}
        bodies = await _settled(cluster, fake_forge, 6)
        assert len(bodies) == 1 and "could not finish" in bodies[0], bodies
    finally:
        cluster.stop()


@pytest.mark.slow
async def test_sigterm_lets_the_running_task_finish(
    tmp_path: Path, redis_url: str, forge_server: ServerThread, fake_forge: FakeForgeState
) -> None:
    cluster = _cluster(tmp_path, redis_url, forge_server, delay=1.0)
    try:
        seed_forge(fake_forge, [8])
        worker = cluster.start_worker()
        [task] = await submit(cluster, [analyze_event(8, "deploy")])
        assert await wait_for(cluster, [task], ("running",)) == {task: "running"}
        worker.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(worker.wait, DEADLINE) == 0
        assert (await task_rows(cluster))[task].state == "done", cluster.logs()
        assert len(_bodies(fake_forge, 8)) == 1
    finally:
        cluster.stop()
