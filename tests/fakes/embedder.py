"""A deterministic embedder for tests: no model, stable across runs and machines."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from project.index.embed import Matrix, normalise

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
