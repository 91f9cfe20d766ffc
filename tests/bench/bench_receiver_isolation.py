"""`/healthz` latency of `forgebot web` while hostile repository configs and a 300 MB console POST hit it.

The receiver is a real `forgebot web` process (a real redis-server, its SQLite inbox, the console on).
The fake GitLab runs here and serves, for each of `--projects` projects, a `.forgebot.yml` of 7,000
invalid entries (55 KB: the file that once stalled the receiver 32 s). During the attack phase, side
by side for `--seconds`:

- label deliveries, signed with each project's hook secret, `--senders` at a time, cycling through
  the projects (each one makes the receiver read and validate that project's file);
- one client after another POSTing 300 MB to `/console/login` without declaring its length, and one
  declaring it;
- a prober in its own process asking `/healthz` every 20 ms (so this process's own load does not
  delay its clock).

A baseline phase probes the idle receiver first. It prints the probe latencies (p50, p99, max) of
both phases and their ratio, what the attackers achieved (deliveries answered and how, bytes the
300 MB POSTs got to send before the answer), and the web process's resident memory and CPU.

    .venv/bin/python tests/bench/bench_receiver_isolation.py [--seconds 20] [--projects 40] [--senders 4]

Figures are from one run on a shared machine; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bot.cli.redisserver import PrivateRedis  # noqa: E402
from tests.bench.bench_intake import cpu_seconds, process  # noqa: E402
from tests.conftest import GITLAB_SECRET  # noqa: E402
from tests.e2e.test_receiver_isolation import hostile_config  # noqa: E402
from tests.fakes.forge_http import FakeForgeState, create_fake_forge  # noqa: E402
from tests.fakes.forge_state import FakeProject  # noqa: E402
from tests.fakes.samples import sample  # noqa: E402
from tests.fakes.server import ServerThread, free_port  # noqa: E402
from tests.intake import deliveries  # noqa: E402

OPERATOR = "bench-operator-9f8e7d6c5b4a39281706"
HUGE = 300 * 1024 * 1024
PROBER = """
import json, sys, time, httpx
url, seconds = sys.argv[1], float(sys.argv[2])
found = []
with httpx.Client(timeout=30) as client:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        started = time.monotonic()
        ok = client.get(url).status_code == 200
        found.append((time.monotonic() - started) * 1000 if ok else -1.0)
        time.sleep(0.02)
print(json.dumps(found))
"""


def served_repository(work: Path) -> Path:
    """A bare repository whose default branch holds the hostile `.forgebot.yml`."""
    bare, tree = work / "app.git", work / "tree"
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(tree)], check=True)
    (tree / ".forgebot.yml").write_text(hostile_config())
    subprocess.run([*git, "-C", str(tree), "add", "."], check=True)
    subprocess.run([*git, "-C", str(tree), "commit", "-qm", "hostile config"], check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(tree), str(bare)], check=True)
    return bare


def label_delivery(project_id: int, n: int) -> tuple[str, bytes, dict[str, str]]:
    payload: dict[str, Any] = sample("gitlab/issue.labels-changed.json")
    payload["project"]["id"] = project_id
    payload["object_attributes"]["iid"] = n
    body, headers = deliveries.gitlab(payload, "Issue Hook", key=f"bench-{project_id}-{n}")
    return deliveries.path("gitlab", body), body, headers


class Attack:
    def __init__(self, url: str, port: int, projects: list[int]) -> None:
        self.url, self.port, self.projects = url, port, projects
        self.stop = threading.Event()
        self.answers: dict[int, int] = {}
        self.delivery_ms: list[float] = []
        self.posts: list[tuple[int, int]] = []  # (bytes sent before the answer, status)
        self.lock = threading.Lock()

    def deliver(self, offset: int) -> None:
        n = offset
        with httpx.Client(base_url=self.url, timeout=60) as client:
            while not self.stop.is_set():
                path, body, headers = label_delivery(self.projects[n % len(self.projects)], n)
                started = time.monotonic()
                status = client.post(path, content=body, headers=headers).status_code
                with self.lock:
                    self.answers[status] = self.answers.get(status, 0) + 1
                    self.delivery_ms.append((time.monotonic() - started) * 1000)
                n += 1000

    def post_huge(self, declare: bool) -> None:
        chunk = b"token=" + b"t" * (256 * 1024 - 6)
        while not self.stop.is_set():
            sock = socket.create_connection(("127.0.0.1", self.port))
            head = f"Content-Length: {HUGE}" if declare else "Transfer-Encoding: chunked"
            sock.sendall(f"POST /console/login HTTP/1.1\r\nHost: x\r\nContent-Type: "
                         f"application/x-www-form-urlencoded\r\n{head}\r\n\r\n".encode())
            sent, answer = 0, b""
            sock.settimeout(0.05)
            while sent < HUGE and not self.stop.is_set():
                try:
                    answer = sock.recv(4096)
                    break
                except TimeoutError:
                    pass
                except OSError:
                    break
                piece = chunk if declare else b"%x\r\n" % len(chunk) + chunk + b"\r\n"
                try:
                    sock.settimeout(5)
                    sock.sendall(piece)
                    sent += len(chunk)
                    sock.settimeout(0.05)
                except OSError:
                    break
            status = int(answer.split(b" ")[1]) if answer.startswith(b"HTTP/1.1 ") else 0
            sock.close()
            with self.lock:
                self.posts.append((sent, status))


def probe(url: str, seconds: float) -> list[float]:
    done = subprocess.run([sys.executable, "-c", PROBER, f"{url}/healthz", str(seconds)], capture_output=True,
                          text=True, check=True)
    return [float(x) for x in json.loads(done.stdout)]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def line(name: str, values: list[float]) -> str:
    ok = [v for v in values if v >= 0]
    return (f"{name:<10}{len(values):>7}{len(values) - len(ok):>7}{statistics.median(ok):>9.1f}"
            f"{percentile(ok, 0.99):>9.1f}{max(ok):>9.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--projects", type=int, default=40)
    parser.add_argument("--senders", type=int, default=4)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fb-bench-iso-"))
    redis_server = PrivateRedis(work / "redis")
    redis_server.start()
    state = FakeForgeState()
    bare = served_repository(work)
    projects = list(range(100, 100 + args.projects))
    for project_id in projects:
        state.add_project("gitlab", FakeProject(id=project_id, path=f"group/app{project_id}", git_dir=str(bare)))
    forge = ServerThread(create_fake_forge(state))
    forge.start()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORGEBOT_")} | {
        "FORGEBOT_REDIS_URL": redis_server.url, "FORGEBOT_DATA_DIR": str(work / "data"), "PYTHONPATH": str(ROOT),
        "FORGEBOT_GITLAB__URL": f"{forge.url}/gitlab", "FORGEBOT_GITLAB__TOKEN": "glpat-bench-token",
        "FORGEBOT_GITLAB__WEBHOOK_SECRET": GITLAB_SECRET, "FORGEBOT_GITLAB__BOT_USER_ID": "4242",
        "FORGEBOT_INTAKE__MAX_EVENT_AGE_HOURS": "0", "FORGEBOT_CONSOLE__OPERATOR_TOKEN": OPERATOR,
        # no cache: every delivery validates its project's file again (the worst case, not the default)
        "FORGEBOT_INTAKE__REPO_LABELS_CACHE_SECONDS": "0",
    }
    command = [sys.executable, "-m", "bot", "web", "--host", "127.0.0.1", "--port", str(port)]
    try:
        with process(command, env, port, work / "web.log") as (url, pid):
            baseline = probe(url, args.seconds / 2)
            rss_before, cpu_before = rss_mb(pid), cpu_seconds(pid)
            attack = Attack(url, port, projects)
            threads = [threading.Thread(target=attack.deliver, args=(i,)) for i in range(args.senders)]
            threads += [threading.Thread(target=attack.post_huge, args=(declare,)) for declare in (False, True)]
            for thread in threads:
                thread.start()
            time.sleep(1.0)  # the attack under way before the probes start
            during = probe(url, args.seconds)
            rss_peak = rss_mb(pid)
            attack.stop.set()
            for thread in threads:
                thread.join(60)
            cpu_used = cpu_seconds(pid) - cpu_before
        report(baseline, during, attack, rss_before, rss_peak, cpu_used, args)
    finally:
        forge.stop()
        redis_server.stop()
        shutil.rmtree(work, ignore_errors=True)


def report(baseline: list[float], during: list[float], attack: Attack, rss_before: float, rss_peak: float,
           cpu_used: float, args: argparse.Namespace) -> None:
    out = sys.stdout.write
    out(f"/healthz every 20 ms; {args.projects} projects with a 55 KB config of 7,000 invalid entries, "
        "the label cache off\n")
    out(f"{'phase':<10}{'probes':>7}{'failed':>7}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}\n")
    out(line("idle", baseline) + "\n")
    out(line("attack", during) + "\n")
    ok_idle = [v for v in baseline if v >= 0]
    ok_attack = [v for v in during if v >= 0]
    out(f"p99 attack / idle: {percentile(ok_attack, 0.99) / percentile(ok_idle, 0.99):.2f}x\n")
    answered = ", ".join(f"{status}: {count}" for status, count in sorted(attack.answers.items()))
    out(f"label deliveries answered: {sum(attack.answers.values())} ({answered}); "
        f"p50 {statistics.median(attack.delivery_ms):.0f} ms, p99 {percentile(attack.delivery_ms, 0.99):.0f} ms\n")
    streamed = [sent for sent, _ in attack.posts]
    statuses: dict[int, int] = {}
    for _, status in attack.posts:
        statuses[status] = statuses.get(status, 0) + 1
    how = ", ".join(f"{status or 'closed before the answer was read'}: {n}" for status, n in sorted(statuses.items()))
    out(f"300 MB console POSTs: {len(attack.posts)} ({how}); bytes sent before the answer: "
        f"max {max(streamed) / 1e6:.1f} MB, median {statistics.median(streamed) / 1e6:.2f} MB\n")
    out(f"web process: RSS {rss_before:.0f} MB idle, {rss_peak:.0f} MB under attack; "
        f"CPU {cpu_used:.1f} s during the attack phase\n")


if __name__ == "__main__":
    main()
