"""Dual search's graph side (ADR-0077): the query's entities start a breadth-first walk.

The published graph (``lib/items/graph.py``: entities, and edges between items and
entities) is held in memory like the items snapshot, reloaded when a publish replaces
it. A query's entities are found by name (each entity's normal name and its aliases, as
the query's words, one to four at a time, singular or plural); from them the walk goes at
most ``[graph] expansion_depth`` hops:

- hop 1: the items that mention a query entity, and the entities a relation edge joins
  to it ("Nate has a turtle": Nate → turtle);
- hop 2: the items that mention those entities, and the items used together with hop-1
  items in one reply (``relates_to``).

Each step multiplies by ``hop_decay`` (0.7) and by the edge's confidence; an item reached
from several query entities adds their scores, so "What animal do both Nate and Joanna
like?" favours what both are joined to. An entity with more than ``max_seed_degree`` facts
(the user themself, in their own memory) is a hub: it joins too much to rank anything,
so it does not spread through its mentions. The item scores become a third list that
``retrieve`` fuses with the vector and full-text lists at ``[graph] weight``.
"""

from __future__ import annotations

import threading

from collections import defaultdict
from pathlib import Path
from typing import Any

import polars as pl

from retrieval.config import MemoryConfig
from retrieval.text import QUERY_STOPWORDS, normal_phrase, tokens

# How far each kind of edge carries the walk, besides its confidence.
KIND_WEIGHT = {"mentions": 1.0, "relation": 1.0, "relates_to": 1.0, "supersedes": 0.5, "contradicts": 0.5}
MAX_NGRAM = 4


def _singular(word: str) -> str | None:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("es") and len(word) > 4 and word[-3] in "sxz":
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return None


class GraphIndex:
    """The published entities and edges, indexed for the walk; reloaded on a new publish."""

    def __init__(self, entities: Path | None = None, edges: Path | None = None):
        self.files = (entities, edges) if entities is not None and edges is not None else None
        self._key: tuple | None = None
        self._loading = threading.Lock()
        self.names: dict[tuple[str, str], list[str]] = {}
        self.any_namespace: dict[str, list[str]] = {}  # the same, for a reader of every namespace
        self.mentions: dict[str, list[tuple[str, float]]] = {}
        self.neighbours: dict[str, list[tuple[str, float]]] = {}
        self.items: dict[str, list[tuple[str, float]]] = {}
        self.degree: dict[str, int] = {}
        self.entity_names: dict[str, str] = {}

    def refresh(self, files: tuple[Path, Path] | None | bool = True) -> bool:
        """Load the published graph if it changed (``files``: the entities and edges the
        publish pointer names, None when it names none; default: the files last given);
        False when there is none. The new indexes are built aside and swapped in together,
        so a walk on another thread reads one version or the next (a mix of two during the
        swap only changes scores)."""
        if files is not True:
            self.files = files  # type: ignore[assignment]
        try:
            if self.files is None:
                raise FileNotFoundError("no graph published")
            # A published version's files are never rewritten in place, but for files on a
            # disk their stat also catches an erasure's rewrite or a test's.
            key = tuple((str(p), *((p.stat().st_mtime_ns, p.stat().st_size) if isinstance(p, Path) else ()))
                        for p in self.files)
        except FileNotFoundError:
            self._key = None
            self.names, self.mentions, self.neighbours, self.items = {}, {}, {}, {}
            self.any_namespace = {}
            return False
        if key == self._key:
            return True
        with self._loading:
            if key != self._key:
                self._load(key)
        return True

    def _load(self, key: tuple) -> None:
        entities_path, edges_path = self.files  # type: ignore[misc]
        entities = pl.read_parquet(str(entities_path), columns=["id", "name", "aliases", "namespace", "facts", "status"])
        edges = pl.read_parquet(str(edges_path), columns=["source", "target", "kind", "confidence"])
        names: dict[tuple[str, str], list[str]] = defaultdict(list)
        degree, entity_names = {}, {}
        for eid, name, aliases, namespace, facts, _status in entities.iter_rows():
            degree[eid] = int(facts)
            entity_names[eid] = name
            for alias in (name, *(aliases or [])):
                key_name = normal_phrase(alias)
                if key_name:
                    names[(namespace, key_name)].append(eid)
        mentions: dict[str, list[tuple[str, float]]] = defaultdict(list)
        neighbours: dict[str, list[tuple[str, float]]] = defaultdict(list)
        items: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for source, target, kind, confidence in edges.filter(pl.col("kind") != "derived_from").iter_rows():
            weight = KIND_WEIGHT.get(kind, 0.0) * float(confidence)
            if kind == "mentions":
                mentions[target].append((source, weight))
            elif kind == "relation":
                neighbours[source].append((target, weight))
                neighbours[target].append((source, weight))
            else:  # item ↔ item
                items[source].append((target, weight))
                items[target].append((source, weight))
        any_namespace: dict[str, list[str]] = defaultdict(list)
        for (_, name), ids in names.items():
            any_namespace[name].extend(ids)
        self.names, self.mentions, self.neighbours, self.items = dict(names), dict(mentions), dict(neighbours), dict(items)
        self.degree, self.entity_names, self.any_namespace = degree, entity_names, dict(any_namespace)
        self._key = key

    def seeds(self, query: str, namespace: str | None) -> dict[str, float]:
        """The entities the query names (one to four words at a time), each at 1.0."""
        words = [normal_phrase(w) for w in tokens(query)]
        words = [w for w in words if w]
        found: dict[str, float] = {}
        taken: set[int] = set()
        for size in range(min(MAX_NGRAM, len(words)), 0, -1):
            for start in range(len(words) - size + 1):
                span = set(range(start, start + size))
                if span & taken:
                    continue
                phrase = " ".join(words[start:start + size])
                if size == 1 and phrase in QUERY_STOPWORDS:
                    continue
                if ids := self._entities(words[start:start + size], namespace):
                    found.update(dict.fromkeys(ids, 1.0))
                    taken |= span
        return found

    def named(self, phrase: str, namespace: str | None) -> set[str]:
        """The entities ``phrase`` names as a whole ("Caroline", "the WRX"), or its
        trailing proper name ("my sister Maya" → Maya); not "Caroline dating"."""
        if self._key is None and not self.refresh():
            return set()
        options = [phrase]
        words = phrase.split()
        tail = []
        for word in reversed(words):
            if not word[:1].isupper():
                break
            tail.insert(0, word)
        if tail and len(tail) < len(words):
            options.append(" ".join(tail))
        for option in options:
            if ids := self._entities(normal_phrase(option).split(), namespace):
                return ids
        return set()

    def _entities(self, words: list[str], namespace: str | None) -> set[str]:
        """The entities named by ``words`` (normal forms), as written or with the last word
        singular ("turtles" → "turtle"), in ``namespace`` (None: any)."""
        if not words:
            return set()
        options = [" ".join(words)]
        if (single := _singular(words[-1])) is not None:
            options.append(" ".join([*words[:-1], single]))
        for name in options:
            ids = set(self.names.get((namespace, name), ()) if namespace is not None
                      else self.any_namespace.get(name, ()))
            if ids:
                return ids
        return set()

    def expand(self, seeds: dict[str, float], config: MemoryConfig) -> dict[str, float]:
        """item id → graph score: the breadth-first walk from ``seeds`` (see the module doc)."""
        g = config.graph
        depth, hop = int(g.expansion_depth), float(g.hop_decay)
        if not seeds or depth < 1:
            return {}
        scores: dict[str, float] = defaultdict(float)
        entity_scores: dict[str, float] = {}
        # Hop 1: items mentioning a seed (unless it is a hub), entities related to it.
        for eid, s in seeds.items():
            if self.degree.get(eid, 0) <= g.max_seed_degree:
                for item, w in self.mentions.get(eid, ()):
                    scores[item] += s * hop * w
            for other, w in self.neighbours.get(eid, ()):
                if other not in seeds:
                    entity_scores[other] = max(entity_scores.get(other, 0.0), s * hop * w)
        if depth >= 2:
            reached = dict(scores)
            for eid, s in entity_scores.items():
                if self.degree.get(eid, 0) <= g.max_seed_degree:
                    for item, w in self.mentions.get(eid, ()):
                        scores[item] += s * hop * w
            for item, s in reached.items():
                for other, w in self.items.get(item, ()):
                    scores[other] += s * hop * w
        return dict(scores)

    def search(self, query: str, namespace: str | None, config: MemoryConfig, limit: int) -> list[dict[str, Any]]:
        """The walk's best ``limit`` items as a search list: ``id`` and ``_graph`` (its score).
        Reads the graph as last loaded (``Stores.table`` refreshes it with the items snapshot)."""
        if self._key is None and not self.refresh():
            return []
        scores = self.expand(self.seeds(query, namespace), config)
        best = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
        return [{"id": item, "_graph": score} for item, score in best]
