"""The embedder a worker uses for the vector leg, built once per process from settings.

`FORGEBOT_EMBEDDER__KIND` picks it: the offline model (default; `pip install .` ships it), an
OpenAI-compatible endpoint through `HttpEmbedder`, or none. The offline model loads a 23 MB ONNX
graph, and every role of every task searches, so one instance per configuration is kept for the
life of the process; the instance is thread-safe (the background base-index build shares it).
"""

from __future__ import annotations

import threading

from foundation.settings import EmbedderSettings
from project.index.embed import Embedder, HttpEmbedder

_lock = threading.Lock()
_built: dict[str, Embedder] = {}


def embedder_for(config: EmbedderSettings) -> Embedder | None:
    """The configured embedder (shared per process), or None when the vector leg is off."""
    if config.kind == "off":
        return None
    key = config.model_dump_json()  # the secret is masked here, so base_url+model tell endpoints apart
    key += "\0" + (config.api_key.get_secret_value() if config.api_key else "")
    with _lock:
        if key not in _built:
            _built[key] = _build(config)
        return _built[key]


def command_embedder(config: EmbedderSettings) -> Embedder | None:
    """`embedder_for` in a command the user waits on (`forgebot index`, `search`, `memory`): the offline
    model on every core unless `FORGEBOT_EMBEDDER__THREADS` is set. The default of one thread keeps a core
    for a worker's tasks while base indexes embed behind them; a terminal waiting on its vectors has none
    to keep (rich's 2,481 chunks: 20 a second on one of two cores, 34 on both)."""
    if config.kind == "offline" and "threads" not in config.model_fields_set:
        config = config.model_copy(update={"threads": 0})
    return embedder_for(config)


def _build(config: EmbedderSettings) -> Embedder:
    if config.kind == "http":
        return HttpEmbedder(
            str(config.base_url), config.model, config.dimension,
            api_key=config.api_key.get_secret_value() if config.api_key else "",
            headers={name: value.get_secret_value() for name, value in config.headers.items()},
            batch_size=config.batch_size, timeout=config.timeout,
        )
    from project.index.minilm import MiniLMEmbedder  # onnxruntime loads only when the model is wanted

    return MiniLMEmbedder(threads=config.threads)
