"""SIGKILL a real worker inside each graph node: the task still ends done, with exactly one report.

Two worker processes share one Redis and one store; the armed one dies right after the node's
model answer or forge write (before the node's checkpoint), the other picks the job up once the
dead worker's lease lapses, and the run resumes from the last checkpoint.
"""

from __future__ import annotations

import re

import pytest

from graph.routing import ENTRY_NODES
from tests.durability.harness import Cluster, analyze_event, seed_forge, submit, wait_for
from tests.durability.script import REPORT_HEADING
from tests.fakes.forge_http import FakeForgeState

# the analyze route's nodes; the implement and review routes' nodes join this list when they exist
ANALYZE_NODES = ["decomposer", "analyzer", "publisher"]


def _calls(logs: str, node: str) -> int:
    return len(re.findall(rf"model-call node={node}\b", logs))


@pytest.mark.parametrize("node", ANALYZE_NODES)
async def test_sigkill_inside_a_node_ends_done_with_one_report(
    cluster: Cluster, fake_forge: FakeForgeState, node: str
) -> None:
    assert "analyze" in ENTRY_NODES
    seed_forge(fake_forge, [7])
    cluster.arm(node)
    dying, _ = cluster.start_worker(), cluster.start_worker()
    [task] = await submit(cluster, [analyze_event(7, f"kill-{node}")])
    states = await wait_for(cluster, [task], ("done", "failed", "cancelled"), timeout=40)
    logs = cluster.logs()
    assert not cluster.armed(), logs  # the kill fired
    assert states == {task: "done"}, logs
    assert sum(p.returncode == -9 for p in cluster.procs if p.poll() is not None) == 1
    del dying
    bodies = [c.body for c in fake_forge.comments_on("gitlab", "1", 7)]
    assert len(bodies) == 1, bodies
    assert REPORT_HEADING in bodies[0]
    # completed nodes are not re-run: the decomposer answered once unless it was the one killed
    assert _calls(logs, "decomposer") == (2 if node == "decomposer" else 1)
    assert _calls(logs, "analyzer") == (2 if node == "analyzer" else 1)
