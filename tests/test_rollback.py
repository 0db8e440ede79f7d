"""Rollback re-points the agent at an earlier published version; nothing is rewritten."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import polars as pl
import pytest

from memory_assets.cli import main
from memory_assets.lib.items import publish
from retrieval.ids import content_hash
from memory_assets.lib.items.consolidation import facts_to_items
from retrieval import MemoryClient
from retrieval.config import load_config
from retrieval.embeddings import Embedder
from retrieval.paths import DataRoot
from retrieval.schema import FACT_SCHEMA, ITEM_SCHEMA

NOW = datetime(2026, 10, 1, tzinfo=timezone.utc)


def _version(paths: DataRoot, contents: list[str], at: datetime) -> publish.ItemsVersion:
    facts = pl.DataFrame([{
        "id": content_hash(c)[:12], "content": c, "category": "vehicle", "kind": "fact", "memory_kind": "note",
        "tags": [], "entities": [], "importance": 0.8, "confidence": 0.9, "strength": "explicit",
        "sentiment": "neutral", "tier": "standard", "scope": "global", "namespace": "default",
        "source_trust": "trusted", "provenance": "user_stated", "source_session": "s", "source_resource_ids": ["r"],
        "source_turn_ids": ["t"], "supersedes_hint": None, "content_hash": content_hash(c), "created_at": at,
        "prompt_version": "t", "extractor": "offline"} for c in contents], schema=FACT_SCHEMA)
    items = facts_to_items(facts, at).with_columns(embedding_model=pl.lit("local:all-MiniLM-L6-v2")).select(list(ITEM_SCHEMA))
    return publish.write_items(paths, items, Embedder(load_config()).embed(contents), at)


def test_rollback_serves_the_earlier_version_again(tmp_path, capsys):
    paths = DataRoot.resolve(tmp_path / "data")
    first = _version(paths, ["Aaron drives a 2019 Subaru WRX"], NOW)
    publish.publish(paths, first)
    second = _version(paths, ["Aaron drives a 2024 Toyota GR86"], NOW + timedelta(days=1))
    publish.publish(paths, second)
    assert MemoryClient(paths.root).search("what car does Aaron drive", k=1)[0].content.endswith("GR86")

    assert main(["--data-root", str(paths.root), "rollback"]) == 0
    assert f"published version is now {first.version}" in capsys.readouterr().out
    assert MemoryClient(paths.root).search("what car does Aaron drive", k=1)[0].content.endswith("WRX")
    assert MemoryClient(paths.root).store.items()["content"].to_list() == ["Aaron drives a 2019 Subaru WRX"]

    publish.rollback(paths, to_version=second.version)
    assert MemoryClient(paths.root).search("what car does Aaron drive", k=1)[0].content.endswith("GR86")
    with pytest.raises(publish.RollbackError, match="never published"):
        publish.rollback(paths, to_version=999)
