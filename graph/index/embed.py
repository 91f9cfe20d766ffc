"""Embedders for the vector leg: the protocol, an OpenAI-compatible endpoint and a test hasher.

The offline default (all-MiniLM-L6-v2 in numpy) lives in `minilm.py`. Every embedder names its model
and dimension; the search store records both and rebuilds the vector leg when either changes, so
vectors from two models never share one index.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
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


_WORD = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    """Deterministic bag-of-words feature hashing: texts sharing words get similar vectors.

    For unit tests: no model, stable across runs and machines (sha1, not Python's salted hash).
    """

    def __init__(self, dimension: int = 64, *, model_id: str = "hashing-v1") -> None:
        if dimension < 2:
            raise ValueError("dimension must be at least 2")
        self._dimension = dimension
        self._model_id = f"{model_id}/{dimension}"
        self.calls: list[int] = []  # texts per call, so tests can see what was (re-)embedded

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Matrix:
        self.calls.append(len(texts))
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = hashlib.sha1(word.encode()).digest()
                bucket = int.from_bytes(digest[:4], "little") % self._dimension
                out[row, bucket] += 1.0 if digest[4] & 1 else -1.0
        return normalise(out)


class HttpEmbedder:
    """An OpenAI-compatible `POST {base_url}/embeddings` endpoint (production)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        dimension: int,
        *,
        api_key: str = "",
        batch_size: int = 64,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError("base_url must be an http(s) URL")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=base_url.rstrip("/") + "/", headers=headers, timeout=timeout, transport=transport
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
