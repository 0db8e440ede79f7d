"""The export format: a memory that moves between data roots (``memory export`` / ``memory import``).

``agent-memory-export``, version 1: UTF-8 JSON Lines, one JSON object per line.

* **Line 1, the header**: ``{"format": "agent-memory-export", "version": 1,
  "exported_at": ISO-8601, "namespace": the one exported or null for all,
  "counts": {"item": n, "entity": n, "edge": n}, "embedding_model": the model of the
  vectors, or null when they are not included}``.
* **Then one record per line**, each with a ``type``:

  - ``item``: every column of the published items (``retrieval.schema.ITEM_SCHEMA``):
    ``id``, ``content``, ``category``, ``kind``, ``tags``, ``entities``, the scores,
    ``status`` (every status: active, candidate, superseded, archived, cold),
    ``provenance``, ``session_id``, ``source_resource_ids`` and ``source_turn_ids`` (the
    turns it came from), validity (``valid_from``, ``invalid_at``), ``supersedes`` /
    ``superseded_by``, feedback counters, ``created_at`` / ``updated_at`` /
    ``first_seen_at``, ``scope`` and ``project`` (a ``project``-scoped item names its
    project; a global one has none) …; times are ISO-8601 with an offset, days ``YYYY-MM-DD``; with
    ``--embeddings`` also ``embedding``: the item's vector, a list of floats. A **purged**
    item (the user said forget, or it decayed away) is its audit row only: id, status,
    times, provenance and sources, with its content and everything read from it
    (``CONTENT_FIELDS``) null, so a forgotten memory never travels.
  - ``entity`` and ``edge``: the published graph (``ENTITY_SCHEMA``, ``EDGE_SCHEMA``), for
    readers of the file; an import rebuilds the graph from the items.

An item record without an ``id`` is a *new memory*, not an item yet: only ``content`` is
required, with ``tags``, ``category`` hints, ``provenance`` (``migration`` for
``memory import --from-markdown``), ``created_at``, ``namespace``, ``project`` (said
about that project: scoped to it when it is about its work, as a remembered memory is),
``session_id`` and ``source_turn_ids`` optional; the import passes it through the write
gate like an extracted fact. Unknown fields are an error (a typo is not silently dropped). Every
string is redacted for credentials on the way out and again on the way in.

Reading (``parse``) names each bad line with its file and line and keeps the rest; a
file whose first line is not a version-1 header is refused whole.

The format is the kernel's: ``memory export`` / ``memory import`` (``memory_assets.cli.portable``),
the import step (``memory_assets.lib.items.imports``) and the service's ``/v1/export`` and
``/v1/import`` (``retrieval.service.exports``) all read and write it through this module.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator, model_validator

from retrieval.config import MemoryConfig
from retrieval.credentials import pii_from_config, redact
from retrieval.moments import utc
from retrieval.paths import DataRoot, location
from retrieval.projects import check_project
from retrieval.schema import (EDGE_KINDS, EDGE_SCHEMA, ENTITY_SCHEMA, ITEM_REQUIRED, ITEM_SCHEMA, KINDS, PROVENANCE,
                              SCOPES, SENTIMENTS, STATUSES, STRENGTHS, TIERS, TRUST)
from retrieval.store import ItemStore

FORMAT = "agent-memory-export"
VERSION = 1
# What a purged item's audit row leaves out: its words and everything read from them.
CONTENT_FIELDS = ("content", "content_hash", "subject", "subject_key", "relation", "value", "directive",
                  "reported_by", "steps", "prerequisites", "warnings", "trigger_patterns", "entities", "tags",
                  "remind_on")
_VOCABULARIES = {"status": STATUSES, "kind": KINDS, "tier": TIERS, "strength": STRENGTHS, "sentiment": SENTIMENTS,
                 "scope": SCOPES, "source_trust": TRUST, "provenance": PROVENANCE}


class ExportFormatError(ValueError):
    """A problem with an export file a user can fix: ``file line N: what is wrong``."""

    def __init__(self, path: Path | str, line: int | None, message: str):
        self.path, self.line, self.message = str(path), line, message
        super().__init__(f"{self.path} line {line}: {message}" if line else f"{self.path}: {message}")


# --- the records ---------------------------------------------------------------------------


def _python_type(dtype: pl.DataType) -> Any:
    """The Python type a JSON value of a published column is read as."""
    if isinstance(dtype, pl.List):
        return list[_python_type(dtype.inner)]  # type: ignore[misc]
    if isinstance(dtype, pl.Datetime):
        return datetime
    if isinstance(dtype, pl.Date):
        return date
    if isinstance(dtype, pl.Float64):
        return float
    if isinstance(dtype, pl.Int64):
        return int
    if isinstance(dtype, pl.Boolean):
        return bool
    return str


def _fields(schema: dict[str, pl.DataType]) -> dict[str, Any]:
    """Every published column as an optional field: the rules below say what is required."""
    return {name: (_python_type(dtype) | None, None) for name, dtype in schema.items()}


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _utc(cls, value: Any) -> Any:
        # A time without an offset is UTC, as in transcripts.
        return utc(value) if isinstance(value, datetime) else value


class ExportHeader(_Record):
    format: Literal["agent-memory-export"]
    version: int
    exported_at: datetime
    namespace: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    embedding_model: str | None = None


class _ItemRules(_Record):
    type: Literal["item"]
    embedding: list[float] | None = None

    @model_validator(mode="after")
    def _valid(self) -> "_ItemRules":
        values = self.model_dump()
        for column, allowed in _VOCABULARIES.items():
            if values.get(column) is not None and values[column] not in allowed:
                raise ValueError(f'"{column}" is {values[column]!r}; expected one of {", ".join(allowed)}')
        for column in ("importance", "confidence"):
            if values.get(column) is not None and not 0.0 <= values[column] <= 1.0:
                raise ValueError(f'"{column}" is {values[column]}; expected 0..1')
        if values.get("project") is not None:
            check_project(values["project"])
        if values.get("id") is not None and (values.get("scope") == "project") != (values.get("project") is not None):
            raise ValueError('a "project"-scoped item names its "project", and only such an item has one')
        if values.get("id") is None or values.get("status") == "purged":
            required: tuple[str, ...] = ("content",) if values.get("id") is None else ("id", "status", "created_at")
        else:  # an item is adopted as it is: it must already be whole (the blocking checks' fields)
            required = (*(c for c in ITEM_REQUIRED if c != "content_hash"), "namespace", "source_resource_ids")
        missing = [c for c in required if values.get(c) in (None, "", [])]
        if missing:
            raise ValueError(f"missing {', '.join(repr(c) for c in missing)}")
        return self


ItemRecord = create_model("ItemRecord", __base__=_ItemRules, **_fields(ITEM_SCHEMA))


class _EntityRules(_Record):
    type: Literal["entity"]

    @model_validator(mode="after")
    def _valid(self) -> "_EntityRules":
        if not getattr(self, "id", None) or not getattr(self, "name", None):
            raise ValueError('an entity needs "id" and "name"')
        return self


class _EdgeRules(_Record):
    type: Literal["edge"]

    @model_validator(mode="after")
    def _valid(self) -> "_EdgeRules":
        if not getattr(self, "source", None) or not getattr(self, "target", None):
            raise ValueError('an edge needs "source" and "target"')
        if getattr(self, "kind", None) not in EDGE_KINDS:
            raise ValueError(f'"kind" is {getattr(self, "kind", None)!r}; expected one of {", ".join(EDGE_KINDS)}')
        return self


EntityRecord = create_model("EntityRecord", __base__=_EntityRules, **_fields(ENTITY_SCHEMA))
EdgeRecord = create_model("EdgeRecord", __base__=_EdgeRules, **_fields(EDGE_SCHEMA))
_RECORDS: dict[str, type[_Record]] = {"item": ItemRecord, "entity": EntityRecord, "edge": EdgeRecord}


@dataclass
class ParsedExport:
    """An export file read and validated: its header, its good records, and each bad line."""

    path: str
    header: ExportHeader
    items: list[Any] = field(default_factory=list)  # ItemRecord
    entities: list[Any] = field(default_factory=list)
    edges: list[Any] = field(default_factory=list)
    errors: list[ExportFormatError] = field(default_factory=list)

    def records(self) -> list[dict[str, Any]]:
        """The header and the item records as JSON values, what an import keeps (the graph
        is rebuilt from the items)."""
        return [self.header.model_dump(mode="json"),
                *(r.model_dump(mode="json", exclude_none=True) for r in self.items)]


def _problem(exc: ValidationError) -> str:
    def one(error: Any) -> str:
        message = error["msg"].removeprefix("Value error, ")
        where = ".".join(str(p) for p in error["loc"])
        return f'"{where}": {message.lower()}' if where else message

    return "; ".join(one(e) for e in exc.errors())


def parse(lines: Iterable[str], where: Path | str) -> ParsedExport:
    """Validate an export's lines (``where`` names the file in errors).

    Raises ``ExportFormatError`` when the first line is not a version-1 header; any other
    bad line is recorded in ``errors`` and skipped.
    """
    numbered = ((n, line.strip()) for n, line in enumerate(lines, start=1))
    numbered = ((n, line.removeprefix("\ufeff")) for n, line in numbered if line.strip())
    first = next(numbered, None)
    if first is None:
        raise ExportFormatError(where, None, "empty file; expected an agent-memory export")
    try:
        header = ExportHeader.model_validate_json(first[1])
    except ValidationError as exc:
        raise ExportFormatError(where, first[0], f'not an {FORMAT} header ({_problem(exc)}); flat-file memories '
                                                 'import with --from-markdown') from None
    if header.version != VERSION:
        raise ExportFormatError(where, first[0], f"format version {header.version}; this reader knows {VERSION}")
    parsed = ParsedExport(str(where), header)
    for number, line in numbered:
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            parsed.errors.append(ExportFormatError(where, number, f"invalid JSON ({exc.msg}, column {exc.colno})"))
            continue
        kind = raw.get("type") if isinstance(raw, dict) else None
        if kind not in _RECORDS:
            parsed.errors.append(ExportFormatError(where, number, f'"type" is {kind!r}; expected item, entity or edge'))
            continue
        try:
            record = _RECORDS[kind].model_validate(raw)
        except ValidationError as exc:
            parsed.errors.append(ExportFormatError(where, number, _problem(exc)))
            continue
        {"item": parsed.items, "entity": parsed.entities, "edge": parsed.edges}[kind].append(record)
    return parsed


def read_export(path: Path) -> ParsedExport:
    """``parse`` a file (a user's file, or one under the data root's ``imports/``, on a
    disk or an object store)."""
    try:
        text = location(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ExportFormatError(path, None, "no such file") from None
    return parse(text.splitlines(), path)


# --- writing an export ---------------------------------------------------------------------


def _json(value: Any) -> Any:
    return value.isoformat() if isinstance(value, (datetime, date)) else str(value)


def _clean(value: Any, pii: tuple[str, ...]) -> Any:
    """Defence in depth: items were redacted at ingest; every string is redacted again."""
    if isinstance(value, str):
        return redact(value, pii=pii)
    if isinstance(value, list):
        return [_clean(v, pii) for v in value]
    return value


def _audit_row(row: dict[str, Any]) -> dict[str, Any]:
    return {k: ([] if isinstance(v, list) else None) if k in CONTENT_FIELDS else v for k, v in row.items()}


def export_lines(paths: DataRoot, config: MemoryConfig, now: datetime, *, namespace: str | None = None,
                 embeddings: bool = False) -> Iterator[str]:
    """The published memory (the version agents read) as export lines, header first.

    Args:
        paths: the data root; only its published items, entities and edges are read
            (purged, archived and cold items are in the published snapshot: the archive
            table is a copy of them).
        config: the config in force (which personal-data kinds to redact).
        now: the export's time, for the header.
        namespace: export this user's or agent's memory only (default: every namespace).
        embeddings: include each item's vector.
    """
    store = ItemStore(paths)
    items = store.items()
    entities, edges = store.graph()
    if namespace is not None:
        items, entities, edges = (f.filter(pl.col("namespace") == namespace) for f in (items, entities, edges))
    vectors = store.vectors_by_hash() if embeddings else {}
    models = sorted(set(items["embedding_model"].drop_nulls().to_list())) if embeddings else []
    pii = pii_from_config(config)
    header = {"format": FORMAT, "version": VERSION, "exported_at": now.isoformat(), "namespace": namespace,
              "counts": {"item": items.height, "entity": entities.height, "edge": edges.height},
              "embedding_model": models[0] if len(models) == 1 else None}
    yield json.dumps(header, ensure_ascii=False)
    for row in items.sort("created_at", "id", nulls_last=True).to_dicts():
        vector = vectors.get(row["content_hash"]) if header["embedding_model"] else None
        record = _audit_row(row) if row["status"] == "purged" else {k: _clean(v, pii) for k, v in row.items()}
        if vector is not None and row["status"] != "purged":
            record["embedding"] = [float(x) for x in vector]
        yield json.dumps({"type": "item", **record}, ensure_ascii=False, default=_json)
    for kind, frame in (("entity", entities), ("edge", edges)):
        for row in frame.to_dicts():
            yield json.dumps({"type": kind, **{k: _clean(v, pii) for k, v in row.items()}},
                             ensure_ascii=False, default=_json)
