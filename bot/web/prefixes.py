"""The service's paths also under the path of its public addresses, for a proxy that does not strip it.

Why: an operator who shares a host gives the service an address with a path
(`FORGEBOT_INTAKE__PUBLIC_URL=https://tools.example.com/forgebot`), and `forgebot hooks` registers
`https://tools.example.com/forgebot/webhooks/gitlab/42`. A proxy that strips `/forgebot` passes
`/webhooks/gitlab/42`, which was served; one that forwards the path as it came (an Ingress without a
rewrite, the chart's `ingress.paths: [/forgebot/webhooks]`) passed `/forgebot/webhooks/gitlab/42`, which
answered 404: every delivery was refused, and GitLab disabled the hook after four. The same for the
console's address (`FORGEBOT_CONSOLE__PUBLIC_URL`). Both forms are served now: a request under one of the
configured paths is routed as the path after it. Nothing else is mapped: a path the settings do not name
reaches the routes as it came.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send


def public_paths(*addresses: str | None) -> tuple[str, ...]:
    """The paths the addresses put before the service's own (`/forgebot`), longest first; none for `/`."""
    found = {urlsplit(address).path.rstrip("/") for address in addresses if address}
    return tuple(sorted((path for path in found if path), key=len, reverse=True))


class PublicPaths:
    """ASGI middleware: `<prefix>/rest` is served as `/rest` for each configured prefix."""

    def __init__(self, app: ASGIApp, prefixes: tuple[str, ...]) -> None:
        self.app, self.prefixes = app, prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            path: str = scope["path"]
            for prefix in self.prefixes:
                if path.startswith(prefix + "/"):
                    raw = scope.get("raw_path")
                    scope = {**scope, "path": path[len(prefix):]}
                    if isinstance(raw, bytes) and raw.startswith(prefix.encode() + b"/"):
                        scope["raw_path"] = raw[len(prefix.encode()):]
                    break
        await self.app(scope, receive, send)
