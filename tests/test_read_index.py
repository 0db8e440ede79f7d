"""A published version's in-process read index (``retrieval.read_index``) finds what LanceDB
finds: the same vector lists, nearly the same full-text lists, on a LoCoMo conversation's
419 turns published through the real write path; it refuses to answer for other rows or
another model; its HNSW graph (above ``EXACT_ROWS``) keeps the exact lists' rows."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import numpy as np
import polars as pl
import pytest

from memory_assets.lib.items import publish
from memory_assets.lib.items.consolidation import facts_to_items
from retrieval import MemoryClient, published, read_index
from retrieval.agent.search import fts_list, vector_list
from retrieval.config import load_config
from retrieval.embeddings import Embedder
from retrieval.ids import content_hash
from retrieval.paths import DataRoot
from retrieval.read_index import IndexUnusable, ReadIndex, analyze
from retrieval.schema import FACT_SCHEMA, ITEM_SCHEMA
from retrieval.store import ItemStore
from tests.conftest import LOCOMO

CONV = LOCOMO / "conv-26.json"
NOW = datetime(2026, 10, 1, tzinfo=timezone.utc)
TOP = 50


def _items(texts: list[str]) -> pl.DataFrame:
    facts = pl.DataFrame([{
        "id": f"t{i}", "content": text, "category": "personal", "kind": "fact", "memory_kind": "note", "tags": [],
        "entities": [], "importance": 0.5, "confidence": 0.9, "strength": "explicit", "sentiment": "neutral",
        "tier": "standard", "scope": "global", "namespace": "default", "source_trust": "trusted",
        "provenance": "user_stated", "source_resource_ids": [f"r{i}"], "source_turn_ids": [f"D1:{i}"],
        "content_hash": content_hash(text), "created_at": NOW - timedelta(days=3), "prompt_version": "test",
        "extractor": "offline"} for i, text in enumerate(texts)], schema=FACT_SCHEMA)
    return facts_to_items(facts, NOW).with_columns(embedding_model=pl.lit("local:all-MiniLM-L6-v2")).select(list(ITEM_SCHEMA))


@pytest.fixture(scope="module")
def conversation(tmp_path_factory):
    """conv-26's turns published as items (LanceDB and the read index, one write), and its questions."""
    if not CONV.exists():
        pytest.skip("shared/datasets/locomo is not beside the repo")
    raw = json.loads(CONV.read_text())
    texts = list(dict.fromkeys(t["text"] for k, v in raw.items() if k.startswith("session_") and isinstance(v, list)
                               for t in v if t.get("text")))
    questions = [q["question"] for q in raw["qa"]][:60]
    paths = DataRoot.resolve(tmp_path_factory.mktemp("read-index") / "data")
    items = _items(texts)
    embedder = Embedder(load_config())
    publish.publish(paths, publish.write_items(paths, items, embedder.embed(items["content"].to_list()), NOW))
    pointer = published.read(paths)
    index = ReadIndex.open(pointer.index_path(paths), ids=ItemStore(paths).items()["id"].to_list(),
                           model=embedder.model_id)
    return paths, index, ItemStore(paths).table(), questions, embedder


def test_the_vector_lists_are_lancedbs(conversation):
    """Below ``EXACT_ROWS`` both search exactly: the same rows in the same order, the same distances."""
    paths, index, table, questions, embedder = conversation
    ids = ItemStore(paths).items()["id"].to_list()
    assert index.manifest.exact and index.rows == len(ids) == table.count_rows()
    for question in questions:
        vector = embedder.embed_one(question)
        rows, distances = index.nearest(vector, TOP)
        theirs = vector_list(table, vector, limit=TOP, where=None)
        assert [ids[r] for r in rows] == [r["id"] for r in theirs] or _ties_only(rows, distances, ids, theirs), \
            (question, [(ids[r], d) for r, d in zip(rows, distances)], [(r["id"], r["_distance"]) for r in theirs])
        assert np.allclose(distances, [r["_distance"] for r in theirs], atol=1e-5)


def _ties_only(rows, distances, ids, theirs) -> bool:
    """The lists differ only in the order of rows at equal distance (float rounding), and at
    the cut only by rows as far as the last one."""
    mine = [(ids[r], d) for r, d in zip(rows.tolist(), distances.tolist())]
    last = theirs[-1]["_distance"]
    differ = {i for i, _ in mine} ^ {r["id"] for r in theirs}
    far = {i: d for i, d in mine} | {r["id"]: r["_distance"] for r in theirs}
    return all(abs(far[i] - last) < 1e-5 for i in differ) and all(
        abs(d - r["_distance"]) < 1e-5 for (_, d), r in zip(mine, theirs))


def test_the_full_text_lists_are_lancedbs_but_for_near_ties(conversation):
    """The same analyzer and BM25 formula as LanceDB's index: the lists hold the same rows
    (measured: the share of LanceDB's top 50 also in ours), the best row agrees."""
    paths, index, table, questions, _ = conversation
    ids = ItemStore(paths).items()["id"].to_list()
    shared, firsts = [], []
    for question in questions:
        rows, scores = index.matching(question, TOP)
        theirs = [r["id"] for r in fts_list(table, question, limit=TOP, where=None)]
        mine = [ids[r] for r in rows]
        assert len(mine) == len(theirs)  # both find every row holding a query term, up to TOP
        if theirs:
            shared.append(len(set(mine) & set(theirs)) / len(theirs))
            firsts.append(mine[0] == theirs[0])
        assert list(scores) == sorted(scores, reverse=True)
    assert np.mean(shared) >= 0.95 and min(shared) >= 0.8, (np.mean(shared), min(shared))
    assert np.mean(firsts) >= 0.85, np.mean(firsts)


def test_a_filtered_search_keeps_only_the_rows_the_mask_holds(conversation):
    paths, index, _, questions, embedder = conversation
    mask = np.zeros(index.rows, dtype=bool)
    mask[::7] = True
    vector = embedder.embed_one(questions[0])
    rows, _ = index.nearest(vector, TOP, mask)
    assert len(rows) == TOP and mask[rows].all()
    everything, distances = index.nearest(vector, index.rows)
    assert rows.tolist() == [r for r in everything.tolist() if mask[r]][:TOP]  # exact: the best masked rows
    text_rows, _ = index.matching("Caroline support group", TOP, mask)
    assert len(text_rows) and mask[text_rows].all()
    assert index.nearest(vector, TOP, np.zeros(index.rows, dtype=bool))[0].size == 0


def test_the_index_answers_only_for_its_rows_and_its_model(conversation):
    paths, index, _, _, embedder = conversation
    ids = ItemStore(paths).items()["id"].to_list()
    with pytest.raises(IndexUnusable, match="other rows"):
        ReadIndex.open(index.folder, ids=list(reversed(ids)), model=embedder.model_id)
    with pytest.raises(IndexUnusable, match="queries of openai:text-embedding-3-small"):
        ReadIndex.open(index.folder, ids=ids, model="openai:text-embedding-3-small")
    assert np.allclose(index.vectors([0, 5]), embedder.embed(ItemStore(paths).items()["content"].to_list()[:6])[[0, 5]],
                       atol=1e-5)


def test_a_reader_falls_back_to_lancedb_when_the_index_is_not_of_its_snapshot(conversation, tmp_path):
    """A snapshot rewritten under the index (an erasure's rewrite of an old version) is
    searched through LanceDB: each hit its own row, never the one the stale index would
    name, and the same best answer (the two full-text indexes differ only near ties)."""
    import shutil

    paths, _, _, questions, _ = conversation
    copy = DataRoot.resolve(tmp_path / "data")
    shutil.copytree(paths.root, copy.root)
    items = ItemStore(copy).items()
    items.reverse().write_parquet(published.items_file(copy))
    reader = MemoryClient(copy.root)
    assert reader.stores.read_index() is None
    indexed = MemoryClient(paths.root)
    assert indexed.stores.read_index() is not None
    content = dict(zip(items["id"].to_list(), items["content"].to_list()))
    for question in questions[:10]:
        fallback, fast = reader.search(question, k=5, now=NOW), indexed.search(question, k=5, now=NOW)
        assert all(h.content == content[h.id] for h in fallback)  # each id with its own row
        assert fallback[0].id == fast[0].id and len({h.id for h in fallback} & {h.id for h in fast}) >= 3


def test_above_exact_rows_an_hnsw_graph_keeps_the_exact_rows(tmp_path, monkeypatch):
    """The same build over ``EXACT_ROWS`` rows becomes an HNSW graph: its top 50 holds at
    least 95 % of the exact top 50 (clustered vectors, as sentence embeddings are)."""
    monkeypatch.setattr(read_index, "EXACT_ROWS", 1_000)
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((40, 384)).astype(np.float32)
    vectors = centres[rng.integers(0, 40, 6_000)] + 0.6 * rng.standard_normal((6_000, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = [f"v{i}" for i in range(len(vectors))]
    manifest = read_index.build(tmp_path / "hnsw", ids, vectors, ["word"] * len(ids), ["local:m"])
    assert not manifest.exact
    graph = ReadIndex.open(tmp_path / "hnsw", ids=ids, model="local:m")
    recalls = []
    for query in vectors[rng.integers(0, len(vectors), 30)] + 0.05:
        query /= np.linalg.norm(query)
        exact = set(np.argsort(-(vectors @ query))[:TOP].tolist())
        rows, _ = graph.nearest(query, TOP)
        recalls.append(len(exact & set(rows.tolist())) / TOP)
    assert np.mean(recalls) >= 0.95, np.mean(recalls)


def test_the_analyzer_reads_words_as_lancedbs_full_text_index_does():
    assert analyze("The Running dogs, and the café's 3 cats!") == ["run", "dog", "cafe", "3", "cat"]
    assert analyze("snake_case x" + "y" * 45) == ["snake", "case"]  # "_" splits; a 46-byte token is dropped
    assert analyze("When did you just go? Could you?") == ["go", "could"]  # NLTK's stop words, as LanceDB's
    assert analyze("") == []
