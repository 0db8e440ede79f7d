"""The local model on ONNX Runtime: the same vectors as torch, exported once and checked."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from retrieval import embeddings, onnx_model
from retrieval.config import load_config
from retrieval.embeddings import Embedder

# Not the export's probes: sentences an agent stores and asks, and one past 256 tokens.
TEXTS = [
    "Melanie signed up for a pottery class last Tuesday.",
    "Which database does the checkout service write to?",
    "The on-call engineer rotates every Monday at 09:00 Europe/Berlin.",
    "ok",
    "Don't deploy on Fridays — the last time we did, billing was down for six hours.",
    " ".join(f"Step {n}: run the migration for shard {n} and check its row counts." for n in range(60)),
]


def _embedder(runtime: str, cache: Path) -> Embedder:
    config = load_config()
    embedding = config.embedding.model_copy(update={"runtime": runtime, "model_cache": str(cache)})
    return Embedder(config.model_copy(update={"embedding": embedding}))


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """A model cache holding this machine's checked export (``make install`` made it), so
    the tests that read an export do not make their own; the tests of exporting export."""
    folder = tmp_path_factory.mktemp("models")
    for made in onnx_model.default_cache().glob("*.onnx"):
        if made.with_suffix(".json").exists():
            shutil.copy2(made, folder / made.name)
            shutil.copy2(made.with_suffix(".json"), folder / made.with_suffix(".json").name)
    return folder


@pytest.fixture(autouse=True)
def _fresh_encoders(monkeypatch):
    """Each test loads the encoder from its own cache, not one an earlier test kept."""
    monkeypatch.setattr(embeddings, "_ONNX", {})


def test_onnx_vectors_are_torchs_one_at_a_time_and_in_a_padded_batch(cache):
    onnx, torch = _embedder("onnx", cache), _embedder("torch", cache)
    assert onnx._onnx() is not None
    reference = torch.embed(TEXTS)
    batch = onnx.embed(TEXTS * 2)  # more than a small batch: the every-core session
    alone = np.vstack([onnx.embed_one(t) for t in TEXTS])
    assert batch.shape == (len(TEXTS) * 2, 384) and batch.dtype == np.float32
    assert (batch[:len(TEXTS)] * reference).sum(axis=1).min() >= onnx_model.MIN_COSINE
    assert (alone * reference).sum(axis=1).min() >= onnx_model.MIN_COSINE
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    assert onnx.dimension == torch.dimension == 384


def test_the_export_is_made_once_and_reused_by_the_weights_digest(cache):
    folder = Path(embeddings._local_model_path("all-MiniLM-L6-v2"))
    first = onnx_model.export(folder, cache, name="all-MiniLM-L6-v2")
    made = first.path.stat().st_mtime_ns
    again = onnx_model.export(folder, cache, name="all-MiniLM-L6-v2")
    assert again.path == first.path and again.path.stat().st_mtime_ns == made
    receipt = json.loads(first.path.with_suffix(".json").read_text())
    assert receipt["digest"] == first.digest and receipt["min_cosine"] >= onnx_model.MIN_COSINE
    assert first.digest in first.path.name
    # A receipt that does not vouch for these weights is not trusted: exported again.
    first.path.with_suffix(".json").write_text(json.dumps({**receipt, "digest": "0" * 16}))
    redone = onnx_model.export(folder, cache, name="all-MiniLM-L6-v2")
    assert redone.path.stat().st_mtime_ns != made
    assert not [p for p in cache.iterdir() if p.name.startswith(".export-")]


def test_an_export_that_fails_its_check_is_refused_and_torch_embeds(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(onnx_model, "_check", lambda model, model_dir, path: 0.97)
    embedder = _embedder("onnx", tmp_path / "models")
    with caplog.at_level(logging.WARNING, logger="retrieval.embeddings"):
        assert embedder._onnx() is None
    assert "cosine 0.970000" in caplog.text and "kept torch" in caplog.text
    assert not list((tmp_path / "models").glob("*.onnx"))  # nothing half-trusted left behind
    vector = embedder.embed_one("Which database does checkout write to?")
    assert vector.shape == (384,) and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_a_served_query_never_loads_torch_once_the_export_exists(cache):
    _embedder("onnx", cache)._onnx()  # the export, made (or found) here
    probe = ("import sys; from retrieval.config import load_config; from retrieval.embeddings import Embedder;"
             f"c = load_config(); e = c.embedding.model_copy(update={{'model_cache': {str(cache)!r}}});"
             "v = Embedder(c.model_copy(update={'embedding': e})).embed_one('deploy window');"
             "print(len(v), 'torch' in sys.modules, 'sentence_transformers' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["384", "False", "False"]


def test_memory_models_prepare_reports_the_checked_export(cache):
    done = subprocess.run([sys.executable, "-m", "memory_assets.cli", "models", "prepare", "--json"],
                          capture_output=True, text=True, check=True,
                          env={**os.environ, "MEMORY_MODEL_CACHE": str(cache), "HF_HUB_OFFLINE": "1"})
    report = json.loads(done.stdout)
    assert report["runtime"] == "onnx" and report["model"] == "local:all-MiniLM-L6-v2"
    assert Path(report["graph"]).parent == cache and Path(report["graph"]).exists()
    assert report["min_cosine_to_torch"] >= onnx_model.MIN_COSINE and report["dimension"] == 384
