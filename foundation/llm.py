"""Chat models per role, built from settings through LangChain, and the one place model calls fail.

Providers: `openai` — any OpenAI-compatible endpoint through `base_url` (OpenAI, vLLM, llama.cpp,
Ollama's /v1, gateways); `anthropic` (langchain-anthropic, the `anthropic` extra); `ollama` — Ollama's
native API (langchain-ollama, the `ollama` extra). A provider whose extra is not installed, or a
hosted provider without a key, is a `ModelConfigError` that says what to do.

Every call goes through `invoke`: the SDKs' own retries are off, so one policy covers all three
providers — a rate limit (429, honouring Retry-After), a 5xx, a timeout or a refused connection is
retried with bounded backoff; anything else, or a transient failure that outlasts the retries,
becomes a `ModelCallError` naming the role, the provider's short reason and the setting to check.
The role, provider, endpoint and structured-output method travel with the model in its LangChain
`metadata` (key `forgebot`), so the tool loop and `ask_structured` need no extra arguments.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable
from pydantic import SecretStr

from foundation import cabundle, modelparams, servedwindow
from foundation.settings import LLMSettings

FailureKind = Literal["transient", "unreachable", "certificate", "context", "window", "format", "auth", "quota",
                      "not_found", "request", "refusal", "length", "invalid"]
log = logging.getLogger(__name__)
MAX_BACKOFF = 30.0  # seconds; a longer Retry-After is a failure to report, not a wait
_REASON_CHARS = 300


class ModelProblem(RuntimeError):
    """A model that cannot be built or called: a configuration or provider problem, reported in one line."""


class ModelConfigError(ModelProblem):
    """The configured provider cannot be built (missing package or key)."""


@dataclass(frozen=True)
class Failure:
    """What went wrong with a model call, in the provider-neutral terms the runtime acts on."""

    kind: FailureKind
    reason: str  # the provider's short message (callers redact before publishing)
    status: int | None = None
    retry_after: float | None = None
    setting: str = ""  # the setting to check when the kind's usual one is not it (a timeout: TIMEOUT)


_SETTING = {"auth": "API_KEY", "unreachable": "BASE_URL", "not_found": "MODEL", "format": "STRUCTURED_OUTPUT",
            "invalid": "STRUCTURED_OUTPUT", "transient": "MAX_RETRIES", "context": "CONTEXT_WINDOW_TOKENS",
            "length": "MAX_OUTPUT_TOKENS", "refusal": "MODEL", "request": "MODEL", "certificate": cabundle.VARIABLE,
            "window": "PROVIDER", "quota": "API_KEY"}
_ROLE_SETTINGS = frozenset({"API_KEY", "BASE_URL", "MODEL", "STRUCTURED_OUTPUT"})


class ModelCallError(ModelProblem):
    """A model call failed for good: which role, the provider's reason, and the setting to check."""

    def __init__(self, role: str, failure: Failure) -> None:
        self.role = role
        self.failure = failure
        whose = "the model call" if role in ("", "model") else f"the {role} model call"
        super().__init__(f"{whose} failed: {failure.reason} (check {self.setting})")

    @property
    def setting(self) -> str:
        name = self.failure.setting or _SETTING[self.failure.kind]
        if name == cabundle.VARIABLE:  # not one of forgebot's: the process's own (`foundation.cabundle`)
            return name
        if name in _ROLE_SETTINGS and self.role not in ("", "model"):
            named = f"FORGEBOT_LLM__{name} or FORGEBOT_LLM__ROLES__{self.role.upper()}__{name}"
        else:
            named = f"FORGEBOT_LLM__{name}"
        # a gateway in front of the model may refuse for want of its own key header, not the API key
        return f"{named}, or FORGEBOT_LLM__HEADERS for a gateway's own key header" if name == "API_KEY" else named


@dataclass(frozen=True)
class ResolvedModel:
    """The effective settings of one role after its overrides."""

    provider: str
    model: str
    base_url: str | None
    api_key: SecretStr | None
    temperature: float
    timeout: float
    max_retries: int
    structured_output: str = "auto"
    output_tokens: int = 4096  # the cap every call of this role is sent
    context_window: int = 32_000
    headers: dict[str, SecretStr] = field(default_factory=dict)  # a gateway's own headers, on every request

    def header_values(self) -> dict[str, str]:
        return {name: value.get_secret_value() for name, value in self.headers.items()}


def resolve(settings: LLMSettings, role: str) -> ResolvedModel:
    """The default model with the role's overrides applied."""
    override = settings.roles.get(role)

    def pick(name: str) -> Any:
        value = getattr(override, name, None) if override is not None else None
        return value if value is not None and value != "" else getattr(settings, name)

    return ResolvedModel(
        provider=settings.provider, model=pick("model"), base_url=pick("base_url"), api_key=pick("api_key"),
        temperature=pick("temperature"), timeout=settings.timeout, max_retries=settings.max_retries,
        structured_output=pick("structured_output"),
        output_tokens=output_cap(settings.context_window_tokens, settings.max_output_tokens),
        context_window=settings.context_window_tokens, headers=dict(pick("headers")),
    )


def output_cap(window_tokens: int, max_output_tokens: int) -> int:
    """Tokens one call may write: the setting, but at most a quarter of the window (the prompt's room
    is the rest, and a small model asked for more than it can hold would only run longer)."""
    return min(max_output_tokens, window_tokens // 4)


ROLES = ("decomposer", "analyzer", "planner", "architect", "coder", "reviewer")


def check_config(settings: LLMSettings) -> None:
    """Build every role's model once (no network): a `ModelConfigError` before any task starts."""
    for role in sorted({*ROLES, *settings.roles}):
        chat_model(settings, role)


def chat_model(settings: LLMSettings, role: str) -> BaseChatModel:
    """Return the chat model for `role`, carrying its profile (see `profile`)."""
    resolved = resolve(settings, role)
    builder = _BUILDERS.get(resolved.provider)
    if builder is None:
        raise ModelConfigError(f"unknown provider {resolved.provider!r}; use openai, anthropic or ollama")
    model = builder(resolved)
    endpoint = f"{resolved.provider} {resolved.base_url or 'default'} {resolved.model}"
    model.metadata = {**(model.metadata or {}), "forgebot": {
        "role": role, "provider": resolved.provider, "endpoint": endpoint,
        "structured_output": resolved.structured_output, "max_retries": resolved.max_retries,
        "base_url": resolved.base_url or "", "model": resolved.model, "window": resolved.context_window}}
    return model


@dataclass(frozen=True)
class Profile:
    """How forgebot calls one model; a model not built by `chat_model` (a test double) gets the defaults."""

    role: str = "model"
    provider: str = ""
    endpoint: str = ""
    structured_output: str = "auto"
    max_retries: int = 0
    base_url: str = ""  # the configured one ("": the provider's own)
    model: str = ""
    window: int = 0  # FORGEBOT_LLM__CONTEXT_WINDOW_TOKENS: what forgebot's prompts may reach


def profile(model: BaseChatModel) -> Profile:
    data = (model.metadata or {}).get("forgebot")
    if not isinstance(data, dict):
        return Profile()
    return Profile(role=str(data["role"]), provider=str(data["provider"]), endpoint=str(data["endpoint"]),
                   structured_output=str(data["structured_output"]), max_retries=int(data["max_retries"]),
                   base_url=str(data.get("base_url") or ""), model=str(data.get("model") or ""),
                   window=int(data.get("window") or 0))


async def invoke(runnable: Runnable[Any, Any], messages: list[BaseMessage], prof: Profile) -> Any:
    """`runnable.ainvoke(messages)` with the retry policy; a lasting failure is a `ModelCallError`."""
    attempt = 0
    modelparams.adapt(runnable, prof.endpoint)
    while True:
        try:
            answer = await runnable.ainvoke(messages)
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
            left_out = modelparams.refused(failure.reason, runnable, prof.endpoint) if failure.kind == "request" \
                else None
            if left_out is not None:  # the same call without it: not a try of the retry policy
                log.warning("the model %s refused a request (%s): %s", prof.endpoint or prof.role, failure.reason,
                            left_out.done)
                continue
            if failure.kind in ("transient", "unreachable") and attempt < prof.max_retries:
                delay = failure.retry_after if failure.retry_after is not None else 0.5 * 2**attempt
                if delay <= MAX_BACKOFF:
                    attempt += 1
                    await asyncio.sleep(delay)
                    continue
            raise ModelCallError(prof.role, failure) from exc
        if prof.provider == "openai" and prof.base_url and prof.window:
            # an Ollama server behind its OpenAI API cuts what its window does not hold, without an error
            smaller = await servedwindow.check(prof.base_url, prof.model, prof.window)
            if smaller:
                raise ModelCallError(prof.role, Failure("window", smaller))
        return answer


_T = TypeVar("_T")
# seconds a call a person waits on may take before they are told what they wait for
PATIENCE = 10.0


async def said_if_slow(call: Awaitable[_T], say: Callable[[], None], after: float = PATIENCE) -> _T:
    """`call`'s result, having run `say()` once if it had not come after `after` seconds. An endpoint that
    takes the connection and never answers is waited on for the whole timeout at every try (six minutes
    by default), and a person at a terminal must not wait that long in silence."""
    pending = asyncio.ensure_future(call)
    if not (await asyncio.wait({pending}, timeout=after))[0]:
        say()
    return await pending


_CONTEXT = re.compile(r"context.{0,20}(length|size|window)|maximum context|too many tokens|prompt is too long"
                      r"|exceed_context|context_length_exceeded", re.I)
_FORMAT = re.compile(r"response_format|json_schema|json schema|structured output|\bformat\b.{0,40}"
                     r"(not supported|unsupported)|(not supported|unsupported).{0,40}\bformat\b", re.I)


# a server started without tool calling: vLLM's `"auto" tool choice requires --enable-auto-tool-choice and
# --tool-call-parser to be set` (400), llama.cpp's `tools param requires --jinja flag` (500)
_TOOLS_OFF = re.compile(r"--enable-auto-tool-choice|requires --jinja|--jinja flag")
# an output cap above the model's: Anthropic's `max_tokens: 8192 > 4096, which is the maximum allowed number of
# output tokens for claude-3-haiku-…`, OpenAI's `max_tokens is too large: 16384. This model supports at most 4096
# completion tokens`
_OUTPUT_CAP = re.compile(r"maximum allowed number of output tokens|supports at most \d+ completion tokens"
                         r"|max_tokens is too large", re.I)
# an account with no credit left: OpenAI's 429 `You exceeded your current quota, please check your plan and
# billing details` (code insufficient_quota: a rate limit's status, but no wait refills it), Anthropic's 400
# `Your credit balance is too low to access the Anthropic API`, OpenRouter's 402 `Insufficient credits`
_NO_CREDIT = re.compile(r"exceeded your current quota|insufficient_quota|credit balance is too low"
                        r"|insufficient credits", re.I)
# a prompt a provider's content filter refused: Azure OpenAI's `… triggering Azure OpenAI's content management
# policy` (code content_filter), OpenAI's reasoning models' `your prompt was flagged as potentially violating
# our usage policy` (code invalid_prompt); repository text can trip them, and a rephrased issue may pass
_FILTERED = re.compile(r"content management policy|flagged as potentially violating", re.I)
# how langchain-openai says that an answer was not the OpenAI API's JSON (an HTML page, plain text)
_NOT_THE_API = "Unexpected response type from OpenAI-compatible endpoint"


def classify(exc: BaseException) -> Failure | None:
    """The failure a provider exception stands for; None for exceptions that are not the provider's."""
    from langchain_core.exceptions import ModelRefusalError

    if isinstance(exc, ModelRefusalError):
        return Failure("refusal", _short(str(exc) or "the model refused"))
    name = type(exc).__name__
    status = _status(exc)
    if status is None:
        if isinstance(exc, TimeoutError) or "Timeout" in name:
            # retried as any transient failure; what to raise, if it lasts, is the time a call may take
            return Failure("transient", "the model call timed out", setting="TIMEOUT")
        untrusted = cabundle.untrusted(exc)
        if untrusted:  # it answered, with a certificate no CA here signed: configuration, never retried
            return Failure("certificate", _short(f"the model endpoint's TLS certificate is not trusted here "
                                                 f"({untrusted}); a private CA's certificates go in a PEM file"))
        # the SDKs' and LangChain's own wrappers: APIConnectionError, OpenAIConnectionError, httpx.ConnectError
        if isinstance(exc, ConnectionError) or "Connect" in name or name in ("RemoteProtocolError", "ReadError"):
            return Failure("unreachable", _short(f"cannot reach the model endpoint ({_message(exc)})"))
        if isinstance(exc, ValueError) and str(exc).startswith(_NOT_THE_API):
            # a web page where the API should be: a proxy's login page, a server's UI at a base URL without /v1
            page = str(exc).partition("got str: ")[2].strip("'\"")
            return Failure("request", _short(f"the endpoint answered with a page, not the API's JSON (it began: "
                                             f"{page[:80]!r}): is the base URL the API's root, often ending in /v1?"),
                           setting="BASE_URL")
        return None
    return _answered(status, _short(_message(exc)) or f"HTTP {status}", exc)


def _answered(status: int, reason: str, exc: BaseException) -> Failure:
    """The failure an HTTP error answer stands for, by its status and the provider's words."""
    if status in (400, 422, 500) and _FORMAT.search(reason):  # llama-cpp-python answers a 500 for it
        return Failure("format", f"HTTP {status}: {reason}", status)
    if status in (400, 500) and _TOOLS_OFF.search(reason):  # llama.cpp answers a 500: no outage to wait out
        return Failure("request", f"HTTP {status}: {reason}: forgebot's roles call tools, so the server must be "
                       "started with tool calling on (vLLM: --enable-auto-tool-choice --tool-call-parser NAME; "
                       "llama.cpp: --jinja)", status, setting="BASE_URL")
    if status in (400, 402, 403, 429) and _NO_CREDIT.search(reason):  # no waiting refills an account
        return Failure("quota", f"HTTP {status}: {reason}", status)
    if status == 400 and _FILTERED.search(reason):  # the provider's filter refused the prompt: not a setting
        return Failure("refusal", f"HTTP {status}: {reason}", status)
    if status == 429 or status >= 500:
        return Failure("transient", f"HTTP {status}: {reason}", status, _retry_after(exc))
    if status in (401, 403):
        return Failure("auth", f"HTTP {status}: {reason}", status)
    # no such route: not a model the endpoint lacks (Azure OpenAI calls its models deployments)
    if status == 404 and not any(word in reason.lower() for word in ("model", "deployment")):
        return Failure("not_found", f"HTTP {status}: {reason}: the endpoint has no chat API at this address; is the "
                       "base URL the API's root, often ending in /v1?", status, setting="BASE_URL")
    if status == 404:
        return Failure("not_found", f"HTTP {status}: {reason}", status)
    if _OUTPUT_CAP.search(reason):  # the cap forgebot sends is the operator's setting, not the model's name
        return Failure("request", f"HTTP {status}: {reason}", status, setting="MAX_OUTPUT_TOKENS")
    if _CONTEXT.search(reason):
        return Failure("context", f"HTTP {status}: {reason}", status)
    return Failure("request", f"HTTP {status}: {reason}", status)


def _status(exc: BaseException) -> int | None:
    for attr in ("status_code", "status"):
        value = getattr(exc, attr, None)
        if isinstance(value, int) and not isinstance(value, bool) and 400 <= value < 600:
            return value
    response = getattr(exc, "response", None)  # set on any exception by some clients, even a parse error
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) and 400 <= value < 600 else None


def _message(exc: BaseException) -> str:
    """The provider's own message out of the error body, not the SDK's wrapper text."""
    found = _body_message(getattr(exc, "body", None))
    if found:
        return found
    error = getattr(exc, "error", None)  # ollama.ResponseError
    if isinstance(error, str) and error:
        return _body_message(_json_in(error)) or error
    text = str(exc)
    return _body_message(_json_in(text)) or text  # "Error code: 400 - {...}" from SDKs that kept no body


def _json_in(text: str) -> Any:
    try:
        return json.loads(text[text.index("{"):])
    except ValueError:
        return None


def _body_message(body: Any) -> str:
    if isinstance(body, str):  # the OpenAI SDK keeps a body's `error` when it is a plain string
        return body
    if not isinstance(body, dict):
        return ""
    inner = body.get("error", body)
    if isinstance(inner, dict) and isinstance(inner.get("message"), str):
        return str(inner["message"])
    if isinstance(inner, dict) and isinstance(inner.get("detail"), str):  # FastAPI's (llama-cpp-python's) own
        return str(inner["detail"])
    return inner if isinstance(inner, str) else ""


def _retry_after(exc: BaseException) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            try:
                return max(0.0, float(value) * scale)
            except ValueError:
                return None
    return None


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _REASON_CHARS else text[: _REASON_CHARS - 1] + "…"


def _openai(r: ResolvedModel) -> BaseChatModel:
    if r.api_key is None and r.base_url is None:
        raise ModelConfigError("FORGEBOT_LLM__API_KEY is not set (or set FORGEBOT_LLM__BASE_URL for a local endpoint)")
    from langchain_openai import ChatOpenAI

    # OpenAI's own API takes `max_completion_tokens` (LangChain's spelling of `max_tokens` there); the
    # compatible servers (llama.cpp, llama-cpp-python, vLLM, Ollama's /v1, gateways) all read
    # `max_tokens`, and some ignore the newer name, which would leave the call without a cap
    cap: dict[str, Any] = {"max_tokens": r.output_tokens} if r.base_url is None else {
        "extra_body": {"max_tokens": r.output_tokens}}
    return ChatOpenAI(
        model=r.model,
        base_url=r.base_url,
        # local OpenAI-compatible servers (vLLM, llama.cpp, Ollama) accept any key
        api_key=r.api_key if r.api_key is not None else SecretStr("unused"),
        temperature=r.temperature,
        timeout=r.timeout,
        max_retries=0,  # `invoke` retries, with one policy for every provider
        default_headers=r.header_values() or None,
        **cap,
    )


def _anthropic(r: ResolvedModel) -> BaseChatModel:
    if r.api_key is None:
        raise ModelConfigError("provider anthropic needs FORGEBOT_LLM__API_KEY")
    try:
        from langchain_anthropic import ChatAnthropic
    except ImportError as exc:
        raise ModelConfigError(
            "provider anthropic needs the anthropic extra: pip install 'forgebot[anthropic]'") from exc
    options: dict[str, Any] = {
        "model": r.model, "api_key": r.api_key, "temperature": r.temperature,
        "timeout": r.timeout, "max_retries": 0, "max_tokens": r.output_tokens,
        "default_headers": r.header_values() or None,
    }
    if r.base_url:
        options["base_url"] = r.base_url
    return ChatAnthropic(**options)


def _ollama(r: ResolvedModel) -> BaseChatModel:
    try:
        from langchain_ollama import ChatOllama
    except ImportError as exc:
        raise ModelConfigError("provider ollama needs the ollama extra: pip install 'forgebot[ollama]'") from exc
    return ChatOllama(
        model=r.model,
        base_url=r.base_url,
        temperature=r.temperature,
        num_predict=r.output_tokens,
        num_ctx=r.context_window,  # Ollama's own default window is small, and it cuts prompts silently
        client_kwargs={"headers": r.header_values()},
        sync_client_kwargs={"timeout": r.timeout},
        async_client_kwargs={"timeout": r.timeout},
    )


_BUILDERS = {"openai": _openai, "anthropic": _anthropic, "ollama": _ollama}


def model_name(model: BaseChatModel) -> str:
    """The model's name for accounting and footers (the class name when it has none)."""
    for attr in ("model_name", "model"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__
