"""What an erasure names: the ``erase`` requests, the ids, turns and sessions they
resolve to in every store (ids only, never content), and the audit log (``lib/erasure``)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from memory_assets.lib import warehouse
from retrieval.config import MemoryConfig
from retrieval.moments import parse_utc
from retrieval.paths import DataRoot

ERASED = "[ERASED]"

LOG_SCHEMA: dict[str, pl.DataType] = {
    "request_id": pl.String(),
    "scope": pl.String(),           # "namespace": the row for the request; "item": one per erased item
    "namespace": pl.String(),
    "item_id": pl.String(),
    "requested_at": pl.Datetime("us", "UTC"),
    "erased_at": pl.Datetime("us", "UTC"),
    "reason": pl.String(),
    "requested_by": pl.String(),
}


class ErasureIncomplete(RuntimeError):
    """The published version still holds an erased item: its versions cannot be purged yet."""


# --- requests ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """One ``erase`` event: a whole namespace, or the items it names."""

    id: str
    requested_at: datetime
    namespace: str | None
    item_ids: tuple[str, ...]
    reason: str
    by: str

    @property
    def scope(self) -> str:
        return "namespace" if self.namespace is not None else "item"


def requests(paths: DataRoot) -> list[Request]:
    """Every ``erase`` event on record: waiting in ``events/`` (their file names say the
    type) or folded into the event log (read for that type only: the sensor asks often)."""
    rows: dict[str, dict[str, Any]] = {}
    log = warehouse.files(paths.warehouse / "event_log", "*.parquet")
    if log:
        folded = pl.scan_parquet([str(f) for f in log]).filter(pl.col("type") == "erase")
        for row in folded.select("id", "ts", "item_ids", "payload").collect().iter_rows(named=True):
            rows[row["id"]] = {**row, "payload": json.loads(row["payload"] or "{}")}
    for file in warehouse.files(paths.events, "*-erase-*.json"):
        try:
            raw = json.loads(warehouse.read_bytes(file))
            rows.setdefault(str(raw["id"]), {**raw, "ts": parse_utc(raw["ts"])})
        except (ValueError, KeyError):
            continue  # being written, or not an event: the items build names it
    return sorted((Request(str(r["id"]), r["ts"], (r.get("payload") or {}).get("namespace"),
                           tuple(r.get("item_ids") or ()), str((r.get("payload") or {}).get("reason") or ""),
                           str((r.get("payload") or {}).get("by") or "")) for r in rows.values()),
                  key=lambda r: r.requested_at)


def erasure_log(paths: DataRoot) -> pl.DataFrame:
    """The audit rows of every erasure done (``LOG_SCHEMA``): no content, ever."""
    found = warehouse.read_frames(warehouse.files(paths.erasure_log, "*.parquet"))
    return found if found is not None else pl.DataFrame(schema=LOG_SCHEMA)


def pending(paths: DataRoot) -> list[Request]:
    """The ``erase`` requests not carried out yet."""
    done = set(erasure_log(paths)["request_id"].to_list())
    return [r for r in requests(paths) if r.id not in done]


def manifest_file(paths: DataRoot) -> Path:
    return paths.erasure_log / "pending.json"


# --- what a request names -----------------------------------------------------------------


@dataclass
class Target:
    """What the requests erase, resolved against every store (ids only, never content).

    ``item_ids``: every erased item id, the facts merged into them included; ``resource_ids``:
    the turns a namespace's erasure deletes; ``scrubbed``: the turns an item's erasure
    keeps with their content replaced; ``namespaces``: the namespaces erased whole."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    namespaces: set[str] = field(default_factory=set)
    item_ids: set[str] = field(default_factory=set)
    resource_ids: set[str] = field(default_factory=set)
    scrubbed: set[str] = field(default_factory=set)
    sessions: set[str] = field(default_factory=set)
    owners: dict[str, str] = field(default_factory=dict)
    default_namespace: str = field(kw_only=True)  # the config's (``MemoryConfig.default_namespace``)

    _SETS = ("namespaces", "item_ids", "resource_ids", "scrubbed", "sessions")

    def to_json(self) -> dict[str, Any]:
        return {k: sorted(v) if isinstance(v, set) else v for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> "Target":
        return cls(**{k: set(v) if k in cls._SETS else v for k, v in raw.items()})

    def merge(self, other: "Target") -> "Target":
        known = {r["id"] for r in self.requests}
        return Target(self.requests + [r for r in other.requests if r["id"] not in known],
                      self.namespaces | other.namespaces, self.item_ids | other.item_ids,
                      self.resource_ids | other.resource_ids, self.scrubbed | other.scrubbed,
                      self.sessions | other.sessions, {**self.owners, **other.owners},
                      default_namespace=other.default_namespace)

    def of_namespace(self) -> pl.Expr:
        """Rows of an erased namespace."""
        return of_namespaces(self.namespaces, self.default_namespace)

    def names_namespace(self, namespace: str | None) -> bool:
        return (namespace or self.default_namespace) in self.namespaces


def of_namespaces(namespaces: Iterable[str], default: str) -> pl.Expr:
    """Rows whose ``namespace`` is one of ``namespaces`` (a null one is ``default``)."""
    names = sorted(namespaces)
    expr = pl.col("namespace").is_in(names)
    if default in names:
        expr = expr | pl.col("namespace").is_null()
    return expr.fill_null(False)


def _columns(frame: pl.DataFrame, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    return frame.select([pl.col(c).cast(t) if c in frame.columns else pl.lit(None, dtype=t).alias(c)
                         for c, t in schema.items()])


_ITEM_COLUMNS: dict[str, pl.DataType] = {
    "id": pl.String(), "namespace": pl.String(), "merged_from": pl.List(pl.String()),
    "source_resource_ids": pl.List(pl.String()),
}


def item_files(paths: DataRoot) -> list[Path]:
    # The snapshot a root published before the pointer still holds its items.
    return [paths.items_dir / "items.parquet", *warehouse.files(paths.items_dir / "versions", "*.parquet"),
            paths.archive / "items.parquet"]


def _known_items(paths: DataRoot) -> pl.DataFrame:
    """Every item row ever kept (published, every version, the archive) and every fact:
    the ids, namespaces, merges and sources an erasure resolves against."""
    frames = [_columns(f, _ITEM_COLUMNS) for f in (warehouse.read_frame(p) for p in item_files(paths)) if f is not None]
    frames.append(_columns(warehouse.read_facts(paths), _ITEM_COLUMNS))
    return pl.concat(frames).unique() if frames else pl.DataFrame(schema=_ITEM_COLUMNS)


def resolve(paths: DataRoot, asked: Iterable[Request], config: MemoryConfig) -> Target:
    """The ids, turns and sessions ``asked`` erases."""
    target = Target(default_namespace=config.default_namespace)
    known = _known_items(paths)
    resources = warehouse.read_resources(paths).select("resource_id", "session_id", "namespace")
    for request in asked:
        if request.namespace is not None:
            target.namespaces.add(request.namespace)
            rows = known.filter(of_namespaces([request.namespace], target.default_namespace))
        else:
            rows = known.filter(pl.col("id").is_in(list(request.item_ids)))
            # The facts merged into an item are its words too.
            merged = set(rows["merged_from"].explode().drop_nulls().to_list())
            rows = pl.concat([rows, known.filter(pl.col("id").is_in(list(merged)))]).unique()
            target.scrubbed.update(rows["source_resource_ids"].explode().drop_nulls().to_list())
        ids = set(request.item_ids) | set(rows["id"].to_list()) | set(rows["merged_from"].explode().drop_nulls().to_list())
        owners = dict(rows.select("id", "namespace").iter_rows())
        target.item_ids |= ids
        target.owners.update({i: owners.get(i) or request.namespace or target.default_namespace for i in ids})
        target.requests.append({"id": request.id, "requested_at": request.requested_at.isoformat(),
                                "namespace": request.namespace, "item_ids": sorted(ids), "reason": request.reason,
                                "by": request.by})
    if target.namespaces:
        removed = resources.filter(target.of_namespace())
        target.resource_ids |= set(removed["resource_id"].to_list())
        target.sessions |= set(removed["session_id"].to_list())
    target.scrubbed -= target.resource_ids
    return target


# --- helpers both steps use ----------------------------------------------------------


def erased_item(target: Target) -> pl.Expr:
    return pl.col("id").is_in(sorted(target.item_ids)) | target.of_namespace()


def names_any(column: str, ids: set[str]) -> pl.Expr:
    return pl.col(column).list.eval(pl.element().is_in(sorted(ids))).list.any().fill_null(False)


def drop_rows(files: Iterable[Path], erased: pl.Expr) -> int:
    """Drop the rows ``erased`` picks from each Parquet file; returns how many went."""
    gone = 0
    for file in files:
        frame = warehouse.read_frame(file)
        if frame is None or frame.is_empty():
            continue
        try:
            kept = frame.filter(~erased)
        except pl.exceptions.ColumnNotFoundError:
            continue  # a file older than the column: it cannot name what is erased
        if kept.height != frame.height:
            warehouse.write_frame(file, kept)
            gone += frame.height - kept.height
    return gone
