"""A repository's `.forgebot.yml` cannot freeze the receiver.

A label delivery makes the receiver read the repository's `.forgebot.yml` through the forge and
validate it. The validation used to run on the receiver's event loop, with an error description
quadratic in the number of invalid fields: one 55 KB file of 7,000 invalid entries and one signed
label delivery stalled every project's webhooks and `/healthz` for seconds (30-54 s measured at
8,000). Now it runs in a child process, killed past the look-up's time, and the description is
linear and capped. Through the real receiver over HTTP, with the fake GitLab serving the file:
while the delivery is being answered, `/healthz` keeps answering at once.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path

import httpx
import pytest

from bot.web.app import create_app
from foundation.settings import Settings
from project.configchild import ConfigChild
from project.repoconfig import RepoConfigError
from tests.e2e.test_repo_labels import SAMPLES, _commit_config, _labeled, _setup
from tests.fakes.forge_http import FakeForgeState
from tests.fakes.server import serving
from tests.intake import deliveries

ENTRIES = 7_000


def hostile_config(entries: int = ENTRIES) -> str:
    """`commands.lint` with thousands of entries none of which is a command (under 64 KiB)."""
    return "commands:\n  lint: {" + ",".join(f"k{i}:1" for i in range(entries)) + "}\n"


def test_a_hostile_config_leaves_healthz_answering(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, origin_url: str, tmp_path: Path
) -> None:
    _setup("gitlab", settings, redis_url, fake_forge)
    settings.intake.repo_labels_timeout = 8.0  # room for the old parse to show its stall
    _commit_config(tmp_path, hostile_config())
    body, headers = _labeled("gitlab", origin_url, SAMPLES["gitlab"][0])
    answered: list[tuple[int, float]] = []
    with serving(create_app(settings)) as receiver, httpx.Client(base_url=receiver.url, timeout=60) as client:
        assert client.get("/healthz").status_code == 200

        def deliver() -> None:
            started = time.monotonic()
            response = client.post(deliveries.path("gitlab", body), content=body, headers=headers)
            answered.append((response.status_code, time.monotonic() - started))

        sender = threading.Thread(target=deliver)
        sender.start()
        slowest, probes = 0.0, 0
        with httpx.Client(base_url=receiver.url, timeout=60) as prober:
            while sender.is_alive():
                started = time.monotonic()
                assert prober.get("/healthz").status_code == 200
                slowest, probes = max(slowest, time.monotonic() - started), probes + 1
                time.sleep(0.02)
        sender.join()
    assert answered and answered[0][0] == 202, answered  # the server's label, as for any invalid file
    # before: one probe, stuck for the whole validation (32 s). The bound is loose on purpose (the
    # machine is shared; no test asserts a latency): tests/bench/bench_receiver_isolation.py
    # measures the p99.
    assert slowest < 5.0 and probes > 1, f"/healthz waited {slowest:.2f} s behind the validation ({probes} probes)"


async def test_a_validation_past_its_time_is_killed_and_the_next_one_runs() -> None:
    child = ConfigChild(timeout=0.001)  # 55 KB of 7,000 invalid entries is not validated in a millisecond
    with pytest.raises(RepoConfigError, match="took longer than"):
        await child.labels(hostile_config(), ".forgebot.yml")
    killed = child._process
    assert killed is None  # killed, not left running; a new child is already starting
    child._timeout = 30.0
    assert (await child.labels("labels:\n  implement: go\n", ".forgebot.yml")).implement == "go"
    with pytest.raises(RepoConfigError, match="is invalid") as refused:
        await child.labels(hostile_config(), ".forgebot.yml")
    assert len(str(refused.value)) < 4000 and "more invalid fields" in str(refused.value)
    process = child._process
    await child.close()
    assert process is not None and process.returncode is not None
    await asyncio.sleep(0)


async def test_a_slow_child_start_does_not_count_against_the_validation(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # a busy machine: the child's Python takes 2 s to start (a sitecustomize that sleeps), the limit is 1 s
    (tmp_path / "sitecustomize.py").write_text("import time\ntime.sleep(2)\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    child = ConfigChild(timeout=1.0)
    child.start()
    try:
        # before: the start counted, and the repository's labels were refused as "took longer than 1 s"
        assert (await child.labels("labels:\n  implement: go\n", ".forgebot.yml")).implement == "go"
    finally:
        await child.close()
