"""The graph published with the items: entities (who and what the memory is about) and
the edges between items and entities.

Built from the items every run, as a pure function, so a version's graph is exactly its
items': ``build_graph(items, vectors, events, config, now)``.

- **Entities** are the names and concepts facts mention (``entities``, read from the parse
  at extraction), one node per namespace and normal form. **Aliases merge** ("Mel" into
  "Melanie") when one name is the short form of exactly one other (a prefix of its first
  word, its first word alone, or its last word: "WRX" of "Subaru WRX") and the facts
  mentioning each are alike (the centroids of their vectors at ``[graph]
  alias_min_similarity`` or more); and a thing someone has merges into a name when a
  fact says they are one ("Aaron's car is a Subaru WRX", "the WRX is my car"), so "my
  car" finds the WRX's facts. Every merge is logged, with its reason.
- **Edges**: ``mentions`` (item → entity), ``relation`` (subject entity → value entity,
  with the item's relation), ``supersedes`` and ``contradicts`` (item → item),
  ``derived_from`` (item → the resources it came from) and ``relates_to`` (item ↔ item,
  used together in one reply: koshi's Hebbian links, fed by ``record_response``'s
  ``referenced`` events).
- **Confidence** of a ``relation`` or ``relates_to`` edge starts at its first observation's
  confidence, gains ``[graph] reinforce_step`` each time it is seen again, decays by
  ``edge_decay_per_night`` for every night since it was last seen, and the edge is pruned
  below ``edge_floor``. Replaying the observations each run keeps it deterministic: the
  same items and events give the same graph whatever ran before. ``mentions`` edges carry
  their item's confidence (the item decays itself).
"""

from __future__ import annotations

import bisect
import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import polars as pl

from memory_assets.lib.extraction.fields import SAME_AS
from memory_assets.lib.extraction.structure import normal
from retrieval.config import MemoryConfig
from retrieval.schema import EDGE_SCHEMA, ENTITY_SCHEMA, ITEM_SCHEMA
from retrieval.spans import spanned

# Items that still count in the graph (a purged item has left the memory).
IN_GRAPH = ("active", "candidate", "superseded", "archived", "cold")


@dataclass
class Graph:
    entities: pl.DataFrame
    edges: pl.DataFrame
    merges: list[dict] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        by_kind = dict(self.edges.group_by("kind").len().iter_rows()) if self.edges.height else {}
        return {"entities": self.entities.height,
                "active_entities": int((self.entities["status"] == "active").sum()) if self.entities.height else 0,
                "edges": self.edges.height, **{f"edges_{k}": int(v) for k, v in sorted(by_kind.items())},
                "aliases_merged": len(self.merges)}


def entity_id(namespace: str, key: str) -> str:
    return "e:" + hashlib.sha256(f"{namespace}|{key}".encode()).hexdigest()[:16]


def _kind(name: str) -> str:
    return "name" if name[:1].isupper() or any(c.isdigit() for c in name) else "concept"


def _short_form(short: str, long: str) -> bool:
    """"Mel" of "Melanie", "Caroline" of "Caroline Smith": a prefix of the long name's
    first word; "WRX" of "Subaru WRX": the long name's last word."""
    if short == long or " " in short or len(short) < 3:
        return False
    words = long.split()
    return words[0].startswith(short) and (short != words[0] or len(words) > 1) or (len(words) > 1 and short == words[-1])


def _stated_aliases(rows: Iterable[tuple[str, list[str] | None]],
                    kinds: dict[tuple[str, str], str]) -> list[tuple[str, str, str]]:
    """(namespace, concept key, name key) for every active item (its namespace and its
    ``same_as`` field in ``rows``, read at extraction) that says a possessed thing ("Aaron's
    car") is a name of the same namespace ("Subaru WRX"); ``kinds``: (namespace, key) →
    "name" or "concept"."""
    found = []
    for ns, pairs in rows:
        for pair in pairs or ():
            concept, _, name = (normal(x) for x in pair.partition(SAME_AS))
            if kinds.get((ns, concept)) == "concept" and kinds.get((ns, name)) == "name":
                found.append((ns, concept, name))
    return found


def _aliases(proper: list[str], rows_of: Callable[[list[str]], dict[str, list[int]]], vectors: np.ndarray,
             floor: float) -> dict[str, tuple[str, float]]:
    """key → (canonical key, similarity) for the proper names of one namespace (``proper``,
    in the order first mentioned) that merge; ``rows_of`` gives the rows mentioning each
    of some keys (once per mention)."""
    # A short form is a prefix of a longer name's first word, or its last word: looked up
    # in the sorted first words and by last word, not against every other name.
    firsts = sorted((k.split()[0], k) for k in proper)
    first_words = [w for w, _k in firsts]
    by_last: dict[str, list[str]] = defaultdict(list)
    for k in proper:
        words = k.split()
        if len(words) > 1:
            by_last[words[-1]].append(k)
    pairs: dict[str, str] = {}
    for short in proper:
        candidates = set(by_last.get(short, ()))
        at = bisect.bisect_left(first_words, short)
        while at < len(firsts) and first_words[at].startswith(short):
            candidates.add(firsts[at][1])
            at += 1
        longs = [k for k in candidates if _short_form(short, k)]
        if len(longs) == 1:  # "John" of "John Smith" and "John Doe": ambiguous, left alone
            pairs[short] = longs[0]
    if not pairs:
        return {}
    rows = rows_of(sorted({*pairs, *pairs.values()}))
    merged: dict[str, tuple[str, float]] = {}
    for short, long in pairs.items():
        ca, cb = vectors[rows[short]].mean(axis=0), vectors[rows[long]].mean(axis=0)
        similarity = float(ca @ cb / (np.linalg.norm(ca) * np.linalg.norm(cb) + 1e-9))
        if similarity >= floor:
            merged[short] = (long, similarity)
    return merged


def _decayed(observations: list[tuple[datetime, float]], config: MemoryConfig, now: datetime) -> tuple[float, datetime, datetime]:
    """(confidence now, first seen, last reinforced) from (when, confidence) observations."""
    g = config.graph
    observations.sort(key=lambda o: o[0])
    first, confidence = observations[0]
    last = first
    for when, _c in observations[1:]:
        nights = max((when - last).days, 0)
        confidence = min(1.0, confidence * g.edge_decay_per_night ** nights + g.reinforce_step)
        last = when
    nights = max((now - last).days, 0)
    return confidence * g.edge_decay_per_night ** nights, first, last


# What the graph reads of an item (a frame without one of them reads it as nulls).
_COLUMNS = ("id", "namespace", "same_as", "entities", "status", "confidence", "subject", "relation", "value",
            "created_at", "supersedes", "contradicts", "source_resource_ids")


def _graph_rows(items: pl.DataFrame) -> pl.DataFrame:
    """The items that count in the graph, the columns it reads, and ``row``: each one's
    position in ``items`` (its vector's)."""
    present = [pl.col(c) if c in items.columns else pl.lit(None, dtype=ITEM_SCHEMA[c]).alias(c) for c in _COLUMNS]
    return (items.select(present).with_row_index("row")
            .filter(pl.col("status").is_in(list(IN_GRAPH))).with_columns(pl.col("confidence").cast(pl.Float64)))


def _mentions(rows: pl.DataFrame) -> pl.DataFrame:
    """One row per entity an item names, in the items' order: the item's row, id,
    namespace, status, confidence and created_at, the ``name`` as written, its ``key``
    (normal form), whether it is written as a proper name, and ``pos``, its order."""
    mentions = (rows.select("row", "id", "namespace", "status", "confidence", "created_at",
                            pl.col("entities").alias("name"))
                .explode("name").drop_nulls("name").with_row_index("pos"))
    written = mentions["name"].unique().to_list()
    keys = {name: normal(name) for name in written}
    proper = [name for name in written if _kind(name) == "name"]
    return mentions.with_columns(
        key=pl.col("name").replace_strict(keys, return_dtype=pl.String),
        proper=pl.col("name").is_in(proper),
    ).filter(pl.col("key").is_not_null())


def _names(mentions: pl.DataFrame) -> dict[str, dict[str, dict]]:
    """namespace → key → {"kind", "surface" (the most written form; a tie, the first)},
    namespaces and keys in the order first mentioned."""
    surfaces = (mentions.group_by("namespace", "key", "name").agg(count=pl.len(), first=pl.col("pos").min())
                .sort(["count", "first"], descending=[True, False])
                .group_by("namespace", "key", maintain_order=True).agg(surface=pl.col("name").first()))
    keys = (mentions.group_by("namespace", "key").agg(first=pl.col("pos").min(), proper=pl.col("proper").any())
            .join(surfaces, on=["namespace", "key"]).sort("first"))
    names: dict[str, dict[str, dict]] = defaultdict(dict)
    for namespace, key, proper, surface in keys.select("namespace", "key", "proper", "surface").iter_rows():
        names[namespace][key] = {"kind": "name" if proper else "concept", "surface": surface}
    return names


@spanned("graph: build")
def build_graph(items: pl.DataFrame, vectors: np.ndarray, events: pl.DataFrame | None,
                config: MemoryConfig, now: datetime) -> Graph:
    """The entities and edges of ``items`` (row-aligned with ``vectors``) as of ``now``.

    Works in columns: a million items are never a million dicts, only the names (one
    per entity) and the items with a relation between two of their entities are Python
    objects."""
    rows = _graph_rows(items)
    mentions = _mentions(rows)
    # 1. names per namespace
    names = _names(mentions)
    kinds = {(ns, key): entry["kind"] for ns, by_key in names.items() for key, entry in by_key.items()}
    # 2. aliases, then one node per canonical name
    merges: list[dict] = []
    canonical: dict[tuple[str, str], str] = {}
    for namespace, by_key in names.items():
        def rows_of(keys: list[str], namespace: str = namespace) -> dict[str, list[int]]:
            found = (mentions.filter((pl.col("namespace") == namespace) & pl.col("key").is_in(keys))
                     .group_by("key", maintain_order=True).agg(pl.col("row")))
            return dict(found.iter_rows())

        proper = [k for k, v in by_key.items() if v["kind"] == "name"]
        for short, (long, similarity) in _aliases(proper, rows_of, vectors, config.graph.alias_min_similarity).items():
            canonical[(namespace, short)] = long
            merges.append({"namespace": namespace, "alias": by_key[short]["surface"], "into": by_key[long]["surface"],
                           "similarity": round(similarity, 3), "reason": "short form"})
    stated: dict[tuple[str, str], set[str]] = defaultdict(set)
    saying = rows.filter((pl.col("status") == "active") & (pl.col("same_as").list.len() > 0))
    for namespace, concept, name in _stated_aliases(saying.select("namespace", "same_as").iter_rows(), kinds):
        stated[(namespace, concept)].add(name)
    for (namespace, concept), said in sorted(stated.items()):
        if (namespace, concept) in canonical or len(said) != 1:
            continue  # "my car is a WRX" and "Dana's car is a Tesla": which car is meant is unclear
        name = next(iter(said))
        target = canonical.get((namespace, name), name)
        canonical[(namespace, concept)] = target
        by_key = names[namespace]
        merges.append({"namespace": namespace, "alias": by_key[concept]["surface"], "into": by_key[target]["surface"],
                       "similarity": None, "reason": "stated"})

    nodes = pl.DataFrame(
        [(ns, key, entity_id(ns, canonical.get((ns, key), key))) for ns, by_key in names.items() for key in by_key],
        schema={"namespace": pl.String, "key": pl.String, "entity": pl.String}, orient="row")
    mentions = mentions.join(nodes, on=["namespace", "key"], how="left", maintain_order="left")
    entities = _entities(names, canonical, mentions)

    # 3. edges
    edges = [_item_edges(rows, mentions), _relations(rows, mentions, config, now),
             _co_recall(events, rows, config, now)]
    return Graph(entities, pl.concat([e for e in edges if e.height] or [pl.DataFrame(schema=EDGE_SCHEMA)]), merges)


def _entities(names: dict[str, dict[str, dict]], canonical: dict[tuple[str, str], str],
              mentions: pl.DataFrame) -> pl.DataFrame:
    """One node per canonical name: its most written form, the forms merged into it, and
    the items mentioning any of them (``facts``: the active ones; first and last seen)."""
    meta: dict[str, dict] = {}
    for namespace, by_key in names.items():
        for key, entry in by_key.items():
            target = canonical.get((namespace, key), key)
            eid = entity_id(namespace, target)
            main = by_key[target]
            node = meta.setdefault(eid, {"id": eid, "name": main["surface"], "aliases": set(), "kind": main["kind"],
                                         "namespace": namespace})
            if target != key:
                node["aliases"].add(entry["surface"])
    if not meta:
        return pl.DataFrame(schema=ENTITY_SCHEMA)
    frame = pl.DataFrame([{**m, "aliases": sorted(m["aliases"])} for m in meta.values()],
                         schema={c: ENTITY_SCHEMA[c] for c in ("id", "name", "aliases", "kind", "namespace")})
    seen = (mentions.select("entity", "row", "status", "created_at").unique(["entity", "row"])
            .group_by("entity").agg(facts=(pl.col("status") == "active").sum().cast(pl.Int64),
                                    first_seen_at=pl.col("created_at").min(), updated_at=pl.col("created_at").max()))
    frame = frame.join(seen, left_on="id", right_on="entity", how="left").with_columns(
        status=pl.when(pl.col("facts") > 0).then(pl.lit("active")).otherwise(pl.lit("archived")))
    return frame.select(list(ENTITY_SCHEMA)).cast(ENTITY_SCHEMA).sort("namespace", "name", maintain_order=True)


def _item_edges(rows: pl.DataFrame, mentions: pl.DataFrame) -> pl.DataFrame:
    """``mentions`` (item → entity, once per entity, with the item's confidence),
    ``derived_from`` (item → each resource), ``supersedes`` and ``contradicts`` (with the
    item's confidence), item by item in that order."""
    def edges(frame: pl.DataFrame, kind: str, rank: int, target: str, confidence: pl.Expr, order: str) -> pl.DataFrame:
        return frame.select(
            pl.col("row"), pl.lit(rank).alias("_rank"), pl.col(order).alias("_order"),
            source=pl.col("id"), target=pl.col(target), kind=pl.lit(kind), relation=pl.lit(None, dtype=pl.String),
            namespace=pl.col("namespace"), weight=pl.lit(1.0), confidence=confidence,
            created_at=pl.col("created_at"), last_reinforced_at=pl.col("created_at"))

    mentioned = mentions.unique(["row", "entity"], keep="first", maintain_order=True)
    listed = rows.select("row", "id", "namespace", "created_at", "confidence", "source_resource_ids", "contradicts")
    derived = (listed.select("row", "id", "namespace", "created_at", pl.col("source_resource_ids").alias("target"))
               .explode("target").with_row_index("_n").drop_nulls("target"))
    contradicts = (listed.select("row", "id", "namespace", "created_at", "confidence",
                                 pl.col("contradicts").alias("target"))
                   .explode("target").with_row_index("_n").drop_nulls("target"))
    supersedes = rows.filter(pl.col("supersedes").is_not_null() & (pl.col("supersedes") != "")).with_columns(_n=pl.lit(0))
    parts = [
        edges(mentioned, "mentions", 0, "entity", pl.col("confidence"), "pos"),
        edges(derived, "derived_from", 1, "target", pl.lit(1.0), "_n"),
        edges(supersedes, "supersedes", 2, "supersedes", pl.lit(1.0), "_n"),
        edges(contradicts, "contradicts", 3, "target", pl.col("confidence"), "_n"),
    ]
    frame = pl.concat([p.cast({"_order": pl.Int64}) for p in parts])
    return frame.sort("row", "_rank", "_order").select(list(EDGE_SCHEMA)).cast(EDGE_SCHEMA)


def _relations(rows: pl.DataFrame, mentions: pl.DataFrame, config: MemoryConfig, now: datetime) -> pl.DataFrame:
    """subject → value: "Nate has a pet turtle" joins Nate and turtle; reinforced each
    time an active item states it again, decayed since, pruned below the floor."""
    stating = rows.filter((pl.col("status") == "active") & pl.col("relation").is_not_null()
                          & (pl.col("relation") != "")).select("row", "namespace", "created_at", "confidence",
                                                               "subject", "relation", "value")
    named = (mentions.filter(pl.col("row").is_in(stating["row"].implode()))
             .unique(["row", "entity"], keep="first", maintain_order=True)
             .group_by("row", maintain_order=True).agg("entity", "name").filter(pl.col("entity").list.len() > 1))
    stating = stating.join(named, on="row", how="inner", maintain_order="left")
    relations: dict[tuple[str, str, str, str], list[tuple[datetime, float]]] = defaultdict(list)
    for _row, ns, when, confidence, subject, relation, value, eids, written in stating.iter_rows():
        subject, value = (subject or "").lower(), (value or "").lower()
        mentioned = list(zip(eids, written))
        sources = [e for e, n in mentioned if n.lower() in subject] if subject else []
        targets = [e for e, n in mentioned if n.lower() in value and e not in sources] if value else []
        for s in sources[:1]:
            for t in targets:
                relations[(s, t, relation, ns)].append((when, float(confidence)))
    out = []
    for (s, t, relation, ns), seen in relations.items():
        confidence, first, last = _decayed(seen, config, now)
        if confidence >= config.graph.edge_floor:
            out.append(_edge(s, t, "relation", relation, ns, float(len(seen)), confidence, first, last))
    return pl.DataFrame(out, schema=EDGE_SCHEMA)


def _edge(source: str, target: str, kind: str, relation: str | None, namespace: str, weight: float,
          confidence: float, created_at: datetime, reinforced_at: datetime) -> dict:
    return {"source": source, "target": target, "kind": kind, "relation": relation, "namespace": namespace,
            "weight": weight, "confidence": confidence, "created_at": created_at, "last_reinforced_at": reinforced_at}


def _co_recall(events: pl.DataFrame | None, rows: pl.DataFrame, config: MemoryConfig, now: datetime) -> pl.DataFrame:
    """relates_to edges: items used together in one reply (a ``referenced`` event naming
    two or more items of ``rows``), reinforced each time, decayed since, pruned below the
    floor."""
    if events is None or events.is_empty():
        return pl.DataFrame(schema=EDGE_SCHEMA)
    used = events.filter((pl.col("type") == "referenced") & (pl.col("item_ids").list.len() > 1))
    named = used.select(pl.col("item_ids").explode().unique())["item_ids"]
    live = dict(rows.filter(pl.col("id").is_in(named.implode())).select("id", "namespace").iter_rows())
    seen: dict[tuple[str, str], list[tuple[datetime, float]]] = defaultdict(list)
    for ids, ts in used.select("item_ids", "ts").iter_rows():
        present = sorted({i for i in ids if i in live})
        for a in range(len(present)):
            for b in range(a + 1, len(present)):
                seen[(present[a], present[b])].append((ts, config.graph.co_recall_confidence))
    out = []
    for (a, b), observations in seen.items():
        if live[a] != live[b]:
            continue
        confidence, first, last = _decayed(observations, config, now)
        if confidence >= config.graph.edge_floor:
            out.append(_edge(a, b, "relates_to", None, live[a], float(len(observations)), confidence, first, last))
    return pl.DataFrame(out, schema=EDGE_SCHEMA)
