"""ModelServer: a real HTTP model server for tests, scripted per test, speaking three wire protocols.

The real LangChain clients (langchain-openai, langchain-anthropic, langchain-ollama and the SDKs
under them) talk to it over a socket, so what a test exercises is what those clients send and parse:
OpenAI chat completions (`POST /v1/chat/completions`, plain JSON and SSE streaming), Anthropic
Messages (`POST /v1/messages`) and Ollama's native chat (`POST /api/chat`, NDJSON stream or one
object). Each request takes the next scripted `Reply` (or asks `responder` when the queue is empty)
and every request is recorded, so tests assert on what went over the wire as well as on the result.

A `Reply` is protocol-neutral: text, tool calls (several = parallel; `raw` arguments that are not
JSON reproduce a weak model's malformed call), a finish reason (`length` = truncated), or an HTTP
error with the body shape each provider really sends (llama.cpp's "response_format not supported",
429 with Retry-After, 5xx, context length exceeded), or a refusal.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# What real servers answer, verbatim in shape (the texts come from their sources and issue trackers).
LLAMA_CPP_NO_JSON_SCHEMA = "response_format type json_schema is not supported"
CONTEXT_LENGTH = ("This model's maximum context length is 4096 tokens. However, your messages resulted in "
                  "5210 tokens. Please reduce the length of the messages.")


@dataclass(frozen=True)
class Call:
    """One tool call; `raw` (a string that need not be JSON) replaces `args` on the wire."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    raw: str | None = None
    id: str = ""

    def arguments(self) -> str:
        return self.raw if self.raw is not None else json.dumps(self.args)


@dataclass(frozen=True)
class Reply:
    text: str = ""
    calls: tuple[Call, ...] = ()
    finish: str = ""  # "" = natural (stop / tool_calls); "length" = cut at the token limit
    refusal: str = ""
    status: int = 200
    error: str = ""
    error_type: str = "invalid_request_error"
    error_code: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    usage: tuple[int, int] = (20, 10)
    delay: float = 0.0  # seconds before answering: longer than the client's timeout = a timeout


def text(content: str, **kw: Any) -> Reply:
    return Reply(text=content, **kw)


def tools(*calls: Call, text: str = "") -> Reply:
    return Reply(text=text, calls=tuple(calls))


def call(name: str, raw: str | None = None, **args: Any) -> Call:
    return Call(name=name, args=args, raw=raw)


def structured(schema_name: str, payload: dict[str, Any]) -> Reply:
    """An answer that satisfies any structured-output method: JSON text plus the schema's tool call.

    Which one the client reads depends on the method it asked for (json_schema/json_mode read the
    text, function_calling the tool call), so a test can script one answer and vary the method.
    """
    return Reply(text=json.dumps(payload), calls=(Call(name=schema_name, args=payload),))


def length(content: str = "partial answer that was cut") -> Reply:
    return Reply(text=content, finish="length")


def refusal(content: str = "I can't help with that.") -> Reply:
    return Reply(refusal=content)


def error(status: int, message: str, *, retry_after: float | None = None, error_type: str = "server_error",
          code: str | None = None) -> Reply:
    headers = (("Retry-After", f"{retry_after:g}"),) if retry_after is not None else ()
    return Reply(status=status, error=message, error_type=error_type, error_code=code, headers=headers)


def unsupported_json_schema() -> Reply:
    """llama.cpp (and forks, older vLLM) rejecting `response_format: json_schema`."""
    return error(400, LLAMA_CPP_NO_JSON_SCHEMA, error_type="invalid_request_error")


def llama_cpp_python_rejects_json_schema() -> Reply:
    """llama-cpp-python's server: its request model allows only text/json_object, and it answers 500."""
    return error(500, "1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                 "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}")


def context_exceeded() -> Reply:
    return error(400, CONTEXT_LENGTH, error_type="invalid_request_error", code="context_length_exceeded")


def rate_limited(retry_after: float = 0.05) -> Reply:
    return error(429, "Rate limit reached for requests", retry_after=retry_after, error_type="rate_limit_error")


@dataclass
class Request:
    """One recorded request: which protocol, the path and the decoded JSON body."""

    protocol: str  # "openai" | "anthropic" | "ollama"
    path: str
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def tool_names(self) -> list[str]:
        names = []
        for tool in self.body.get("tools", []) or []:
            fn = tool.get("function", tool)
            names.append(str(fn.get("name")))
        return names


Responder = Callable[[Request], Reply]


class ModelServer:
    """A threaded HTTP server on a free loopback port; `script()` queues replies, `requests` records."""

    def __init__(self, model: str = "scripted-model") -> None:
        self.model = model
        self.requests: list[Request] = []
        self.responder: Responder | None = None
        self.unanswered = 0  # requests that found neither a scripted reply nor a responder
        self._queue: list[Reply] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd = _HTTPServer(self)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Anthropic's and Ollama's base URL (their clients add `/v1/messages` and `/api/chat`)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        return f"{self.url}/v1"

    def start(self) -> ModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def script(self, *replies: Reply) -> ModelServer:
        with self._lock:
            self._queue.extend(replies)
        return self

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def next_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids)}"

    def take(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            if self._queue:
                return self._queue.pop(0)
            responder = self.responder
        if responder is not None:
            return responder(request)
        with self._lock:
            self.unanswered += 1
        return error(500, "the test's model script is exhausted", error_type="script_exhausted")


# ---- wire encodings --------------------------------------------------------------------------------------------


def _openai_error(reply: Reply) -> dict[str, Any]:
    return {"error": {"message": reply.error, "type": reply.error_type, "param": None, "code": reply.error_code}}


def _openai_calls(server: ModelServer, reply: Reply) -> list[dict[str, Any]]:
    return [{"id": c.id or server.next_id("call_"), "type": "function",
             "function": {"name": c.name, "arguments": c.arguments()}} for c in reply.calls]


def _openai_finish(reply: Reply) -> str:
    return reply.finish or ("tool_calls" if reply.calls else "stop")


def _openai_usage(reply: Reply) -> dict[str, int]:
    return {"prompt_tokens": reply.usage[0], "completion_tokens": reply.usage[1],
            "total_tokens": sum(reply.usage)}


def openai_completion(server: ModelServer, reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None,
                               "refusal": reply.refusal or None}
    if reply.calls:
        message["tool_calls"] = _openai_calls(server, reply)
    return {"id": server.next_id("chatcmpl-"), "object": "chat.completion", "created": 0, "model": server.model,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": _openai_finish(reply)}],
            "usage": _openai_usage(reply)}


def openai_chunks(server: ModelServer, reply: Reply, include_usage: bool) -> Iterator[dict[str, Any]]:
    """The SSE chunks of one reply: role, text in pieces, each tool call's name then its arguments in pieces."""
    base = {"id": server.next_id("chatcmpl-"), "object": "chat.completion.chunk", "created": 0,
            "model": server.model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    for i in range(0, len(reply.text), 7):
        yield chunk({"content": reply.text[i:i + 7]})
    if reply.refusal:
        yield chunk({"refusal": reply.refusal})
    for index, wire in enumerate(_openai_calls(server, reply)):
        args = wire["function"]["arguments"]
        yield chunk({"tool_calls": [{"index": index, "id": wire["id"], "type": "function",
                                     "function": {"name": wire["function"]["name"], "arguments": ""}}]})
        for i in range(0, len(args), 5):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": args[i:i + 5]}}]})
    yield chunk({}, _openai_finish(reply))
    if include_usage:
        yield {**base, "choices": [], "usage": _openai_usage(reply)}


def anthropic_message(server: ModelServer, reply: Reply) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.text or reply.refusal:
        content.append({"type": "text", "text": reply.text or reply.refusal})
    for c in reply.calls:
        # the Messages API always sends `input` as an object; malformed JSON exists only mid-stream
        content.append({"type": "tool_use", "id": c.id or server.next_id("toolu_"), "name": c.name,
                        "input": c.args if c.raw is None else {"_raw": c.raw}})
    stop = {"length": "max_tokens"}.get(reply.finish) or (
        "refusal" if reply.refusal else "tool_use" if reply.calls else "end_turn")
    return {"id": server.next_id("msg_"), "type": "message", "role": "assistant", "model": server.model,
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": reply.usage[0], "output_tokens": reply.usage[1]}}


def anthropic_error(reply: Reply) -> dict[str, Any]:
    kind = {429: "rate_limit_error", 529: "overloaded_error", 500: "api_error", 400: "invalid_request_error",
            401: "authentication_error"}.get(reply.status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": reply.error}}


def ollama_lines(server: ModelServer, reply: Reply) -> list[dict[str, Any]]:
    """Ollama's chat stream: content pieces, then a final `done` line with the counts."""
    head = {"model": server.model, "created_at": "2026-01-01T00:00:00Z"}
    lines = [{**head, "message": {"role": "assistant", "content": reply.text[i:i + 7]}, "done": False}
             for i in range(0, len(reply.text), 7)]
    if reply.calls:
        # Ollama parses the model's calls itself: arguments are always objects on this wire
        calls = [{"function": {"name": c.name, "arguments": c.args}} for c in reply.calls]
        lines.append({**head, "message": {"role": "assistant", "content": "", "tool_calls": calls}, "done": False})
    lines.append({**head, "message": {"role": "assistant", "content": ""}, "done": True,
                  "done_reason": reply.finish or "stop", "total_duration": 1, "prompt_eval_count": reply.usage[0],
                  "eval_count": reply.usage[1]})
    return lines


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: ModelServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body are two writes: with Nagle on, the body waited for the client's delayed ACK
    # of the headers (40 ms a request, measured)
    disable_nagle_algorithm = True

    @property
    def owner(self) -> ModelServer:
        assert isinstance(self.server, _HTTPServer)
        return self.server.owner

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._json(200, {"object": "list", "data": [{"id": self.owner.model, "object": "model"}]})
        elif self.path == "/api/tags":
            self._json(200, {"models": [{"name": self.owner.model, "model": self.owner.model}]})
        else:
            self._json(404, {"error": f"no route {self.path}"})

    def do_POST(self) -> None:
        size = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(size) or b"{}")
        path = self.path.split("?")[0]
        protocol = {"/v1/chat/completions": "openai", "/chat/completions": "openai",
                    "/v1/messages": "anthropic", "/api/chat": "ollama"}.get(path)
        if protocol is None:
            self._json(404, {"error": f"no route {path}"})
            return
        reply = self.owner.take(Request(protocol, path, body, {k.lower(): v for k, v in self.headers.items()}))
        if reply.delay:
            time.sleep(reply.delay)
        getattr(self, f"_{protocol}")(reply, body)

    def _openai(self, reply: Reply, body: dict[str, Any]) -> None:
        if reply.status != 200:
            self._json(reply.status, _openai_error(reply), reply.headers)
        elif body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            events = [f"data: {json.dumps(c)}\n\n" for c in openai_chunks(self.owner, reply, include_usage)]
            self._send(200, "text/event-stream", "".join([*events, "data: [DONE]\n\n"]).encode())
        else:
            self._json(200, openai_completion(self.owner, reply))

    def _anthropic(self, reply: Reply, body: dict[str, Any]) -> None:
        if reply.status != 200:
            self._json(reply.status, anthropic_error(reply), reply.headers)
        else:
            self._json(200, anthropic_message(self.owner, reply))

    def _ollama(self, reply: Reply, body: dict[str, Any]) -> None:
        if reply.status != 200:
            self._json(reply.status, {"error": reply.error}, reply.headers)
            return
        lines = ollama_lines(self.owner, reply)
        if body.get("stream", True):
            data = "".join(json.dumps(line) + "\n" for line in lines).encode()
            self._send(200, "application/x-ndjson", data)
        else:
            merged = dict(lines[-1])
            merged["message"] = {"role": "assistant", "content": reply.text}
            calls = [m["message"]["tool_calls"] for m in lines if m["message"].get("tool_calls")]
            if calls:
                merged["message"]["tool_calls"] = calls[0]
            self._json(200, merged)

    def _json(self, status: int, payload: Any, headers: tuple[tuple[str, str], ...] = ()) -> None:
        self._send(status, "application/json", json.dumps(payload).encode(), headers)

    def _send(self, status: int, kind: str, data: bytes, headers: tuple[tuple[str, str], ...] = ()) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
