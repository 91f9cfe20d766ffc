"""The offline default embedder: all-MiniLM-L6-v2 fine-tuned on PHP code, an int8 ONNX graph run by onnxruntime.

`pip install .` alone brings the model and nothing is downloaded at run time: both files ship with
forgebot beside this module (`models/`). The model is all-MiniLM-L6-v2 (Apache-2.0) fine-tuned by
`scripts/train_embedder.py` on pairs of a PHP method's docblock summary and the method's code as the
index embeds it, from PHP libraries no search measurement uses, then stored with int8 weights; the
tokenizer is the published model's own `tokenizer.json` (bert-base-uncased WordPiece), unchanged.
Both files are checked against pinned sha256 digests before use, so a swapped or truncated model
fails loudly instead of producing quietly different vectors. docs/search.md says why this model,
how it was trained and what it gained.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from tokenizers import Tokenizer

Matrix = npt.NDArray[np.float32]

# A new model is a new id: an index embedded by another model is re-embedded (search_store.ensure_schema).
MODEL_ID = "forgebot/all-MiniLM-L6-v2-php@1"
DIMENSION = 384
MODEL_SHA256 = "2ed4a90649187385283edc250914e2bc1c06066177fd0ca25c417dadf72d61af"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MODELS = Path(__file__).with_name("models")
MODEL_FILE = MODELS / "all-MiniLM-L6-v2-php.int8.onnx"
TOKENIZER_FILE = MODELS / "all-MiniLM-L6-v2.tokenizer.json"


class ModelFileError(RuntimeError):
    """The bundled model is missing or does not match its pinned checksum."""


def bundled_files() -> tuple[Path, Path]:
    """(model, tokenizer.json) as forgebot ships them."""
    return MODEL_FILE, TOKENIZER_FILE


def _verified_bytes(path: Path, expected: str) -> bytes:
    if not path.is_file():
        raise ModelFileError(f"model file missing: {path}")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected:
        raise ModelFileError(f"{path.name}: sha256 {digest} does not match pinned {expected}")
    return data


class MiniLMEmbedder:
    """Sentence embeddings of the fine-tuned all-MiniLM-L6-v2 (mean pooled, L2 normalised), 384 dimensions.

    `threads` bounds onnxruntime's intra-op threads: the worker embeds base indexes in the
    background while a task investigates, and must not take every core from it.
    """

    model_id = MODEL_ID
    dimension = DIMENSION

    def __init__(
        self,
        model_file: Path | None = None,
        tokenizer_file: Path | None = None,
        *,
        max_tokens: int = 256,
        batch_size: int = 32,
        threads: int = 0,
    ) -> None:
        if not 8 <= max_tokens <= 512:
            raise ValueError("max_tokens must be between 8 and 512")
        if model_file is None or tokenizer_file is None:
            found_model, found_tokenizer = bundled_files()
            model_file, tokenizer_file = model_file or found_model, tokenizer_file or found_tokenizer
        model = _verified_bytes(model_file, MODEL_SHA256)
        tokenizer_json = _verified_bytes(tokenizer_file, TOKENIZER_SHA256)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        if threads:
            options.intra_op_num_threads = threads
        self._session = ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_str(tokenizer_json.decode())
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._batch_size = batch_size
        # One session serves the worker's tasks and its background builds; runs are serialised so
        # two threads never split the cores between them twice over.
        self._lock = threading.Lock()

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
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        with self._lock:
            hidden = np.asarray(self._session.run(None, feeds)[0], dtype=np.float32)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        out: Matrix = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return out
