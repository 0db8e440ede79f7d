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

import hashlib
import re
from functools import lru_cache
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import polars as pl

from memory_assets.lib.extraction.structure import normal
from retrieval.config import MemoryConfig
from retrieval.schema import EDGE_SCHEMA, ENTITY_SCHEMA
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


# "Aaron's car is a 2019 Subaru WRX", "the WRX is my car", "Aaron calls his car the Beast":
# the session says a thing someone has and a name are one.
_POSSESSOR = r"(?:\b[\w'-]+'s|\b(?:my|his|her|their|our))"


def _stated_aliases(rows: list[dict], names: dict[str, dict[str, dict]]) -> list[tuple[str, str, str]]:
    """(namespace, concept key, name key) for every active item that says a possessed
    thing ("Aaron's car") is a name of the same namespace ("Subaru WRX")."""
    found = []
    for row in rows:
        if row["status"] != "active":
            continue
        ns, content = row["namespace"], row.get("content") or ""
        known = names.get(ns, {})
        keys = {normal(e): e for e in row.get("entities") or [] if normal(e)}
        concepts = [k for k in keys if known.get(k, {}).get("kind") == "concept"]
        proper = [k for k in keys if known.get(k, {}).get("kind") == "name"]
        if not concepts or not proper or not _SAYS.search(content):
            continue
        for c in concepts:
            for n in proper:
                if _said(keys[c], keys[n]).search(content):
                    found.append((ns, c, n))
    return found


# What every pattern of ``_said`` needs somewhere in the text: most items have none of it,
# and compiling a pattern per pair of entities per item was a quarter of the nightly's
# items step.
_SAYS = re.compile(rf"{_POSSESSOR}.*\b(?:is|was|has been)\b|\b(?:is|was)\s+{_POSSESSOR}|\bcalls?\s+{_POSSESSOR}",
                   re.IGNORECASE | re.DOTALL)


@lru_cache(maxsize=4096)
def _said(concept: str, name: str) -> re.Pattern[str]:
    """"Aaron's car is a 2019 Subaru WRX", "the WRX is my car", "Aaron calls his car the Beast"."""
    cw, nw = re.escape(concept), re.escape(name)
    return re.compile("|".join((
        rf"{_POSSESSOR}\s+{cw}s?\s+(?:is|was|has been)\s+(?:a|an|the)?\s*(?:\d{{4}}\s+)?{nw}\b",
        rf"\b{nw}\s+(?:is|was)\s+{_POSSESSOR}\s+{cw}\b",
        rf"\bcalls?\s+{_POSSESSOR}\s+{cw}\s+(?:the\s+)?{nw}\b")), re.IGNORECASE)


def _aliases(names: dict[str, dict], vectors: np.ndarray, floor: float) -> dict[str, tuple[str, float]]:
    """key → (canonical key, similarity) for the names of one namespace that merge."""
    proper = [k for k, v in names.items() if v["kind"] == "name"]
    merged: dict[str, tuple[str, float]] = {}
    for short in proper:
        longs = [k for k in proper if _short_form(short, k)]
        if len(longs) != 1:
            continue  # "John" of "John Smith" and "John Doe": ambiguous, left alone
        long = longs[0]
        a, b = names[short]["rows"], names[long]["rows"]
        ca, cb = vectors[a].mean(axis=0), vectors[b].mean(axis=0)
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


@spanned("graph: build")
def build_graph(items: pl.DataFrame, vectors: np.ndarray, events: pl.DataFrame | None,
                config: MemoryConfig, now: datetime) -> Graph:
    """The entities and edges of ``items`` (row-aligned with ``vectors``) as of ``now``."""
    cols = ("id", "namespace", "content", "entities", "status", "confidence", "subject", "relation", "value",
            "created_at", "supersedes", "contradicts", "source_resource_ids")
    rows = items.select([c for c in cols if c in items.columns]).to_dicts() if items.height else []
    # 1. names per namespace, with the rows that mention them
    names: dict[str, dict[str, dict]] = defaultdict(dict)
    for i, row in enumerate(rows):
        if row["status"] not in IN_GRAPH:
            continue
        for name in row.get("entities") or []:
            key = normal(name)
            if not key:
                continue
            entry = names[row["namespace"]].setdefault(key, {"surface": defaultdict(int), "rows": [], "kind": "concept"})
            entry["surface"][name] += 1
            entry["rows"].append(i)
            if _kind(name) == "name":  # written as a name once: a name
                entry["kind"] = "name"
    # 2. aliases, then one node per canonical name
    merges: list[dict] = []
    canonical: dict[tuple[str, str], str] = {}
    for namespace, by_key in names.items():
        for short, (long, similarity) in _aliases(by_key, vectors, config.graph.alias_min_similarity).items():
            canonical[(namespace, short)] = long
            merges.append({"namespace": namespace, "alias": max(by_key[short]["surface"], key=by_key[short]["surface"].get),
                           "into": max(by_key[long]["surface"], key=by_key[long]["surface"].get),
                           "similarity": round(similarity, 3), "reason": "short form"})
    stated: dict[tuple[str, str], set[str]] = defaultdict(set)
    for namespace, concept, name in _stated_aliases(rows, names):
        stated[(namespace, concept)].add(name)
    for (namespace, concept), said in sorted(stated.items()):
        if (namespace, concept) in canonical or len(said) != 1:
            continue  # "my car is a WRX" and "Dana's car is a Tesla": which car is meant is unclear
        name = next(iter(said))
        target = canonical.get((namespace, name), name)
        canonical[(namespace, concept)] = target
        by_key = names[namespace]
        merges.append({"namespace": namespace, "alias": max(by_key[concept]["surface"], key=by_key[concept]["surface"].get),
                       "into": max(by_key[target]["surface"], key=by_key[target]["surface"].get),
                       "similarity": None, "reason": "stated"})

    def node(namespace: str, name: str) -> str | None:
        key = normal(name)
        if not key or key not in names.get(namespace, {}):
            return None
        return entity_id(namespace, canonical.get((namespace, key), key))

    entities: dict[str, dict] = {}
    for namespace, by_key in names.items():
        for key, entry in by_key.items():
            target = canonical.get((namespace, key), key)
            eid = entity_id(namespace, target)
            main = names[namespace][target]
            ent = entities.setdefault(eid, {
                "id": eid, "name": max(main["surface"], key=main["surface"].get), "aliases": [],
                "kind": main["kind"], "namespace": namespace, "facts": 0, "status": "archived",
                "first_seen_at": None, "updated_at": None, "_rows": set()})
            if target != key:
                ent["aliases"].append(max(entry["surface"], key=entry["surface"].get))
            ent["_rows"].update(entry["rows"])
    for ent in entities.values():
        members = [rows[i] for i in ent.pop("_rows")]
        ent["facts"] = sum(1 for r in members if r["status"] == "active")
        ent["status"] = "active" if ent["facts"] else "archived"
        ent["first_seen_at"] = min(r["created_at"] for r in members)
        ent["updated_at"] = max(r["created_at"] for r in members)
        ent["aliases"] = sorted(set(ent["aliases"]))

    # 3. edges
    edges: list[dict] = []
    relations: dict[tuple[str, str, str, str], list[tuple[datetime, float]]] = defaultdict(list)
    for row in rows:
        if row["status"] not in IN_GRAPH:
            continue
        ns, item, when, confidence = row["namespace"], row["id"], row["created_at"], float(row["confidence"])
        mentioned = {}
        for name in row.get("entities") or []:
            eid = node(ns, name)
            if eid and eid not in mentioned:
                mentioned[eid] = name
                edges.append(_edge(item, eid, "mentions", None, ns, 1.0, confidence, when, when))
        for resource in row.get("source_resource_ids") or []:
            edges.append(_edge(item, resource, "derived_from", None, ns, 1.0, 1.0, when, when))
        if row.get("supersedes"):
            edges.append(_edge(item, row["supersedes"], "supersedes", None, ns, 1.0, 1.0, when, when))
        for other in row.get("contradicts") or []:
            edges.append(_edge(item, other, "contradicts", None, ns, 1.0, confidence, when, when))
        # subject → value: "Nate has a pet turtle" joins Nate and turtle.
        if row["status"] == "active" and row.get("relation") and len(mentioned) > 1:
            subject, value = (row.get("subject") or "").lower(), (row.get("value") or "").lower()
            sources = [e for e, n in mentioned.items() if n.lower() in subject] if subject else []
            targets = [e for e, n in mentioned.items() if n.lower() in value and e not in sources] if value else []
            for s in sources[:1]:
                for t in targets:
                    relations[(s, t, row["relation"], ns)].append((when, confidence))
    for (s, t, relation, ns), seen in relations.items():
        confidence, first, last = _decayed(seen, config, now)
        if confidence >= config.graph.edge_floor:
            edges.append(_edge(s, t, "relation", relation, ns, float(len(seen)), confidence, first, last))
    edges.extend(_co_recall(events, {r["id"]: r["namespace"] for r in rows if r["status"] in IN_GRAPH}, config, now))
    frame = pl.DataFrame(edges, schema=EDGE_SCHEMA) if edges else pl.DataFrame(schema=EDGE_SCHEMA)
    entity_frame = (pl.DataFrame(list(entities.values()), schema=ENTITY_SCHEMA) if entities
                    else pl.DataFrame(schema=ENTITY_SCHEMA))
    return Graph(entity_frame.sort("namespace", "name"), frame, merges)


def _edge(source: str, target: str, kind: str, relation: str | None, namespace: str, weight: float,
          confidence: float, created_at: datetime, reinforced_at: datetime) -> dict:
    return {"source": source, "target": target, "kind": kind, "relation": relation, "namespace": namespace,
            "weight": weight, "confidence": confidence, "created_at": created_at, "last_reinforced_at": reinforced_at}


def _co_recall(events: pl.DataFrame | None, live: dict[str, str], config: MemoryConfig, now: datetime) -> list[dict]:
    """relates_to edges: items used together in one reply (a ``referenced`` event naming
    two or more items), reinforced each time, decayed since, pruned below the floor."""
    if events is None or events.is_empty():
        return []
    used = events.filter((pl.col("type") == "referenced") & (pl.col("item_ids").list.len() > 1))
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
    return out
