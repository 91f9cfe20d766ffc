"""An OpenAI-compatible embeddings endpoint over real HTTP, answering with the test hasher.

`POST /v1/embeddings` answers vectors; `POST /elsewhere/v1/embeddings` redirects (307) to `redirect_to`,
so a test can show that a client never follows the key to another host. Every request is recorded
with its headers.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from tests.fakes.embedder import HashingEmbedder


@dataclass
class EmbeddingsState:
    dimension: int = 16
    redirect_to: str = ""
    delay: float = 0.0  # seconds each answer takes: a slow endpoint keeps a build running
    # from this request on (1 is the first; 0 never) answers wait until `released`: a build stopped midway
    hold_from: int = 0
    released: bool = False
    down_from: int = 0  # from this request on (0: never) the endpoint answers 503: it went down midway
    received: int = 0  # requests that arrived (`requests` lists those answered)
    requests: list[tuple[str, dict[str, str], Any]] = field(default_factory=list)


def create_embeddings_app(state: EmbeddingsState) -> Starlette:
    hasher = HashingEmbedder(dimension=state.dimension)

    async def embeddings(request: Request) -> Response:
        body = await request.json()
        state.received += 1
        if state.down_from and state.received >= state.down_from:
            return JSONResponse({"error": {"message": "upstream unavailable"}}, status_code=503)
        if state.hold_from and state.received >= state.hold_from:
            while not state.released:
                await asyncio.sleep(0.02)
        await asyncio.sleep(state.delay)
        state.requests.append((request.url.path, dict(request.headers), body))
        rows = hasher.embed(list(body["input"]))
        return JSONResponse({"data": [{"index": i, "embedding": row.tolist()} for i, row in enumerate(rows)]})

    async def elsewhere(request: Request) -> Response:
        state.requests.append((request.url.path, dict(request.headers), None))
        return RedirectResponse(f"{state.redirect_to}/v1/embeddings", status_code=307)

    return Starlette(routes=[
        Route("/v1/embeddings", embeddings, methods=["POST"]),
        Route("/elsewhere/v1/embeddings", elsewhere, methods=["POST"]),
    ])
