"""The local sentence model served by ONNX Runtime: the same weights, about 3× faster per query.

A query's embedding was most of an ``inject`` (13 ms of 30 ms on 2 cores with torch and
one thread; ONNX Runtime: 4.4 ms for the same vector). The graph is exported from the
model's own files with ``torch.onnx.export`` the first time a process needs it (or by
``memory models prepare`` at install time), checked against the torch vectors of a probe
set, and kept in a cache folder under a name made of the weights' digest, so every
worker, on any machine, exports its own once and stored vectors stay valid:

- an export whose vectors fall below ``MIN_COSINE`` of torch's is refused, and the
  embedder keeps torch;
- the tokenizer is the model's ``tokenizer.json`` (the ``tokenizers`` library, as
  sentence-transformers uses it), truncated at the model's ``max_seq_length``;
- pooling is the model's: mean over the attention mask, then L2 normalisation.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

MIN_COSINE = 0.999
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# What the export is checked on: short and long, plain and odd, past the truncation length.
PROBES = (
    "hello",
    "What medication does Aisha take?",
    "Remind me what Arjun does at Initech, and when the staging database was last migrated.",
    "We decided to move the billing deploy window to Thursday 02:30 UTC after the outage.",
    "never commit .env files; always run `make check` before pushing to main",
    "Caroline went to the LGBTQ support group on 7 May 2023 and said it was powerful.",
    "Ünïcödé, emoji 🚀, CJK 記憶, and numbers 3.14159 / 42 / 2026-11-25.",
    " ".join(["The quick brown fox jumps over the lazy dog near the river bank."] * 40),
)


class OnnxUnavailable(RuntimeError):
    """The model cannot be served through ONNX Runtime here (why is the message)."""


def default_cache() -> Path:
    """``MEMORY_MODEL_CACHE``, else ``$XDG_CACHE_HOME/agent-memory/models`` (``~/.cache``)."""
    explicit = os.environ.get("MEMORY_MODEL_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "agent-memory" / "models"


def _digest(model_dir: Path) -> str:
    """The model files' digest: a different checkpoint never reuses another's export."""
    h = hashlib.sha256()
    for name in ("config.json", "tokenizer.json", "sentence_bert_config.json", "1_Pooling/config.json"):
        path = model_dir / name
        if path.exists():
            h.update(name.encode() + b"\0" + path.read_bytes())
    weights = model_dir / "model.safetensors"
    if not weights.exists():
        raise OnnxUnavailable(f"{model_dir} has no model.safetensors to export")
    with weights.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def _digest_known(model_dir: Path, cache: Path, name: str) -> str:
    """``_digest``, remembered in ``cache`` against the weights' size, time and inode:
    hashing 90 MB of weights was 0.15 s of every process's first query."""
    weights = model_dir / "model.safetensors"
    try:
        stat = weights.stat()
    except FileNotFoundError:
        return _digest(model_dir)  # raises OnnxUnavailable
    seen_as = [str(weights.resolve()), stat.st_size, stat.st_mtime_ns, stat.st_ino]
    note = cache / f"{name}.digest.json"
    try:
        known = json.loads(note.read_text())
        if known.get("weights") == seen_as and isinstance(known.get("digest"), str):
            return known["digest"]
    except (FileNotFoundError, ValueError, AttributeError):
        pass
    digest = _digest(model_dir)
    try:
        cache.mkdir(parents=True, exist_ok=True)
        staged = note.with_name(f".{note.name}.{os.getpid()}")
        staged.write_text(json.dumps({"weights": seen_as, "digest": digest}))
        os.replace(staged, note)
    except OSError:  # a read-only cache: hash again next time
        pass
    return digest


def _settings(model_dir: Path) -> tuple[int, bool]:
    """The model's truncation length, and whether its pooling is the mean (the one served here)."""
    bert = json.loads((model_dir / "sentence_bert_config.json").read_text()) \
        if (model_dir / "sentence_bert_config.json").exists() else {}
    pooling_file = model_dir / "1_Pooling" / "config.json"
    pooling = json.loads(pooling_file.read_text()) if pooling_file.exists() else {}
    mean_only = bool(pooling.get("pooling_mode_mean_tokens")) and not any(
        pooling.get(k) for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens"))
    return int(bert.get("max_seq_length", 256)), mean_only


@dataclass(frozen=True)
class Exported:
    path: Path
    min_cosine: float
    digest: str


def export(model_dir: Path, cache: Path | None = None, name: str | None = None) -> Exported:
    """The checked ONNX graph of ``model_dir`` (called ``name``) in ``cache``: the one
    already there, or a new export (written under a temporary name, renamed into place
    once it passed)."""
    model_dir = Path(model_dir)
    name = name or model_dir.name
    _, mean_only = _settings(model_dir)
    if not mean_only:
        raise OnnxUnavailable(f"{name}: only mean pooling is served through ONNX Runtime")
    cache = Path(cache or default_cache())
    digest = _digest_known(model_dir, cache, name)
    target = cache / f"{name}-{digest}.onnx"
    receipt = target.with_suffix(".json")
    if target.exists() and receipt.exists():
        seen = json.loads(receipt.read_text())
        if seen.get("digest") == digest and float(seen.get("min_cosine", 0)) >= MIN_COSINE:
            return Exported(target, float(seen["min_cosine"]), digest)
    cache.mkdir(parents=True, exist_ok=True)
    model = _torch_model(model_dir)  # loaded once: exported, then the reference it is checked against
    with tempfile.TemporaryDirectory(dir=cache, prefix=".export-") as work:
        staged = Path(work) / target.name
        _export_graph(model, staged)
        worst = _check(model, model_dir, staged)
        if worst < MIN_COSINE:
            raise OnnxUnavailable(f"the ONNX export of {name} gives vectors at cosine {worst:.6f} "
                                  f"of torch's (needs ≥ {MIN_COSINE}); kept torch")
        os.replace(staged, target)
        written = Path(work) / receipt.name
        written.write_text(json.dumps({"digest": digest, "min_cosine": worst, "probes": len(PROBES)}))
        os.replace(written, receipt)
    log.info("exported %s to ONNX (%s, min cosine %.7f)", name, target, worst)
    return Exported(target, worst, digest)


def _torch_model(model_dir: Path) -> Any:
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # a load bar in the middle of a CLI's output is noise
    return SentenceTransformer(str(model_dir), device="cpu")


def _export_graph(model: Any, path: Path) -> None:
    import torch

    bert = model[0].auto_model.eval()

    class Hidden(torch.nn.Module):
        def __init__(self, inner: Any):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    sample = model.tokenizer(["a probe", "a longer probe sentence"], return_tensors="pt", padding=True)
    axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "last_hidden_state")}
    import warnings

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer notes
        torch.onnx.export(Hidden(bert), tuple(sample[name] for name in INPUTS), str(path),
                          input_names=list(INPUTS), output_names=["last_hidden_state"],
                          dynamic_axes=axes, opset_version=17, dynamo=False)


def _check(model: Any, model_dir: Path, path: Path) -> float:
    """The lowest cosine between the export's and torch's (``model``'s) vectors over the
    probes, one at a time and as one padded batch."""
    reference = model.encode(list(PROBES), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    encoder = OnnxEncoder(model_dir, path)
    alone = np.vstack([encoder.encode([p]) for p in PROBES])
    batch = encoder.encode(list(PROBES), threads=0)
    return float(min((alone * reference).sum(1).min(), (batch * reference).sum(1).min()))


class OnnxEncoder:
    """Text → unit vectors through ONNX Runtime. ``run`` is thread-safe and releases the
    GIL; a query session (``threads`` 1 by default, no spinning) and a batch session
    (every core) are made when first used."""

    def __init__(self, model_dir: Path, graph: Path, min_cosine: float | None = None):
        from tokenizers import Tokenizer

        self.model_dir, self.graph, self.min_cosine = Path(model_dir), Path(graph), min_cosine
        max_length, _ = _settings(self.model_dir)
        self.tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length)
        self.tokenizer.enable_padding(pad_id=self.tokenizer.token_to_id("[PAD]") or 0)
        self.dimension = int(json.loads((self.model_dir / "config.json").read_text())["hidden_size"])
        self._sessions: dict[int, Any] = {}
        self._lock = threading.Lock()
        self._queries = 0  # queries being embedded now (``query``)

    def _session(self, threads: int) -> Any:
        session = self._sessions.get(threads)
        if session is None:
            import onnxruntime as ort

            with self._lock:
                session = self._sessions.get(threads)
                if session is None:
                    options = ort.SessionOptions()
                    options.intra_op_num_threads = threads  # 0: one per core
                    options.inter_op_num_threads = 1
                    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                    options.log_severity_level = 3
                    if threads > 0:
                        # A query's workers that spin after it take the cores LanceDB's
                        # threads and other requests need next (measured with other work
                        # between queries, 2 threads: p50 6.0 / p95 16.0 ms spinning,
                        # 5.0 / 7.6 not); the batch session (0: every core) spins.
                        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                    session = ort.InferenceSession(str(self.graph), options, providers=["CPUExecutionProvider"])
                    self._sessions[threads] = session
        return session

    def encode(self, texts: list[str], threads: int = 1) -> np.ndarray:
        encoded = self.tokenizer.encode_batch(list(texts))
        ids = np.asarray([e.ids for e in encoded], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask,
                "token_type_ids": np.asarray([e.type_ids for e in encoded], dtype=np.int64)}
        hidden = self._session(threads).run(None, feed)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.where(norms == 0, 1, norms)).astype(np.float32)

    def query(self, text: str, threads: int = 1, alone: int = 0) -> np.ndarray:
        """One query's vector: with ``alone`` threads when no other query is being embedded
        in this process at that moment (0: never), else with ``threads``."""
        with self._lock:
            self._queries += 1
            first = self._queries == 1
        try:
            return self.encode([text], threads=alone if first and alone else threads)[0]
        finally:
            with self._lock:
                self._queries -= 1

    def encode_many(self, texts: list[str], batch_size: int, threads: int = 0) -> np.ndarray:
        """Many texts in batches of similar length (less padding), back in their order."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            out[chunk] = self.encode([texts[i] for i in chunk], threads=threads)
        return out
