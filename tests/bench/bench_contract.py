"""What the forge contract layer costs: the fake forge's CPU per request with the layer on and off.

Two fake forges serve the same routes in this process, one behind `ContractMiddleware`, one
without; the same GitHub and GitLab calls (real PyGithub and python-gitlab clients, as the adapters
make them) run against both, and the process CPU per request is compared. The one-time costs
(reading GitHub's description, the first check of each operation, which compiles its validators)
are printed apart. Ratios from one run on the same machine; no assertion on time.

    .venv/bin/python tests/bench/bench_contract.py [--rounds 40]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from starlette.applications import Starlette
from starlette.middleware import Middleware

from foundation.forge import IssueRef
from tests.bot.forge.conftest import github_backend, gitlab_backend
from tests.fakes import forge_http_github, forge_http_gitlab
from tests.fakes.contract import documents, github_rest
from tests.fakes.contract.ledger import LEDGER
from tests.fakes.contract.middleware import ContractMiddleware
from tests.fakes.forge_http import FakeForgeState, ForgeMiddleware
from tests.fakes.server import ServerThread


def say(line: str) -> None:
    sys.stdout.write(line + "\n")


def _app(contract: bool) -> Starlette:
    layers = [Middleware(ContractMiddleware)] if contract else []
    app = Starlette(routes=[*forge_http_gitlab.routes(), *forge_http_github.routes()],
                    middleware=[*layers, Middleware(ForgeMiddleware)])
    app.state.forge = FakeForgeState()
    return app


async def _round(server: ServerThread, state: FakeForgeState) -> int:
    """One issue read with its comments, a comment posted and edited, on each forge: the requests made."""
    before = len(state.log)
    for make in (gitlab_backend, github_backend):
        backend = make(server, state)
        ref: IssueRef = backend.seed_issue(3)
        for index in range(3):
            backend.seed_comment(ref, f"comment {index}")
        await backend.forge.get_issue(ref)
        comment = await backend.forge.post_comment(ref, "hello")
        await backend.forge.edit_comment(comment, "hello again")
    return len(state.log) - before


def _measure(server: ServerThread, state: FakeForgeState, rounds: int) -> tuple[float, int]:
    start, requests = time.process_time(), 0
    for _ in range(rounds):
        requests += asyncio.run(_round(server, state))
    return time.process_time() - start, requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    if not documents.available():
        raise SystemExit("shared/forge-contract not found beside this checkout")
    start = time.process_time()
    github_rest.matcher()
    say(f"one-time: GitHub's description read and indexed in {time.process_time() - start:.2f} CPU-s")
    servers = {}
    for contract in (False, True):
        app = _app(contract)
        server = ServerThread(app)
        server.start()
        servers[contract] = (server, app.state.forge)
    try:
        for contract in (False, True):  # a first round compiles every operation's validators
            start = time.process_time()
            _measure(*servers[contract], 1)
            if contract:
                say(f"one-time: first round with the layer (validators compiled) "
                      f"{time.process_time() - start:.2f} CPU-s")
        off, requests = _measure(*servers[False], args.rounds)
        on, _ = _measure(*servers[True], args.rounds)
    finally:
        for server, _ in servers.values():
            server.stop()
    say(f"{requests} requests a side (client and server in this process)")
    say(f"layer off: {off / requests * 1000:.2f} CPU-ms per request")
    say(f"layer on:  {on / requests * 1000:.2f} CPU-ms per request  (ratio {on / off:.2f}, "
          f"+{(on - off) / requests * 1000:.2f} ms)")
    say(f"checked: {LEDGER.requests_checked} requests ({LEDGER.requests_failed} failed), "
          f"{LEDGER.responses_checked} answers ({LEDGER.responses_failed} failed)")


if __name__ == "__main__":
    main()
