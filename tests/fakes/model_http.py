"""A scripted OpenAI-compatible chat endpoint over HTTP, for tests that run the product's real
model client (`langchain-openai`) in another process.

Structured calls (`response_format: json_schema`) are answered with the JSON scripted for the
schema's name. The endpoint can hold every answer until the test opens its gate (so a task is
known to be inside a model call), and it can refuse every call with a status, echoing the
request's `Authorization` header in the error the way some gateways do.
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


@dataclass
class ModelScript:
    answers: dict[str, Any] = field(default_factory=dict)  # schema name -> JSON answer
    refuse_with: int | None = None  # answer every call with this status instead
    gate: threading.Event = field(default_factory=threading.Event)  # answers wait until it is set
    calls: list[str] = field(default_factory=list)  # schema names asked, in order

    def __post_init__(self) -> None:
        self.gate.set()

    def hold(self) -> None:
        self.gate.clear()

    def release(self) -> None:
        self.gate.set()


def create_model_server(script: ModelScript) -> Starlette:
    async def completions(request: Request) -> JSONResponse:
        body = await request.json()
        name = str(body.get("response_format", {}).get("json_schema", {}).get("name", ""))
        script.calls.append(name)
        if script.refuse_with is not None:
            echoed = f"invalid credentials: authorization: {request.headers.get('authorization', '')}"
            return JSONResponse({"error": {"message": echoed, "type": "invalid_request_error"}}, script.refuse_with)
        while not script.gate.is_set():
            await asyncio.sleep(0.02)
        message = {"role": "assistant", "content": json.dumps(script.answers[name])}
        return JSONResponse({
            "id": f"chatcmpl-{len(script.calls)}", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
        })

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
