"""Imports adopted by the items build: what ``memory import`` appended under ``imports/``.

``memory import`` only validates a file and appends it (the agent side); the
``memory_items`` build is what brings it into the memory (DESIGN principle 1: one writer),
behind the same blocking checks as everything else. Every build reads every import file
again, as it reads every fact again, so an adopted item is rebuilt like any other and a
re-run adopts the same items. Two kinds of record (``retrieval/interchange.py``):

* an **item** of another data root's export is adopted as it was: its id, status,
  validity, supersession links, provenance, sources and feedback counters. Its scores
  come back to their base (``scoring.base_scores`` as of the export's time), so the
  lifecycle decays and confirms it once, not twice. A purged item is an audit row
  without content and is not adopted.
* a **new memory** (no id: a markdown migration) is typed as a direct write is
  (``extraction.direct``) and passes ``build_facts``: the write gate, the credential
  filter and the scoring every extracted fact passes; its refusals are rejections.

A record is a **duplicate**, and skipped, when the memory already holds its id, or its
content hash in its namespace, from a transcript or from an earlier import (files are
taken in the order they were imported); an import never overwrites what is there.
Adoption sticks: an item published from an import stays adopted when a transcript later
states the same words (the build's dedup merges the two, as for any new fact), unless the
transcript's fact is that very item (the same id), which then carries its state on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from memory_assets.lib import lifecycle, warehouse
from memory_assets.lib.extraction import direct
from memory_assets.lib.extraction.facts import build_facts
from memory_assets.lib.extraction.fields import said_fields
from memory_assets.lib.ingest.turns import resource_id
from retrieval.ids import content_hash
from retrieval import interchange, scoring
from retrieval.config import MemoryConfig
from retrieval.paths import DataRoot
from retrieval.schema import FACT_SCHEMA, ITEM_SCHEMA, REJECTION_SCHEMA, Turn

EXTRACTOR = "import"


@dataclass
class Tally:
    """What one import file brought, as of the last build."""

    records: int = 0
    adopted: int = 0
    duplicates: int = 0
    rejected: int = 0   # new memories the write gate refused
    purged: int = 0     # audit rows of purged items: nothing to adopt
    errors: int = 0     # lines that did not validate

    def add(self, other: "Tally") -> None:
        for name, value in dataclasses.asdict(other).items():
            setattr(self, name, getattr(self, name) + value)


@dataclass
class ImportFile:
    name: str
    parsed: interchange.ParsedExport


@dataclass
class Adoption:
    """What the build takes from the imports."""

    items: pl.DataFrame            # exported items adopted as they were (ITEM_SCHEMA, base scores)
    facts: pl.DataFrame            # new memories that passed the gate (FACT_SCHEMA)
    vectors: dict[str, np.ndarray]  # content hash → vector, from exports made with this model
    rejections: dict[str, pl.DataFrame]  # import file name → what the gate refused
    tallies: dict[str, Tally] = field(default_factory=dict)

    @property
    def total(self) -> Tally:
        total = Tally()
        for tally in self.tallies.values():
            total.add(tally)
        return total


def import_files(paths: DataRoot) -> list[Path]:
    """The files under ``imports/``, in the order they were imported (their names start with the time)."""
    return warehouse.files(paths.imports, "*.jsonl")  # type: ignore[return-value]


def read_imports(paths: DataRoot) -> list[ImportFile]:
    """Every import file, parsed; a file whose header does not read is kept with no records
    and its error (``memory import`` validated it: only a hand-placed file can fail)."""
    out = []
    for path in import_files(paths):
        try:
            parsed = interchange.read_export(path)
        except interchange.ExportFormatError as exc:
            header = interchange.ExportHeader(format=interchange.FORMAT, version=interchange.VERSION,
                                              exported_at=datetime.fromtimestamp(0, timezone.utc))
            parsed = interchange.ParsedExport(str(path), header, errors=[exc])
        out.append(ImportFile(path.name, parsed))
    return out


def cited_sources(paths: DataRoot) -> pl.Series:
    """The resource ids imported items cite: the turns of their own data root (kept there) and,
    for a markdown migration, the file's lines (kept in the import file). The items audit
    counts them as stored, so "every memory points back to its sources" still holds."""
    ids: set[str] = set()
    for imported in read_imports(paths):
        ids.update(i for r in imported.parsed.items for i in (r.source_resource_ids or []))
        for session, group in _new_memories(imported).items():
            ids.update(t.resource_id for t in _turns(imported, session, group))
    return pl.Series("resource_id", sorted(ids), dtype=pl.String)


def _new_memories(imported: ImportFile) -> dict[str, list[Any]]:
    """The file's new-memory records (no id), by the session they are filed under."""
    grouped: dict[str, list[Any]] = {}
    default = f"import-{Path(imported.name).stem}"
    for record in imported.parsed.items:
        if record.id is None:
            grouped.setdefault(record.session_id or default, []).append(record)
    return grouped


def _turns(imported: ImportFile, session: str, records: list[Any]) -> list[Turn]:
    """Each new memory as the turn it was said in: its file line is its external id."""
    said = imported.parsed.header.exported_at
    turns = []
    for number, record in enumerate(records, start=1):
        message = {"session_id": session, "turn": number, "role": "user", "speaker": "user",
                   "ts": (record.created_at or said).isoformat(), "content": record.content}
        turns.append(Turn(session_id=session, turn=number, role="user", content=record.content,
                          content_at=record.created_at or said, speaker="user", trust=record.source_trust or "trusted",
                          external_id=(record.source_turn_ids or [None])[0], resource_id=resource_id(message),
                          namespace=record.namespace, source_format=direct.REMEMBERED, project=record.project))
    return turns


def _category_hint(tags: Iterable[str], config: MemoryConfig) -> str | None:
    """The innermost heading that names a configured category ("Preferences", "Vehicle")."""
    for tag in reversed(list(tags)):
        for name in (tag, f"{tag}s", tag.removesuffix("s")):
            if name in config.categories:
                return name
    return None


def _gated(imported: ImportFile, config: MemoryConfig) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The file's new memories through the write gate: (facts, rejections)."""
    facts, rejected = [], []
    for session, records in _new_memories(imported).items():
        turns = _turns(imported, session, records)
        by_turn = {t.turn: r for t, r in zip(turns, records)}
        candidates = []
        for candidate in direct.remembered_candidates(turns, config):
            record = by_turn[candidate.source_turns[0]]
            hint = record.category if record.category in config.categories else \
                _category_hint(record.tags or [], config)
            changed = hint is not None and hint != candidate.category
            candidates.append(dataclasses.replace(
                candidate, provenance=record.provenance or "migration",
                tags=sorted({*candidate.tags, *(record.tags or [])}),
                category=hint if changed else candidate.category, tier=None if changed else candidate.tier))
        gated = build_facts(candidates, turns, config, session_id=session, extractor=EXTRACTOR,
                            prompt_version=f"{interchange.FORMAT}-{interchange.VERSION}",
                            now=imported.parsed.header.exported_at)
        facts.append(gated.facts)
        rejected.append(gated.rejections)
    return (pl.concat(facts) if facts else pl.DataFrame(schema=FACT_SCHEMA),
            pl.concat(rejected) if rejected else pl.DataFrame(schema=REJECTION_SCHEMA))


def _as_item(record: Any, exported_at: datetime, partners: dict[str, str], config: MemoryConfig) -> dict[str, Any]:
    """An exported item as a row of this memory, its scores back at their base."""
    row = {c: getattr(record, c) for c in ITEM_SCHEMA}
    row["content_hash"] = content_hash(row["content"])
    if row["category"] not in config.categories:  # as build_facts files a category this config lacks
        row["category"] = "casual"
    contradicted = any(partners.get(other, "superseded") != "superseded" for other in row["contradicts"] or [])
    row["importance"], row["confidence"] = scoring.base_scores(
        config, row, exported_at, confirmed=lifecycle.confirmed(row), contradicted=contradicted)
    row.update(said_fields(row["content"], row.get("entities")))  # read from its words, as extraction does: never taken from the file
    for column, dtype in ITEM_SCHEMA.items():  # counters and lists an older export left out
        if row[column] is None and isinstance(dtype, pl.List):
            row[column] = []
        elif row[column] is None and column in ("reference_count", "injected_count", "echo_count", "fizzle_count"):
            row[column] = 0
        elif row[column] is None and column in ("reinforcement", "retrieval_priority"):
            row[column] = 0.0
    row["promoted"] = bool(row["promoted"])
    return row


def adopt(files: list[ImportFile], facts: pl.DataFrame, previous: pl.DataFrame | None, config: MemoryConfig,
          model_id: str) -> Adoption:
    """Which import records join the memory, given its facts and the last published items.

    Args:
        files: the import files, in import order (``read_imports``).
        facts: every extracted fact.
        previous: the last published items (an id there that an import brought is kept).
        config: the config in force (gate, categories, scores).
        model_id: the embedder's model; exported vectors of another model are not used.
    """
    previous = previous if previous is not None else pl.DataFrame(schema=ITEM_SCHEMA)
    gated = {f.name: _gated(f, config) for f in files}
    imported_ids = {r.id for f in files for r in f.parsed.items if r.id} | {
        i for new, _ in gated.values() for i in new["id"].to_list()}
    local = previous.filter(~pl.col("id").is_in(list(imported_ids)))
    seen_ids = set(facts["id"].to_list()) | set(local["id"].to_list())
    seen_hashes = {*facts.select("namespace", "content_hash").iter_rows(),
                   *local.select("namespace", "content_hash").iter_rows()}
    published = set(previous["id"].to_list())
    default_namespace = config.default_namespace

    def admit(item_id: str, namespace: str | None, digest: str) -> bool:
        key = (namespace or default_namespace, digest)
        if item_id in seen_ids:  # from a transcript, or an earlier record
            return False
        # Published from an import before: kept, even when a transcript has said the same
        # words since (the build's dedup merges the two).
        if item_id not in published and key in seen_hashes:
            return False
        seen_ids.add(item_id)
        seen_hashes.add(key)
        return True

    rows, new_facts, vectors, rejections, tallies = [], [], {}, {}, {}
    for imported in files:
        parsed, tally = imported.parsed, Tally()
        tally.errors = len(parsed.errors)
        partners = {r.id: r.status for r in parsed.items if r.id}
        usable_vectors = parsed.header.embedding_model == model_id
        for record in parsed.items:
            if record.id is None:
                continue
            tally.records += 1
            if record.status == "purged":
                tally.purged += 1
            elif admit(record.id, record.namespace, content_hash(record.content)):
                tally.adopted += 1
                rows.append(_as_item(record, parsed.header.exported_at, partners, config))
                if usable_vectors and record.embedding:
                    vectors[rows[-1]["content_hash"]] = np.asarray(record.embedding, dtype=np.float32)
            else:
                tally.duplicates += 1
        new, refused = gated[imported.name]
        tally.records += new.height + refused.height
        tally.rejected += refused.height
        keep = [admit(i, n, h) for i, n, h in new.select("id", "namespace", "content_hash").iter_rows()]
        tally.adopted += sum(keep)
        tally.duplicates += len(keep) - sum(keep)
        new_facts.append(new.filter(pl.Series(keep, dtype=pl.Boolean)))
        if refused.height:
            rejections[imported.name] = refused
        tallies[imported.name] = tally
    items = pl.DataFrame(rows, schema=ITEM_SCHEMA) if rows else pl.DataFrame(schema=ITEM_SCHEMA)
    return Adoption(items, pl.concat(new_facts) if new_facts else pl.DataFrame(schema=FACT_SCHEMA), vectors,
                    rejections, tallies)


def write_ledger(paths: DataRoot, adoption: Adoption, version: int, now: datetime) -> None:
    """What this build did with each import file (``memory import`` reports it), and the
    refusals of the write gate among their new memories (beside extraction's)."""
    for name, tally in adoption.tallies.items():
        stem = Path(name).stem
        warehouse.write_json(paths.import_ledger / f"{stem}.json",
                             {**dataclasses.asdict(tally), "staged_version": version, "built_at": now.isoformat()},
                             indent=1)
        if name in adoption.rejections:
            warehouse.write_frame(paths.rejections / f"import-{stem}.parquet", adoption.rejections[name])


def ledger(paths: DataRoot, name: str) -> dict[str, Any] | None:
    """The last build's tally of one import file, or None before a build read it."""
    return warehouse.read_json(paths.import_ledger / f"{Path(name).stem}.json")
