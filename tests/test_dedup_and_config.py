"""Dedup merges instead of dropping; config overrides reach the scoring; embeddings are real."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import polars as pl
import pytest

from memory_assets.lib.items import dedup
from memory_assets.lib.items.consolidation import consolidate, facts_to_items
from retrieval import scoring
from retrieval.config import ConfigError, load_config
from retrieval.embeddings import Embedder
from retrieval.ids import content_hash
from retrieval.schema import FACT_SCHEMA
from tests.factories import fact

T0 = datetime(2026, 9, 1, tzinfo=timezone.utc)


def _fact(fid: str, content: str, *, hint: str | None = None, turns: list[str] | None = None, **overrides) -> dict:
    return fact(fid, content, at=overrides.pop("at", T0), session="s", turns=turns or [f"t-{fid}"],
                supersedes_hint=hint, **overrides)

@pytest.fixture(scope="module")
def embedder():
    return Embedder(load_config())


def test_content_hash_ignores_case_spacing_and_edge_punctuation():
    assert content_hash("Aaron drives a WRX.") == content_hash("  aaron   drives a wrx ")
    assert content_hash("Aaron drives a WRX") != content_hash("Aaron drives a BRZ")


def test_semantic_duplicates_merge_keeping_the_fresher_wording(embedder):
    facts = pl.DataFrame([
        _fact("old", "Aaron drives a 2019 Subaru WRX", turns=["D1:1"]),
        _fact("new", "Aaron drives a Subaru WRX from 2019", at=T0 + timedelta(days=3), turns=["D4:2"]),
        _fact("other", "Aaron is allergic to penicillin", category="health"),
    ], schema=FACT_SCHEMA)
    result = consolidate(facts, None, {}, embedder, load_config(), T0 + timedelta(days=4))
    items = result.items
    assert items.height == 2
    kept = items.filter(pl.col("id") == "new").row(0, named=True)
    assert kept["content"] == "Aaron drives a Subaru WRX from 2019"
    assert kept["confidence"] == pytest.approx(0.95)
    assert set(kept["source_turn_ids"]) == {"D1:1", "D4:2"} and kept["merged_from"] == ["old"]
    assert [(m.kept_id, m.merged_id) for m in result.merges] == [("new", "old")]
    assert result.merges[0].similarity > 0.85


def test_a_stated_change_of_a_value_is_a_successor_never_a_duplicate(embedder):
    """"Aisha does her long run on Sundays" and, weeks later, "… on Saturdays now" read alike
    enough to merge; folded together, the old value would vanish instead of being dated as
    replaced. The same words restated ("… on Sundays now") still merge."""
    def run(later: str, value: str) -> list:
        facts = pl.DataFrame([
            fact("old", "Aisha does her long run on Sundays", session="s1", value="long run on Sundays"),
            fact("new", later, at=T0 + timedelta(days=21), session="s2", value=value, states_change=True),
        ], schema=FACT_SCHEMA)
        vectors = embedder.embed(facts["content"].to_list())
        assert float(vectors[0] @ vectors[1]) > load_config().dedup.semantic_threshold  # alike enough to merge
        return consolidate(facts, None, {}, embedder, load_config(), T0 + timedelta(days=22)).merges

    assert run("Aisha does her long run on Saturdays now", "long run on Saturdays") == []
    assert [(m.kept_id, m.merged_id) for m in run("Aisha does her long run on Sundays now", "long run on Sundays")] \
        == [("new", "old")]


def test_a_cluster_merges_into_one_survivor_once(embedder):
    """Three wordings of one fact: one survivor with every source, +bonus per item folded."""
    facts = pl.DataFrame([
        _fact("a", "Aaron drives a 2019 Subaru WRX", turns=["D1:1"], confidence=0.7),
        _fact("b", "Aaron drives a Subaru WRX from 2019", at=T0 + timedelta(days=1), turns=["D2:1"]),
        _fact("c", "Aaron's car is a 2019 Subaru WRX", at=T0 + timedelta(days=2), turns=["D3:1"], confidence=0.8),
    ], schema=FACT_SCHEMA)
    first = consolidate(facts, None, {}, embedder, load_config(), T0 + timedelta(days=3))
    assert first.items.height == 1 and len(first.merges) == 2
    kept = first.items.row(0, named=True)
    assert kept["id"] == "c" and sorted(kept["merged_from"]) == ["a", "b"]
    assert set(kept["source_turn_ids"]) == {"D1:1", "D2:1", "D3:1"}
    assert kept["confidence"] == pytest.approx(0.9 + 2 * load_config().confidence.merge_bonus)


def test_an_earlier_merge_is_refolded_without_being_found_again(embedder):
    """The next run rebuilds items from every fact: merged facts fold back into their
    survivor (same row, no new merge logged), and only new facts are compared."""
    facts = pl.DataFrame([
        _fact("old", "Aaron drives a 2019 Subaru WRX", turns=["D1:1"]),
        _fact("new", "Aaron drives a Subaru WRX from 2019", at=T0 + timedelta(days=3), turns=["D4:2"]),
    ], schema=FACT_SCHEMA)
    now = T0 + timedelta(days=4)
    first = consolidate(facts, None, {}, embedder, load_config(), now)
    known = dict(zip(first.items["content_hash"].to_list(), first.vectors))
    more = pl.concat([facts, pl.DataFrame([
        _fact("again", "Aaron drives a 2019 Subaru WRX car", at=T0 + timedelta(days=5), turns=["D6:1"]),
    ], schema=FACT_SCHEMA)])
    second = consolidate(more, first.items, known, embedder, load_config(), now + timedelta(days=2))
    assert [(m.kept_id, m.merged_id) for m in second.merges] == [("again", "new")]
    survivor = second.items.row(0, named=True)
    assert second.items.height == 1 and sorted(survivor["merged_from"]) == ["new", "old"]
    assert set(survivor["source_turn_ids"]) == {"D1:1", "D4:2", "D6:1"}
    same = consolidate(facts, first.items, known, embedder, load_config(), now)
    assert same.merges == [] and same.items.drop("updated_at").equals(first.items.drop("updated_at"))
    assert same.embedded == 0  # the merged wording needs no vector of its own


def test_duplicates_in_different_namespaces_stay_apart(embedder):
    facts = pl.DataFrame([
        _fact("a", "Aaron drives a 2019 Subaru WRX", namespace="agent-a"),
        _fact("b", "Aaron drives a 2019 Subaru WRX", namespace="agent-b"),
    ], schema=FACT_SCHEMA)
    assert consolidate(facts, None, {}, embedder, load_config(), T0).items.height == 2


def test_unchanged_text_is_never_embedded_twice(embedder):
    facts = pl.DataFrame([_fact("a", "Aaron drives a 2019 Subaru WRX")], schema=FACT_SCHEMA)
    first = consolidate(facts, None, {}, embedder, load_config(), T0)
    known = {first.items["content_hash"][0]: first.vectors[0]}
    second = consolidate(facts, first.items, known, embedder, load_config(), T0)
    assert first.embedded == 1 and second.embedded == 0


def test_hinted_fact_supersedes_the_older_item_that_mentions_the_hint(embedder):
    facts = pl.DataFrame([
        _fact("old", "Priya likes black for formatting", category="preferences"),
        _fact("mid", "Priya runs the billing service", at=T0 + timedelta(days=1), category="work"),
        _fact("new", "Priya switched from black to ruff format", at=T0 + timedelta(days=7),
              hint="black", category="preferences"),
    ], schema=FACT_SCHEMA)
    items = consolidate(facts, None, {}, embedder, load_config(), T0 + timedelta(days=8)).items
    status = dict(zip(items["id"], items["status"]))
    assert status == {"old": "superseded", "mid": "active", "new": "active"}
    assert items.filter(pl.col("id") == "new")["supersedes"][0] == "old"


def test_embeddings_are_unit_vectors_of_the_local_model(embedder):
    vectors = embedder.embed(["Aaron drives a WRX", "Caroline went to a support group"])
    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.model_id == "local:all-MiniLM-L6-v2"


def test_a_query_is_embedded_with_the_configured_threads_and_the_same_vector(embedder):
    import numpy as np
    import torch

    question = "When is the WRX oil change due?"
    threads = load_config().embedding.idle_query_threads
    # ONNX Runtime (the default): a query alone runs on a session of its own with
    # idle_query_threads threads, and gives the vector a batch on every core gives.
    one = embedder.embed_one(question)
    assert threads in embedder._onnx()._sessions
    batch = embedder.embed([question] + [f"filler sentence {n}" for n in range(9)])  # over a small batch
    assert 0 in embedder._onnx()._sessions
    assert np.allclose(one, batch[0], atol=1e-5)
    # torch: the thread count (query_threads: torch's pool is the process's, so a query
    # never takes the idle threads there) is set for the query and restored after it.
    config = load_config()
    on_torch = Embedder(config.model_copy(update={"embedding": config.embedding.model_copy(update={"runtime": "torch"})}))
    before = torch.get_num_threads()
    seen = []
    real = on_torch.embed
    on_torch.embed = lambda texts: (seen.append(torch.get_num_threads()), real(texts))[1]
    try:
        alone = on_torch.embed_one(question)
    finally:
        del on_torch.embed
    assert seen == [load_config().embedding.query_threads] and torch.get_num_threads() == before
    assert np.allclose(alone, on_torch.embed([question])[0], atol=1e-5)
    assert float(alone @ one) >= 0.999


def test_openai_embeddings_are_used_when_configured(tmp_path, fake_openai):
    override = tmp_path / "memory.toml"
    override.write_text('[embedding]\nprovider = "openai"\nopenai_model = "text-embedding-3-small"\n')
    vectors = Embedder(load_config(override)).embed(["one", "two"])
    assert vectors.shape == (2, 1536)
    assert fake_openai.requests[-1]["model"] == "text-embedding-3-small"


def test_config_override_changes_the_category_weight(tmp_path, monkeypatch):
    override = tmp_path / "memory.toml"
    override.write_text("[categories.vehicle]\nweight = 0.4\n")
    monkeypatch.setenv("MEMORY_CONFIG", str(override))
    config = load_config()
    assert config.category("vehicle").weight == 0.4
    assert config.category("vehicle").ttl_days == 365  # untouched keys keep their defaults
    assert scoring.base_importance(config, "vehicle") == 0.4


@pytest.mark.parametrize("category, flags, trust, expected", [
    ("incident", {}, "trusted", 0.9),
    ("vehicle", {"remember": True}, "trusted", 1.0),
    ("preferences", {"action_required": True}, "trusted", 0.75),
    ("casual", {}, "trusted", 0.3),
    ("incident", {}, "untrusted", 0.45),
    ("vehicle", {"remember": True, "action_required": True}, "untrusted", 0.5),
])
def test_base_importance_follows_the_design_rules(category, flags, trust, expected):
    assert scoring.base_importance(load_config(), category, source_trust=trust, **flags) == pytest.approx(expected)


def test_a_broken_config_file_names_itself(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[categories\nweight = ")
    with pytest.raises(ConfigError, match="bad.toml"):
        load_config(bad)


def test_fresh_items_start_active_and_unreferenced():
    items = facts_to_items(pl.DataFrame([_fact("a", "Aaron drives a WRX")], schema=FACT_SCHEMA), T0)
    row = items.row(0, named=True)
    assert row["status"] == "active" and row["reference_count"] == 0 and row["promoted"] is False


def test_a_query_alone_takes_the_idle_threads_and_two_at_once_take_query_threads(embedder, monkeypatch):
    """Two queries embedded at once in a process (a service's two requests) take
    ``query_threads`` each instead of every core each: the second one starts while the
    first is being embedded."""
    import threading

    import numpy as np

    config = load_config().embedding
    assert config.idle_query_threads != config.query_threads  # else this test shows nothing
    encoder = embedder._onnx()
    real, seen, second = encoder.encode, [], {}

    def encode(texts, threads=1):
        seen.append(threads)
        if len(seen) == 1:
            worker = threading.Thread(target=lambda: second.update(v=embedder.embed_one("Who is Arjun?")))
            worker.start()
            worker.join()
        return real(texts, threads=threads)

    monkeypatch.setattr(encoder, "encode", encode)
    first = embedder.embed_one("When is the WRX oil change due?")
    assert seen == [config.idle_query_threads, config.query_threads]
    monkeypatch.setattr(encoder, "encode", real)
    assert np.allclose(first, embedder.embed_one("When is the WRX oil change due?"), atol=1e-5)
    assert np.allclose(second["v"], embedder.embed(["Who is Arjun?"])[0], atol=1e-5)
