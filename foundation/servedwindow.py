"""The window an Ollama server runs a model with, asked when forgebot reaches it through its OpenAI API.

Why: Ollama's OpenAI-compatible API (`http://HOST:11434/v1`, the endpoint its own docs and forgebot's
suggest) has no way to set the window: it runs a model with the model's Modelfile `num_ctx`, else the
host's `OLLAMA_CONTEXT_LENGTH` (4,096 tokens unless set; newer releases pick a tier by the GPU's memory),
and a longer prompt is cut from its start without an error. forgebot's prompts reach
`FORGEBOT_LLM__CONTEXT_WINDOW_TOKENS` (32,000 by default): the system prompt and the task were cut away,
and the model answered, well-formed, about what was left. Ollama's native API takes the window with each
request (`FORGEBOT_LLM__PROVIDER=ollama` sends it), so only the OpenAI route needs this.

After the first answer of such an endpoint (the model is loaded then), `GET /api/ps` says the window the
model runs with (`context_length`, in recent releases); an older server's Modelfile `num_ctx` comes from
`POST /api/show`. A server that is no Ollama (no `/api/version`) is left alone. An answer that lets the
calls go on is kept per endpoint for the life of the process; a window too small is asked about again at the
next call, so a host the operator fixed is seen without restarting forgebot.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

import httpx

log = logging.getLogger(__name__)
_ASK_SECONDS = 5.0
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.M)


@dataclass(frozen=True)
class Served:
    """What an Ollama server says of the window it runs a model with (`window` None: it does not say)."""

    root: str  # the server's own address, without `/v1`
    window: int | None
    source: str  # "running" (`/api/ps`) or "Modelfile" (`/api/show`), "" when unknown


# per endpoint, what its server said when it lets the calls go on (None: no Ollama), asked once per process
# (two first calls at once may both ask: the same answer twice); a window too small is asked about at each call
_known: dict[str, Served | None] = {}


async def check(base_url: str, model: str, window: int) -> str:
    """Why the Ollama server at `base_url` cannot serve forgebot's `window` for `model` ("" when it can,
    does not say, or is no Ollama server: the log then says it once)."""
    key = f"{base_url} {model}"
    if key in _known:
        return ""
    found = await _ask(base_url, model)
    if found is not None and found.window is not None and found.window < window:
        return _problem(found, model, window)  # not kept: asked again once the operator raised the window
    _known[key] = found
    if found is not None and found.window is None:
        log.warning("%s", _unknown(found, window))
    return ""


async def _ask(base_url: str, model: str) -> Served | None:
    root = base_url.rstrip("/").removesuffix("/v1")
    try:
        async with httpx.AsyncClient(timeout=_ASK_SECONDS) as client:
            version = await client.get(f"{root}/api/version")
            if version.status_code != 200 or not isinstance(_json(version).get("version"), str):
                return None
            running = _running(_json(await client.get(f"{root}/api/ps")), model)
            if running is not None:
                return Served(root, running, "running")
            shown = await client.post(f"{root}/api/show", json={"model": model})
            parameters = _json(shown).get("parameters")
            found = _NUM_CTX.search(parameters) if isinstance(parameters, str) else None
            return Served(root, int(found.group(1)), "Modelfile") if found else Served(root, None, "")
    except httpx.HTTPError as exc:  # the chat API answered; these routes not: nothing to say
        log.debug("no Ollama window from %s: %s", root, exc)
        return None


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _running(body: dict[str, Any], model: str) -> int | None:
    """`context_length` of `model` among the loaded ones (`qwen2.5-coder` is listed as `…:latest`)."""
    names = {model, model if ":" in model else f"{model}:latest"}
    for loaded in body.get("models") or []:
        if isinstance(loaded, dict) and ({loaded.get("name"), loaded.get("model")} & names):
            length = loaded.get("context_length")
            return length if isinstance(length, int) and length > 0 else None
    return None


def _problem(found: Served, model: str, window: int) -> str:
    """Why `found`, whose window is smaller than forgebot's `window`, cannot serve it: the failure's reason."""
    runs = f"runs {model} with" if found.source == "running" else f"gives {model} (Modelfile num_ctx)"
    return (f"Ollama's OpenAI-compatible API at {found.root}/v1 {runs} a {found.window}-token window and silently "
            f"cuts longer prompts; forgebot's reach {window}: set FORGEBOT_LLM__PROVIDER=ollama and "
            f"FORGEBOT_LLM__BASE_URL={found.root} (the window then goes with each request), "
            f"OLLAMA_CONTEXT_LENGTH={window} on the Ollama host, or FORGEBOT_LLM__CONTEXT_WINDOW_TOKENS={found.window}")


def _unknown(found: Served, window: int) -> str:
    """The warning for a server that does not say its window."""
    return (f"Ollama at {found.root} does not say the window it runs the model with; its OpenAI-compatible API "
            f"silently cuts a prompt longer than that (4096 tokens unless OLLAMA_CONTEXT_LENGTH is set), and "
            f"forgebot's reach {window}: FORGEBOT_LLM__PROVIDER=ollama sends the window with each request")
