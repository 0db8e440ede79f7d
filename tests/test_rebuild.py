"""The items build is one pure function: frames in, frames out, no data root."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import polars as pl

from memory_assets.lib.extraction.facts import build_facts
from memory_assets.lib.extraction.offline import OfflineExtractor
from memory_assets.lib.items.rebuild import rebuild_items
from memory_assets.lib.lifecycle.sweeps import Sweep
from retrieval.config import load_config
from retrieval.embeddings import Embedder
from retrieval.schema import RESOURCE_SCHEMA, Turn

CONFIG = load_config()
SAID = datetime(2026, 1, 5, 9, tzinfo=timezone.utc)


def _facts() -> tuple[pl.DataFrame, pl.DataFrame]:
    turns = [Turn(session_id="s1", turn=1, role="user", content="I drive a 2019 Subaru WRX. My physio is tomorrow.",
                  content_at=SAID, speaker="Dana", trust="trusted", external_id=None, resource_id="r1")]
    facts = build_facts(OfflineExtractor(CONFIG).extract(turns).candidates, turns, CONFIG, session_id="s1",
                        extractor="offline", prompt_version="t", now=SAID).facts
    resources = pl.DataFrame([{"resource_id": "r1", "session_id": "s1", "turn": 1, "role": "user", "speaker": "Dana",
                               "content": turns[0].content, "content_at": SAID, "trust": "trusted"}],
                             schema={k: RESOURCE_SCHEMA[k] for k in ("resource_id", "session_id", "turn", "role",
                                                                     "speaker", "content", "content_at", "trust")})
    return facts, resources


def test_rebuild_items_takes_frames_and_a_clock_and_applies_the_pending_sweeps(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a stray write would land here
    facts, resources = _facts()
    embedder = Embedder(CONFIG)
    first = rebuild_items(facts, None, None, [], dict, embedder, resources, CONFIG, SAID + timedelta(hours=1))
    assert first.items.height == facts.height == first.vectors.shape[0] == first.search_text.len()
    wrx = first.items.filter(pl.col("content").str.contains("WRX")).row(0, named=True)
    # The physio fact carries the day it points to (a forward trigger reads it).
    physio = first.items.filter(pl.col("content").str.contains("physio")).row(0, named=True)
    assert physio["remind_on"] == [(SAID + timedelta(days=1)).date()]

    def never() -> dict:
        raise AssertionError("a monthly refresh embeds everything again: stored vectors are not read")

    later = SAID + timedelta(days=200)
    cold = Sweep("cold", later.isoformat(), (wrx["id"],), "cold-x.json")
    again = rebuild_items(facts, first.items, None, [cold], never, embedder, resources, CONFIG, later)
    statuses = dict(again.items.select("id", "status").iter_rows())
    assert statuses[wrx["id"]] == "cold" and again.report.counts["cold"] == 1
    assert again.consolidated.embedded == facts.height  # every item embedded again
    assert list(tmp_path.iterdir()) == []
