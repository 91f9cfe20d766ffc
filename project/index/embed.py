"""Embedders for the vector leg: the protocol and an OpenAI-compatible endpoint.

The offline default (all-MiniLM-L6-v2, int8 ONNX) lives in `minilm.py`. Every embedder names its model
and dimension; the search store records both and rebuilds the vector leg when either changes, so
vectors from two models never share one index.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import httpx
import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float32]


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Return one row per text, shape (len(texts), dimension)."""
        ...


class EmbeddingError(RuntimeError):
    """The embedding endpoint failed or answered something unusable."""


def normalise(rows: Matrix) -> Matrix:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    out: Matrix = (rows / np.maximum(norms, 1e-12)).astype(np.float32)
    return out


class HttpEmbedder:
    """An OpenAI-compatible `POST {base_url}/embeddings` endpoint (production)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        dimension: int,
        *,
        api_key: str = "",
        headers: Mapping[str, str] | None = None,
        batch_size: int = 64,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError("base_url must be an http(s) URL")
        sent = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=base_url.rstrip("/") + "/", headers={**sent, **(headers or {})}, timeout=timeout,
            transport=transport,
        )
        self._model = model
        self._dimension = dimension
        self._batch_size = batch_size

    @property
    def model_id(self) -> str:
        return self._model

    @property
    def dimension(self) -> int:
        return self._dimension

    def close(self) -> None:
        self._client.close()

    def embed(self, texts: Sequence[str]) -> Matrix:
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            out[start : start + len(batch)] = self._post(batch)
        return normalise(out)

    def _post(self, batch: list[str]) -> Matrix:
        try:
            response = self._client.post("embeddings", json={"model": self._model, "input": batch})
            response.raise_for_status()
            items = sorted(response.json()["data"], key=lambda item: item["index"])
            rows = np.array([item["embedding"] for item in items], dtype=np.float32)
        except (httpx.HTTPError, KeyError, TypeError, ValueError) as exc:
            # The message never includes request headers, so the API key cannot leak into logs.
            raise EmbeddingError(f"embedding request to model {self._model!r} failed: {exc}") from exc
        if rows.shape != (len(batch), self._dimension):
            raise EmbeddingError(
                f"model {self._model!r} returned shape {rows.shape}, "
                f"expected ({len(batch)}, {self._dimension})"
            )
        return rows
