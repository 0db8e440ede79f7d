"""The nightly bench's input: extracted facts and the turns they cite, and feedback events.

FACT_SCHEMA rows in sessions of 20, as extraction writes them, from ``synthetic_items``'
sentences; about 2% of them a fact restated in a later session and 1% carrying a
``supersedes`` hint. Tonight's facts and a few hundred events are what the nightly job
folds in.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import polars as pl

from evals.bench.synthetic import BENCH_NOW, synthetic_items
from retrieval.config import MemoryConfig
from retrieval.moments import parse_utc
from retrieval.paths import DataRoot

# The first build runs as of BENCH_NOW; the nightly run at 02:00 the next night.
NIGHT = (BENCH_NOW + timedelta(days=1)).replace(hour=2, minute=0)
HISTORY_DAYS = 365          # first-build sessions are spread over the year before BENCH_NOW
FACTS_PER_SESSION = 20
REPEAT_SHARE = 0.02         # a fact restated in a later session (exact duplicate, confirms it)
HINT_SHARE = 0.01           # a fact that says it replaces an older one (supersedes hint)
NEW_REPEAT_SHARE = 0.05     # of tonight's new facts: restating an older fact
NEW_HINT_SHARE = 0.03       # of tonight's new facts: replacing an older one
EVENT_MIX = (("injected", 0.6), ("referenced", 0.14), ("ignored", 0.14), ("reinforce", 0.07),
             ("demote", 0.03), ("update", 0.01), ("forget", 0.01))
_HINT_WORD = re.compile(r"^[a-z][a-z'-]{3,}$")


@dataclass
class Batch:
    """Facts and the turns they cite, ready to be written one file per session."""

    facts: pl.DataFrame
    resources: pl.DataFrame
    repeats: int = 0
    hints: int = 0

    @property
    def sessions(self) -> int:
        return self.facts["source_session"].n_unique() if self.facts.height else 0


def _hint(content: str, rng: random.Random) -> str | None:
    """A word the older fact states as a common word (what a "no longer X" would name)."""
    from memory_assets.lib.items.supersession import hint_words

    tokens = content.split()
    words = [t.strip(".,'") for i, t in enumerate(tokens) if i > 0 and _HINT_WORD.match(t.strip(".,"))]
    words = [w for w in words if hint_words(w)]
    return rng.choice(words) if words else None


def _sessions(rows: list[dict[str, Any]], first: int, start: datetime, end: datetime, prefix: str,
              config: MemoryConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Give ``rows`` (fact attributes) sessions, turns, timestamps, ids and resources."""
    from memory_assets.lib.ingest.turns import resource_id
    from memory_assets.lib.extraction.facts import fact_id

    namespace = config.default_namespace
    n_sessions = max(1, -(-len(rows) // FACTS_PER_SESSION))
    span = (end - start) / n_sessions
    facts, resources = [], []
    ingested = end
    for index, row in enumerate(rows):
        s, position = divmod(index, FACTS_PER_SESSION)
        session = f"{prefix}{first + s:06d}"
        started = start + span * s
        user_at = started + timedelta(minutes=2 * position)
        untrusted = row["source_trust"] == "untrusted"
        user = {"session_id": session, "turn": 2 * position + 1, "role": "tool" if untrusted else "user",
                "speaker": "tool" if untrusted else "Dana", "ts": user_at.isoformat(),
                "content": f"[UNTRUSTED DATA]{row['content']}[/UNTRUSTED DATA]" if untrusted
                else f"Just so you know: {row['content']}."}
        reply = {"session_id": session, "turn": 2 * position + 2, "role": "assistant", "speaker": "assistant",
                 "ts": (user_at + timedelta(minutes=1)).isoformat(), "content": "Noted, I'll remember that."}
        for message in (user, reply):
            resources.append({
                "resource_id": resource_id(message), "session_id": session, "turn": message["turn"],
                "external_id": None, "role": message["role"], "speaker": message["speaker"],
                "content": message["content"], "content_at": parse_utc(message["ts"]),
                "trust": "untrusted" if message["role"] == "tool" else "trusted", "source_format": "jsonl",
                "source_file": f"{session}.jsonl", "ingested_at": ingested,
            })
        facts.append({**row, "id": fact_id(namespace, session, row["content_hash"]), "source_session": session,
                      "source_resource_ids": [resources[-2]["resource_id"]],
                      "source_turn_ids": [f"{session}:{user['turn']}"], "created_at": user_at})
    return facts, resources


def _frames(facts: list[dict[str, Any]], resources: list[dict[str, Any]]) -> tuple[pl.DataFrame, pl.DataFrame]:
    from memory_assets.lib.extraction.fields import with_fields
    from retrieval.schema import FACT_SCHEMA, RESOURCE_SCHEMA

    # The typed fields as extraction writes them (directive, remind_on), so the run never
    # takes the facts for ones written before the fields existed.
    return with_fields(pl.DataFrame(facts, schema=FACT_SCHEMA)), pl.DataFrame(resources, schema=RESOURCE_SCHEMA)


def synthetic_batches(n_facts: int, *, config: MemoryConfig, new_share: float = 0.01,
                      seed: int = 0) -> tuple[Batch, Batch]:
    """(the first build's facts, tonight's new facts), FACT_SCHEMA rows with their resources.

    The sentences come from ``synthetic.synthetic_items`` (same seed, same texts, so
    its cached model vectors apply). First build: ``n_facts`` facts in sessions spread
    over the year before ``BENCH_NOW``, ``REPEAT_SHARE`` of them restating a fact of an
    earlier session and ``HINT_SHARE`` with a supersedes hint naming a word of an older
    fact in their category. Tonight: ``new_share × n_facts`` facts in new sessions dated
    between ``BENCH_NOW`` and ``NIGHT``, some restating or replacing older facts.
    """
    rng = random.Random(f"nightly-{seed}")
    n_new = max(1, round(n_facts * new_share)) if new_share > 0 else 0
    first_repeats = int(n_facts * REPEAT_SHARE) if n_facts >= 2 * FACTS_PER_SESSION else 0
    new_repeats = int(n_new * NEW_REPEAT_SHARE)
    n_distinct = n_facts + n_new  # enough even when no restatement fits
    keep = [c for c in ("content", "category", "kind", "memory_kind", "tags", "entities", "importance",
                        "confidence", "strength", "sentiment", "tier", "scope", "project", "namespace", "source_trust",
                        "provenance", "content_hash")]
    distinct = synthetic_items(n_distinct, seed=seed, config=config).select(keep).to_dicts()
    for row in distinct:
        row.update(supersedes_hint=None, prompt_version="bench", extractor="synthetic")
    pool = iter(distinct)

    def assemble(total: int, repeats: int, hint_share: float,
                 earlier: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int, int]:
        """``total`` rows in session order; a restated fact comes from an earlier session
        (``earlier``, or this batch's previous sessions), never twice in one session."""
        repeat_at = set(rng.sample(range(total), repeats)) if repeats else set()
        rows: list[dict[str, Any]] = []
        hints = restated = 0
        by_category: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in earlier:
            by_category[row["category"]].append(row)
        in_session: set[str] = set()
        for i in range(total):
            if i % FACTS_PER_SESSION == 0:
                in_session = set()
                if not earlier and i:  # the batch's previous session is now "earlier"
                    for r in rows[i - FACTS_PER_SESSION:i]:
                        by_category[r["category"]].append(r)
            source, limit = (earlier, len(earlier)) if earlier else (rows, i - i % FACTS_PER_SESSION)
            if i in repeat_at and limit:
                row = dict(source[rng.randrange(limit)])
                if row["content_hash"] not in in_session:
                    row["supersedes_hint"] = None
                    rows.append(row)
                    in_session.add(row["content_hash"])
                    restated += 1
                    continue
            row = dict(next(pool))
            older = by_category.get(row["category"])
            if older and rng.random() < hint_share and (word := _hint(rng.choice(older)["content"], rng)):
                row["supersedes_hint"] = word
                hints += 1
            rows.append(row)
            in_session.add(row["content_hash"])
        return rows, restated, hints

    first_rows, first_rep, first_hints = assemble(n_facts, first_repeats, HINT_SHARE, [])
    first_facts, first_res = _sessions(first_rows, 0, BENCH_NOW - timedelta(days=HISTORY_DAYS),
                                       BENCH_NOW - timedelta(hours=1), "bench-s", config)
    new_rows, new_rep, new_hints = assemble(n_new, new_repeats, NEW_HINT_SHARE, first_rows) if n_new else ([], 0, 0)
    new_facts, new_res = _sessions(new_rows, 0, BENCH_NOW + timedelta(hours=1), NIGHT - timedelta(hours=1),
                                   "bench-night-s", config) if new_rows else ([], [])
    return (Batch(*_frames(first_facts, first_res), repeats=first_rep, hints=first_hints),
            Batch(*_frames(new_facts, new_res), repeats=new_rep, hints=new_hints))


def write_batch(paths: DataRoot, batch: Batch) -> int:
    """One extracted-facts file and one resources part per session, as the pipeline writes them."""
    from memory_assets.lib import warehouse

    resources = batch.resources.partition_by("session_id", as_dict=True)
    for (session,), facts in batch.facts.partition_by("source_session", as_dict=True).items():
        warehouse.write_frame(paths.extracted_facts / f"{session}.parquet", facts)
        turns = resources[(session,)]
        digest = hashlib.sha256("".join(turns["resource_id"].to_list()).encode()).hexdigest()[:16]
        warehouse.write_frame(paths.resources / session / f"part-{digest}.parquet", turns)
    return len(resources)


def write_events(paths: DataRoot, n_events: int, *, seed: int, start: datetime, end: datetime,
                 config: MemoryConfig) -> dict[str, int]:
    """``n_events`` feedback events on published items, as ``MemoryClient`` appends them
    (payloads redacted of ``config``'s PII kinds)."""
    from retrieval import events
    from retrieval.credentials import pii_from_config
    from retrieval.store import ItemStore

    items = ItemStore(paths).items().filter(pl.col("status") == "active").select("id", "content", "tags")
    if items.is_empty() or n_events <= 0:
        return {}
    rng = random.Random(f"events-{seed}")
    ids = items["id"].to_list()
    contents = dict(zip(ids, items["content"].to_list()))
    kinds, weights = zip(*EVENT_MIX)
    counts: dict[str, int] = defaultdict(int)
    pii = pii_from_config(config)
    for n in range(n_events):
        kind = rng.choices(kinds, weights)[0]
        ts = start + (end - start) * (n + 1) / (n_events + 1)
        session = f"agent-{n // 10:04d}"
        if kind == "injected":
            chosen = rng.sample(ids, min(len(ids), rng.randint(3, 10)))
        elif kind in ("referenced", "ignored"):
            chosen = rng.sample(ids, min(len(ids), rng.randint(1, 3)))
        else:
            chosen = [rng.choice(ids)]
        payload = None
        if kind == "update":
            payload = {"content": f"{contents[chosen[0]]} (corrected by the user)", "tags": None}
        events.record(paths.events, kind, chosen, ts, session_id=None if kind in ("reinforce", "demote", "update", "forget")
                      else session, payload=payload, pii=pii)
        counts[kind] += 1
    return dict(sorted(counts.items()))
