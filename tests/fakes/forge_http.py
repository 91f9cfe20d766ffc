"""A local fake forge: a Starlette app answering the REST calls the adapters make.

The real python-gitlab and PyGithub clients talk to it over HTTP (GitLab under `/gitlab/api/v4`,
GitHub under `/github`). Response bodies start from the recorded shapes in `shared/forge-samples/`
and carry the fake's state. Tests read and seed `FakeForgeState` directly; `state.faults` makes the
next matching requests fail (5xx, 429 with `Retry-After`, a write that lands but loses its answer),
each with the forge's documented error body (`forge_errors`), and `state.tokens` makes it check
credentials like a forge would.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import Response

from tests.fakes import forge_errors, forge_http_github, forge_http_gitlab
from tests.fakes.contract.middleware import ContractMiddleware
from tests.fakes.forge_state import (
    FakeChange,
    FakeComment,
    FakeFile,
    FakeForgeState,
    FakeHook,
    FakeIssue,
    FakeProject,
    Fault,
)

__all__ = [
    "FakeChange", "FakeComment", "FakeFile", "FakeForgeState", "FakeHook", "FakeIssue", "FakeProject", "Fault",
    "create_fake_forge",
]


def _token(request: Request) -> str:
    if request.url.path.startswith("/gitlab"):
        return request.headers.get("private-token", "")
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value if scheme.lower() in ("token", "bearer") else ""


def _authorized(state: FakeForgeState, request: Request) -> bool:
    path = request.url.path
    if not state.tokens or path.endswith(("/access_tokens", "/github/app")) or path.startswith("/github/app/hook/"):
        return True  # the App's JWT: checked by the route
    return _token(request) in state.tokens


class ForgeMiddleware(BaseHTTPMiddleware):
    """Logs each request, checks its token and plays injected faults."""

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        state: FakeForgeState = request.app.state.forge
        with state.lock:
            state.log.append((request.method, request.url.path, dict(request.headers)))
        forge = "gitlab" if request.url.path.startswith("/gitlab") else "github"
        if not _authorized(state, request):
            return forge_errors.answer(forge, 401, {})
        fault = state.take_fault(request.method, request.url.path)
        if fault is not None and not fault.after:
            return forge_errors.answer(forge, fault.status, fault.headers, fault.message)
        response = await call_next(request)
        if fault is not None:  # processed, then the answer is lost
            return forge_errors.answer(forge, fault.status, fault.headers, fault.message)
        return response


def create_fake_forge(state: FakeForgeState | None = None) -> Starlette:
    """Build the fake forge app; `app.state.forge` is the shared `FakeForgeState`."""
    app = Starlette(
        routes=[*forge_http_gitlab.routes(), *forge_http_github.routes()],
        middleware=[Middleware(ContractMiddleware), Middleware(ForgeMiddleware)],
    )
    app.state.forge = state or FakeForgeState()
    return app
