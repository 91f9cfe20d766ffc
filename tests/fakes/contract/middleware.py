"""The contract check around the fake forge: each request and each answer against the forge's contract.

A pure ASGI middleware, outermost, so that injected faults and refused tokens are checked too. It
reads the whole request, matches it to one documented operation, checks its path and query
parameters and its JSON body, lets the fake answer, checks that answer against the operation's
schema for the status, and only then sends it on. A mismatch does not change the answer: it is
recorded in the ledger, and the pytest plugin fails the test during which it happened.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

from tests.fakes.contract import documents, github_graphql, github_rest, gitlab_rest, surface
from tests.fakes.contract.ledger import LEDGER
from tests.fakes.contract.operations import NO_BODY, Matcher, Operation, coerce, decode, value_errors

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
PREFIXES = (("gitlab", gitlab_rest.PREFIX), ("github", "/github"))


def _route(raw_path: str) -> tuple[str, Matcher, str] | None:
    for forge, prefix in PREFIXES:
        if raw_path.startswith(prefix + "/"):
            matcher = gitlab_rest.matcher() if forge == "gitlab" else github_rest.matcher()
            return forge, matcher, raw_path[len(prefix):]
    return None


def check_request(forge: str, op: Operation, bound: dict[str, str], query: str, body: bytes) -> list[str]:
    """The ways a matched request breaks its operation's documented parameters and body."""
    where = f"{forge} {op.method} {op.template} ({op.id})"
    problems = []
    for name, value in bound.items():
        param = op.params.get(name)
        if param is not None and _bad_value(coerce(value, param.schema), param.schema):
            problems.append(f"{where}: path parameter {name}={value!r} does not fit {dict(param.schema)}")
    seen = set()
    for name, value in parse_qsl(query, keep_blank_values=True):
        seen.add(name)
        param = op.params.get(name) or op.params.get(name.removesuffix("[]"))
        if param is None or param.where != "query":
            problems.append(f"{where}: undocumented query parameter {name!r}")
        elif _bad_value(coerce(value, param.schema), param.schema):
            problems.append(f"{where}: query parameter {name}={value!r} does not fit {dict(param.schema)}")
    problems += [f"{where}: required query parameter {p.name!r} missing" for p in op.params.values()
                 if p.where == "query" and p.required and p.name not in seen]
    check = op.body_check()
    if body.strip():
        if check is None:
            problems.append(f"{where}: a body was sent to an operation that takes none")
        else:
            value, error = decode(body)
            problems += [f"{where}: request body {error}"] if error else [
                f"{where}: request body {p}" for p in check(value)]
    elif check is not None and op.body_required and op.method != "GET":
        problems.append(f"{where}: request body required, none sent")
    return problems


def _bad_value(value: Any, schema: Any) -> bool:
    return bool(value_errors(value, schema))


RAW_MEDIA = (".raw", ".diff", ".patch", ".sha")  # GitHub media types that answer bytes, not JSON


def check_response(forge: str, op: Operation, status: int, content_type: str, body: bytes,
                   accept: str = "") -> tuple[list[str], str]:
    """The ways an answer breaks the operation's response contract; or why it has none (unchecked)."""
    where = f"{forge} {op.method} {op.template} ({op.id}) answered {status}"
    if status < 300 and any(m in accept for m in RAW_MEDIA) and "json" not in content_type:
        return [], f"{forge} {op.id} {status} (raw media type)"  # asked for bytes: no schema describes them
    check = op.response_check(status)
    if check is None:
        if status < 400 and op.responses.get(str(status)) is None:
            return [f"{where}: status not documented for this operation"], ""
        return [], f"{forge} {op.id} {status}"
    if check == NO_BODY:
        return ([f"{where}: documented without a body, answered {len(body)} bytes"] if body.strip() else []), ""
    assert not isinstance(check, str)
    if forge == "gitlab" and status == 429 and content_type.startswith("text/plain"):
        return [], ""  # GitLab's rate limiter answers "Retry later" as plain text
    value, error = decode(body)
    if error:
        return [f"{where}: body {error}"], ""
    return [f"{where}: {p}" for p in check(value)], ""


class ContractMiddleware:
    """Checks the fake forge's traffic against the forges' contracts; off when they are absent."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.enabled = documents.available()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.enabled:
            await self.app(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        raw_path = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1").split("?")[0]
        method, query = scope["method"], scope.get("query_string", b"").decode("latin-1")
        matched = self._match(method, raw_path, query, bytes(body))
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        start: Message = {}
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, replay, capture)
        answer = b"".join(chunks)
        if matched is not None and matched[1] is github_graphql.OPERATION:
            LEDGER.response(github_graphql.check_response(bytes(body), int(start["status"]), answer))
        elif matched is not None:
            forge, op = matched
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in start.get("headers", [])}
            accept = dict(scope.get("headers") or []).get(b"accept", b"").decode("latin-1")
            problems, unchecked = check_response(forge, op, int(start["status"]), headers.get("content-type", ""),
                                                 answer, accept)
            LEDGER.response(problems, unchecked=unchecked)
        await send(start)
        await send({"type": "http.response.body", "body": answer, "more_body": False})

    def _match(self, method: str, raw_path: str, query: str, body: bytes) -> tuple[str, Operation] | None:
        if raw_path == "/github/graphql":
            name = "graphql " + github_graphql.operation_name(body)
            LEDGER.used(f"github POST /graphql {name}")
            LEDGER.request(github_graphql.check_request(body) + _unrecorded("github", name))
            return "github", github_graphql.OPERATION
        routed = _route(raw_path)
        if routed is None:
            LEDGER.request([f"{method} {raw_path}: not under a forge's API root"])
            return None
        forge, matcher, tail = routed
        found = matcher.match(method, tail)
        if found is None:
            LEDGER.request([f"{forge} {method} {tail}: no documented operation has this method and path"])
            return None
        op, bound = found
        LEDGER.used(f"{forge} {op.method} {op.template} {op.id}")
        LEDGER.request(check_request(forge, op, bound, query, body) + _unrecorded(forge, op.id))
        return forge, op


def _unrecorded(forge: str, operation: str) -> list[str]:
    if surface.known(forge, operation):
        return []
    return [f"{forge} {operation}: not in the product's forge surface (tests/fakes/contract/surface.py); "
            "add it with the token permission it needs, then run scripts/gen-forge-docs"]
