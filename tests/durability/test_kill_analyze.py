"""SIGKILL a real worker inside each node of the analyze route (decomposer, analyzer, publisher): every
task still ends done, with exactly one report. (The implement route's coder session is killed and
resumed in test_session_resume.py.)

Workers share one Redis and one store. Each task is armed to kill its worker inside one node, right
after the node's model answer or forge write (before the node's checkpoint); a supervisor restarts
killed workers, a live worker picks the job up once the dead one's lease lapses, and the run resumes
from the last checkpoint. Checked on SQLite and on Postgres (checkpointer and task store).
"""

from __future__ import annotations

import re

import pytest

from tests.durability.harness import Cluster, analyze_event, seed_forge, submit, wait_for
from tests.durability.script import REPORT_HEADING
from tests.fakes.forge_http import FakeForgeState

NODES = ["decomposer", "analyzer", "publisher"]  # an analyze run that finds criteria passes each once
pytestmark = pytest.mark.timeout(300)  # worker processes start slowly on a loaded machine; the polls bound each step


def _calls(logs: str, task: str, node: str) -> int:
    return len(re.findall(rf"model-call task={task} node={node}\b", logs))


async def test_sigkill_inside_each_analyze_node_ends_done_with_one_report(
    cluster: Cluster, fake_forge: FakeForgeState
) -> None:
    nodes = NODES
    seed_forge(fake_forge, range(1, len(nodes) + 1))
    events = [analyze_event(n, f"kill-{node}") for n, node in enumerate(nodes, start=1)]
    for event, node in zip(events, nodes, strict=True):
        cluster.arm(event.task_id, node)
    tasks = await submit(cluster, events)
    states = await wait_for(cluster, tasks, ("done", "failed", "cancelled"), workers=2)
    logs = cluster.logs()
    assert states == dict.fromkeys(tasks, "done"), logs
    assert cluster.armed() == [] and cluster.killed() == len(nodes), logs
    for number, (task, node) in enumerate(zip(tasks, nodes, strict=True), start=1):
        bodies = [c.body for c in fake_forge.comments_on("gitlab", "1", number)]
        assert len(bodies) == 1 and REPORT_HEADING in bodies[0], (node, bodies)
        # completed nodes are not re-run: only the killed node may ask its model again (the kill lands on
        # its first forge write — the status edit when the node starts — or its first model answer);
        # the analyzer asks twice per run (its tool loop, then the synthesis)
        for model_node, per_run in (("decomposer", 1), ("analyzer", 2)):
            calls = _calls(logs, task, model_node)
            if model_node == node:
                assert per_run <= calls <= per_run + 1, (node, model_node, calls)
            else:
                assert calls == per_run, (node, model_node, calls)
