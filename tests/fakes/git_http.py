"""A smart-HTTP git server for tests: real `git http-backend` behind a Starlette route.

It demands one `Authorization` header value, as a forge demands a token, and records the
headers it saw so a test can check what git sent.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def _cgi(root: Path, request: Request, body: bytes) -> subprocess.CompletedProcess[bytes]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_PROJECT_ROOT": str(root),
        "GIT_HTTP_EXPORT_ALL": "1",
        "PATH_INFO": "/" + request.path_params["path"],
        "REQUEST_METHOD": request.method,
        "QUERY_STRING": request.url.query,
        "CONTENT_TYPE": request.headers.get("content-type", ""),
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_CONTENT_ENCODING": request.headers.get("content-encoding", ""),
        "REMOTE_USER": "bot",  # enables receive-pack (push)
        "REMOTE_ADDR": "127.0.0.1",
    }
    return subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, check=False)


def create_git_server(root: Path, authorization: str | None) -> Starlette:
    """Serve the bare repositories under `root`; `authorization` is the header value required."""
    seen: list[dict[str, str]] = []

    async def backend(request: Request) -> Response:
        seen.append(dict(request.headers))
        if authorization is not None and request.headers.get("authorization") != authorization:
            return Response("token required", status_code=401, headers={"WWW-Authenticate": 'Basic realm="git"'})
        body = await request.body()
        result = await asyncio.to_thread(_cgi, root, request, body)
        head, _, payload = result.stdout.partition(b"\r\n\r\n")
        status, headers = 200, {}
        for line in head.decode().split("\r\n"):
            name, _, value = line.partition(": ")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers[name] = value
        return Response(payload, status_code=status, headers=headers)

    app = Starlette(routes=[Route("/{path:path}", backend, methods=["GET", "POST"])])
    app.state.seen = seen
    return app
