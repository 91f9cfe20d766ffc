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

It behaves like the provider at the wire in two more ways. A request whose tool or output schemas
the provider would refuse (`tests/fakes/provider_rules.py`: OpenAI's names and strict mode,
Anthropic's `input_schema`) is answered with that provider's HTTP 400 and its error body, and takes
no scripted reply. A scripted reply is checked against what the request sent: its tool calls must
name a tool the request offered, with arguments valid against that tool's schema, and a structured
answer must validate against the response format the request asked for; a reply that does not is a
mistake in the test's script (a real provider could not have produced it under that schema), so it is
recorded in `SCRIPT_ERRORS` (the suite fails the test) and answered with a 500. A reply marked
`off_schema=True` is exempt: a weak model's off-schema answer, on purpose.

`scripted([...])` gives a test the product's own OpenAI client (`foundation.llm.chat_model`) bound to
a process-wide server with its own queue, so route and graph tests script a role's answers as a list
of `AIMessage`s or `Reply`s, and `model.received` holds the prompts it was sent, read back from the
wire.
"""

from __future__ import annotations

import itertools
import json
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar, get_args, get_origin, overload

import httpx
from jsonschema import Draft202012Validator
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from tests.fakes.provider_rules import (
    LLAMA_CPP_NO_JINJA,
    anthropic_problem,
    openai_problem,
    openai_reasoning_problem,
    vllm_tools_problem,
)

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
    page: str = ""  # a web page (200, text/html) where the API's JSON belongs: a proxy's login page
    structured: bool = False  # an answer to a structured-output call: text and calls are its two encodings
    off_schema: bool = False  # breaks the request's schemas on purpose (a weak model), not checked


def text(content: str, **kw: Any) -> Reply:
    return Reply(text=content, **kw)


def tools(*calls: Call, text: str = "") -> Reply:
    return Reply(text=text, calls=tuple(calls))


def call(name: str, raw: str | None = None, **args: Any) -> Call:
    return Call(name=name, args=args, raw=raw)


def structured(schema_name: str, payload: dict[str, Any]) -> Reply:
    """An answer that satisfies any structured-output method: JSON text plus the schema's tool call.

    Which one the client reads depends on the method it asked for (json_schema/json_mode read the
    text, function_calling the tool call), so a test can script one answer and vary the method. For
    one of the product's answer schemas, the fields `payload` leaves out are added at their defaults
    (a strict provider's answer has every field).
    """
    known = _answer_schemas().get(schema_name)
    payload = _complete(known, payload) if known is not None else payload
    return Reply(text=json.dumps(payload), calls=(Call(name=schema_name, args=payload),), structured=True)


def off_schema(reply: Reply) -> Reply:
    """`reply` as a weak model's answer that breaks the request's schema on purpose (not a script error)."""
    return replace(reply, off_schema=True)


def page(html: str) -> Reply:
    """A web page answered where the API belongs (a proxy's login page, a server's UI at the wrong path)."""
    return Reply(page=html)


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
    rejected: dict[str, Any] | None = None  # the provider's 400 body when the schemas broke its rules

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def tool_names(self) -> list[str]:
        return list(self.tool_schemas)

    @property
    def tool_schemas(self) -> dict[str, Any]:
        """Each offered tool's argument schema by name (OpenAI/Ollama `parameters`, Anthropic `input_schema`)."""
        schemas = {}
        for tool in self.body.get("tools", []) or []:
            fn = tool.get("function", tool)
            schemas[str(fn.get("name"))] = fn.get("parameters", fn.get("input_schema", {}))
        return schemas

    @property
    def _output_format(self) -> dict[str, Any]:
        """The answer format asked for: OpenAI's `response_format`, Anthropic's `output_config.format`
        (or the older `output_format`); Ollama's `format` is read apart (it is the schema itself)."""
        anthropic = (self.body.get("output_config") or {}).get("format") or self.body.get("output_format")
        return dict(self.body.get("response_format") or anthropic or {})

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """The JSON schema the answer's text must follow."""
        fmt = self._output_format
        if fmt.get("type") == "json_schema":
            return dict(fmt.get("schema") or (fmt.get("json_schema") or {}).get("schema") or {})
        ollama = self.body.get("format")
        return ollama if isinstance(ollama, dict) else None

    @property
    def asks_text_answer(self) -> bool:
        """A structured call answered in the text (json_schema / JSON mode), not by a tool call."""
        return self._output_format.get("type") in ("json_schema", "json_object") or "format" in self.body


SCRIPT_ERRORS: list[str] = []  # scripted replies that broke the schema their request sent (tests/conftest.py)


def script_problems(request: Request, reply: Reply) -> list[str]:
    """How a scripted reply breaks what its request sent: calls to tools not offered, arguments or a
    structured answer invalid against the schema the product sent."""
    if reply.status != 200 or reply.off_schema:
        return []
    problems: list[str] = []
    if reply.structured and request.asks_text_answer:
        schema = request.output_schema
        if schema is not None:
            try:
                problems += _invalid(json.loads(reply.text), schema, "the structured answer")
            except ValueError:
                problems.append("the structured answer is not JSON")
        return problems
    offered = request.tool_schemas
    for c in reply.calls:
        if c.name not in offered:
            problems.append(f"a call to {c.name!r}, which the request did not offer (it offered {sorted(offered)})")
        elif c.raw is None:
            problems += _invalid(c.args, offered[c.name], f"the arguments of {c.name!r}")
    return problems


def _invalid(value: Any, schema: dict[str, Any], what: str) -> list[str]:
    errors = sorted(Draft202012Validator(schema).iter_errors(value), key=lambda e: list(e.absolute_path))
    return [f"{what} break the schema sent at {list(e.absolute_path)}: {e.message}" for e in errors[:3]]


Responder = Callable[[Request], Reply]


class ModelServer:
    """A threaded HTTP server on a free loopback port; `script()` queues replies, `requests` records."""

    def __init__(self, model: str = "scripted-model", tls: tuple[Path, Path] | None = None) -> None:
        """`tls`: (certificate chain, key) files to serve HTTPS with (a model behind a private CA)."""
        self.model = model
        self.requests: list[Request] = []
        self.responder: Responder | None = None
        self.unanswered = 0  # requests that found neither a scripted reply nor a responder
        # an OpenAI reasoning model's rule on `temperature` (`provider_rules.REASONING_RULES`): it refuses
        # that and `max_tokens`; "": a model that takes both
        self.reasoning = ""
        # answer as an Ollama server too (`/api/version`, `/api/ps`, `/api/show`): the window it runs the model
        # with once loaded (`context_length`; None: an older release, which does not list it) and its
        # Modelfile's `num_ctx` (None: none set); `ollama = False` answers those routes 404, as vLLM does
        self.ollama = False
        self.ollama_window: int | None = 4096
        self.ollama_num_ctx: int | None = None
        # False: a vLLM started without tool calling (`provider_rules.vllm_tools_problem`)
        self.auto_tools = True
        # False: a llama.cpp server started without `--jinja` (`provider_rules.LLAMA_CPP_NO_JINJA`)
        self.jinja = True
        self._queue: list[Reply] = []
        self._queues: dict[str, list[Reply]] = {}  # a model name's own queue (`scripted`)
        self._responders: dict[str, Responder] = {}  # and what answers past its end
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd = _HTTPServer(self)
        self.scheme = "https" if tls else "http"
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Anthropic's and Ollama's base URL (their clients add `/v1/messages` and `/api/chat`)."""
        return f"{self.scheme}://127.0.0.1:{self.port}"

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

    def script_model(self, name: str, replies: Sequence[Reply], responder: Responder | None = None) -> None:
        """Replies for requests naming model `name` only (several scripted models share one server);
        `responder` answers what the queue does not."""
        with self._lock:
            self._queues[name] = list(replies)
            if responder is not None:
                self._responders[name] = responder

    def requests_for(self, name: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.body.get("model") == name and r.rejected is None]

    def reject(self, request: Request, body: dict[str, Any]) -> None:
        with self._lock:
            request.rejected = body
            self.requests.append(request)

    def take(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            name = str(request.body.get("model"))
            own, own_responder = self._queues.get(name), self._responders.get(name)
            if own:
                return own.pop(0)
            if own is not None and own_responder is None:
                return error(500, "the test's model script is exhausted", error_type="script_exhausted")
            if own_responder is not None:
                return own_responder(request)
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


def _encoded(request: Request, reply: Reply) -> Reply:
    """A structured answer as the request asked for it: the text for json_schema/JSON mode, else the
    call (a provider never calls a tool it was not offered, nor writes text beside a forced call)."""
    if request.asks_text_answer:
        return replace(reply, calls=())
    return replace(reply, text="", calls=tuple(c for c in reply.calls if c.name in request.tool_schemas))


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
        elif self.path == "/api/version" and self.owner.ollama:
            self._json(200, {"version": "0.12.6"})
        elif self.path == "/api/ps" and self.owner.ollama:
            loaded = {"name": f"{self.owner.model}:latest", "model": f"{self.owner.model}:latest", "size": 5137025024}
            if self.owner.ollama_window is not None:
                loaded["context_length"] = self.owner.ollama_window
            self._json(200, {"models": [loaded]})
        else:
            self._json(404, {"error": f"no route {self.path}"})

    def do_POST(self) -> None:
        size = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(size) or b"{}")
        path = self.path.split("?")[0]
        if path == "/api/show" and self.owner.ollama:
            num_ctx = self.owner.ollama_num_ctx
            parameters = 'stop "<|im_end|>"' + (f"\nnum_ctx                        {num_ctx}" if num_ctx else "")
            self._json(200, {"modelfile": f"FROM {self.owner.model}", "parameters": parameters,
                             "model_info": {"qwen2.context_length": 32768}})
            return
        protocol = {"/v1/chat/completions": "openai", "/chat/completions": "openai",
                    "/v1/messages": "anthropic", "/api/chat": "ollama"}.get(path)
        if protocol is None:
            self._json(404, {"error": f"no route {path}"})
            return
        request = Request(protocol, path, body, {k.lower(): v for k, v in self.headers.items()})
        refused = {"openai": openai_problem, "anthropic": anthropic_problem}.get(protocol, lambda b: None)(body)
        if refused is None and protocol == "openai":
            refused = openai_reasoning_problem(body, self.owner.reasoning) or vllm_tools_problem(
                body, self.owner.auto_tools)
        if refused is not None:
            self.owner.reject(request, refused)
            self._json(400, refused)
            return
        if protocol == "openai" and not self.owner.jinja and body.get("tools"):
            self.owner.reject(request, LLAMA_CPP_NO_JINJA)
            self._json(500, LLAMA_CPP_NO_JINJA)
            return
        reply = self.owner.take(request)
        broken = script_problems(request, reply)
        if broken:
            SCRIPT_ERRORS.extend(broken)
            reply = error(500, "the test's scripted reply breaks the request's schema: " + "; ".join(broken),
                          error_type="script_error")
        elif reply.structured:
            reply = _encoded(request, reply)
        if reply.delay:
            time.sleep(reply.delay)
        getattr(self, f"_{protocol}")(reply, body)

    def _openai(self, reply: Reply, body: dict[str, Any]) -> None:
        if reply.page:
            self._send(200, "text/html", reply.page.encode())
        elif reply.status != 200:
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


class Gate:
    """A responder for a service under test: every call gets `reply`, after the gate opens (a test
    holds it to know a task is inside a model call); `refuse_with` answers that status instead, with
    the request's Authorization header echoed in the message, as some gateways do."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.refuse_with: int | None = None
        self._open = threading.Event()
        self._open.set()

    def hold(self) -> None:
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    def __call__(self, request: Request) -> Reply:
        if self.refuse_with is not None:
            echoed = f"invalid credentials: authorization: {request.headers.get('authorization', '')}"
            return error(self.refuse_with, echoed, error_type="invalid_request_error")
        self._open.wait(timeout=300)
        return self.reply


# ---- the product's client against a shared server, one script per model ---------------------------------------

_shared: ModelServer | None = None
_shared_lock = threading.Lock()
_model_ids = itertools.count(1)


def shared_server() -> ModelServer:
    """This process's server for `scripted` models (started on first use, a daemon thread)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = ModelServer().start()
        return _shared


class ScriptedModel(ChatOpenAI):
    """The product's OpenAI client for one scripted model; `received` is what it sent, from the wire."""

    @property
    def requests(self) -> list[Request]:
        return shared_server().requests_for(self.model_name)

    @property
    def received(self) -> list[list[BaseMessage]]:
        """The messages of every request that reached the script (not ones the provider rules refused)."""
        return [from_wire(r.messages) for r in self.requests]


def as_reply(message: AIMessage | Reply) -> Reply:
    """A scripted `AIMessage` (text, tool calls, usage) as the server's `Reply`."""
    if isinstance(message, Reply):
        return message
    usage = message.usage_metadata
    return Reply(text=str(message.content or ""),
                 calls=tuple(Call(name=c["name"], args=dict(c["args"]), id=c.get("id") or "")
                             for c in message.tool_calls),
                 usage=(usage["input_tokens"], usage["output_tokens"]) if usage else (0, 0))


M = TypeVar("M", bound=ScriptedModel)


@overload
def scripted(messages: Sequence[AIMessage | Reply], *, role: str = ...,
             responder: Callable[[Request], AIMessage | Reply] | None = ...) -> ScriptedModel: ...
@overload
def scripted(messages: Sequence[AIMessage | Reply], *, role: str = ..., cls: type[M],
             responder: Callable[[Request], AIMessage | Reply] | None = ..., **fields: Any) -> M: ...
def scripted(messages: Sequence[AIMessage | Reply], *, role: str = "model", cls: type[Any] = ScriptedModel,
             responder: Callable[[Request], AIMessage | Reply] | None = None, **fields: Any) -> Any:
    """A model answering `messages` in order, built the way the service builds an `openai` role's model
    (`foundation.llm.chat_model`: its request options and its profile), on its own queue of the shared
    server. A call past the end of the script is answered with an HTTP 500 (`script_exhausted`).
    `responder` answers every call past the script; `cls` is a subclass with more behaviour, `fields`
    its own fields."""
    from foundation.llm import chat_model
    from foundation.settings import LLMSettings

    server = shared_server()
    name = f"scripted-{next(_model_ids)}"
    server.script_model(name, [as_reply(m) for m in messages],
                        None if responder is None else (lambda request: as_reply(responder(request))))
    settings = LLMSettings(provider="openai", base_url=server.openai_url, model=name, max_retries=0)
    built = chat_model(settings, role)
    assert isinstance(built, ChatOpenAI)
    # its own HTTP clients: langchain-openai shares one per endpoint in the process, whose pooled
    # connections belong to the event loop that opened them, and each test runs its own loop
    return cls(**fields, model=built.model_name, base_url=built.openai_api_base, api_key=built.openai_api_key,
                         temperature=built.temperature, timeout=built.request_timeout, max_retries=built.max_retries,
                         extra_body=built.extra_body, metadata=built.metadata,
                         http_client=httpx.Client(timeout=30), http_async_client=httpx.AsyncClient(timeout=30))


def answer(schema: type[BaseModel], payload: BaseModel | dict[str, Any], tokens: int = 100) -> Reply:
    """The answer to a structured-output call for `schema` (either encoding; see `structured`). A dict
    payload gets the fields it leaves out at their defaults, as a strict provider's answer has every
    field; it is not validated (a test may script an answer the product must settle or refuse)."""
    args = payload.model_dump(mode="json") if isinstance(payload, BaseModel) else _complete(schema, payload)
    return replace(structured(schema.__name__, args), usage=(tokens // 2, tokens - tokens // 2))


def _answer_schemas() -> dict[str, type[BaseModel]]:
    """The product's answer schemas by name (every subclass of `graph.schemas.Answer`)."""
    from graph.nodes.planner import PlanProposal
    from graph.schemas import Answer

    found: dict[str, type[BaseModel]] = {}
    todo: list[type[BaseModel]] = [Answer]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls is not Answer:
            found.setdefault(cls.__name__, cls)
    assert "PlanProposal" in found and found["PlanProposal"] is PlanProposal
    return found


def _complete(schema: type[BaseModel], data: Any) -> Any:
    if not isinstance(data, dict):
        return data
    out = dict(data)
    for name, info in schema.model_fields.items():
        if name not in out and not info.is_required():
            out[name] = to_jsonable_python(info.get_default(call_default_factory=True))
        if name in out:
            out[name] = _complete_value(info.annotation, out[name])
    return out


def _complete_value(annotation: Any, value: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _complete(annotation, value)
    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) is list and args and isinstance(value, list):
        return [_complete_value(args[0], v) for v in value]
    if len(args) == 1 and get_origin(annotation) is not list and value is not None:
        return _complete_value(args[0], value)  # X | None
    return value


def from_wire(messages: list[dict[str, Any]]) -> list[BaseMessage]:
    """OpenAI chat messages as the LangChain messages they were made from (a tool result gets the
    name of the call it answers)."""
    out: list[BaseMessage] = []
    names: dict[str, str] = {}
    for m in messages:
        role, content = m.get("role"), m.get("content")
        if role in ("system", "developer"):
            out.append(SystemMessage(content=content or ""))
        elif role == "user":
            out.append(HumanMessage(content=content or ""))
        elif role == "assistant":
            calls = [{"name": c["function"]["name"], "args": json.loads(c["function"]["arguments"] or "{}"),
                      "id": c["id"], "type": "tool_call"} for c in m.get("tool_calls") or []]
            names.update({c["id"]: c["name"] for c in calls})
            out.append(AIMessage(content=content or "", tool_calls=calls))
        elif role == "tool":
            call_id = str(m.get("tool_call_id"))
            out.append(ToolMessage(content=content or "", tool_call_id=call_id, name=names.get(call_id)))
        else:
            raise AssertionError(f"unknown role on the wire: {role!r}")
    return out
