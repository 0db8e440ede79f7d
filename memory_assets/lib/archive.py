"""Archive clusters: old memories grouped by meaning, each with one insight sentence.

Archived items are never injected, but what they were about is still worth knowing
("Mostly about WRX maintenance …"). The weekly job clusters them with HDBSCAN and writes
one insight per cluster (DESIGN.md, "Insight"); points that belong nowhere stay noise and
get no insight.

HDBSCAN runs with the euclidean metric on unit vectors: there ``|a − b|² = 2 − 2·cos``,
so euclidean distance is monotone in cosine distance and the clusters are cosine clusters.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl

from collections.abc import Callable

from memory_assets.lib import summaries, warehouse
from memory_assets.lib.items import publish
from retrieval.config import MemoryConfig
from retrieval.llm import InvalidReply, LLMOutputFailed, Usage, complete_validated, load_prompt
from retrieval.paths import DataRoot
from retrieval.published import INSIGHTS_TABLE
from retrieval.store import ItemStore
from retrieval.text import QUERY_STOPWORDS as STOPWORDS
from retrieval.text import tokens

PROMPT_NAME = "cluster_insight"
# Archived (not accessed for 90 days) and cold (6 months) items are the archive; purged
# items are not: a purge is often the user's "forget", which must not resurface.
ARCHIVE_STATUSES = ("archived", "cold")
MAX_KEYWORDS = 5
# An insight is one line in a UI and a prompt; a longer reply is not one sentence.
MAX_INSIGHT_CHARS = 300
# Big clusters: the facts closest to the medoid describe it; the rest cost tokens.
MAX_FACTS_PER_REQUEST = 25

_BLOCK_TAG = re.compile(r"</?\s*facts\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class Cluster:
    """A group of similar archived items.

    Attributes:
        cluster_id: stable across runs: the first 16 hex of the sha256 of the sorted
            member ids, so the same members always make the same id.
        member_ids: the member item ids, sorted.
        medoid_id: the member closest (cosine) to all the others: the most typical fact.
        keywords: the most frequent content words and word pairs across the members.
        insight: one sentence (offline until ``insight`` is called with an LLM).
        size: the number of members.
    """

    cluster_id: str
    member_ids: tuple[str, ...]
    medoid_id: str
    keywords: tuple[str, ...]
    insight: str
    size: int


@dataclass
class InsightTally:
    """Tokens spent on LLM insights, and the clusters that fell back to the offline one."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempts: int = 0
    fallbacks: list[str] = field(default_factory=list)

    def add(self, usage: Usage) -> None:
        self.attempts += usage.attempts
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens

    def cost_usd(self, config: MemoryConfig) -> float:
        return Usage(self.attempts, self.prompt_tokens, self.completion_tokens).cost_usd(config)


def cluster_id(member_ids: list[str] | tuple[str, ...]) -> str:
    return hashlib.sha256("\n".join(sorted(member_ids)).encode("utf-8")).hexdigest()[:16]


def _check_vectors(items: pl.DataFrame, vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if items.height and (vectors.ndim != 2 or vectors.shape[0] != items.height):
        raise ValueError(
            f"vectors must have one row per item: {items.height} items, vectors of shape {vectors.shape}"
        )
    return vectors


def _medoid(vectors: np.ndarray) -> int:
    # Unit vectors: the largest summed cosine similarity is the smallest summed distance.
    return int(np.argmax((vectors @ vectors.T).sum(axis=1)))


# --- keywords ---------------------------------------------------------------------


def _terms(text: str) -> list[tuple[str, str]]:
    """(key, display) for each content word and each pair of adjacent content words."""
    words: list[str | None] = []
    for token in (t for t in tokens(text) if t[0].isalpha()):
        token = token.removesuffix("'s").removesuffix("'")
        low = token.lower()
        words.append(None if low in STOPWORDS or len(low) < 3 else token)
    out = [(w.lower(), w) for w in words if w]
    out += [(f"{a.lower()} {b.lower()}", f"{a} {b}") for a, b in zip(words, words[1:]) if a and b]
    return out


def keywords(member_texts: list[str], other_texts: list[str] | None = None,
             limit: int = MAX_KEYWORDS) -> list[str]:
    """The words the members share most, stopwords removed.

    Ranked by how many members use a term; ties go to the term fewer non-members use,
    then to word pairs ("oil change" before "oil"), then to first appearance. A term whose words were all
    chosen already ("oil" after "oil change") is not repeated.
    """
    inside: Counter[str] = Counter()
    display: dict[str, str] = {}
    first: dict[str, int] = {}
    for text in member_texts:
        for key, shown in dict(_terms(text)).items():
            inside[key] += 1
            display.setdefault(key, shown)
            first.setdefault(key, len(first))
    outside: Counter[str] = Counter()
    for text in other_texts or []:
        outside.update({key for key, _ in _terms(text)})
    n_out = max(len(other_texts or []), 1)
    # A term one member uses is not what the group is about (unless the group is one fact).
    floor = 2 if len(member_texts) > 1 else 1
    ranked = sorted(
        (k for k, n in inside.items() if n >= floor),
        key=lambda k: (-inside[k], outside[k] / n_out, -k.count(" "), first[k]),
    )
    chosen: list[str] = []
    for key in ranked:
        covered = {word for c in chosen for word in c.split()}
        if set(key.split()) <= covered:
            continue
        chosen.append(key)
        if len(chosen) == limit:
            break
    return [display[k] for k in chosen]


def offline_insight(medoid_content: str, words: list[str] | tuple[str, ...]) -> str:
    """``Mostly about <kw> (<kw>, <kw>, <kw>): <medoid fact>.``"""
    fact = " ".join(medoid_content.split())
    if fact and fact[-1] not in ".!?":
        fact += "."
    if not words:
        return fact
    head = f"Mostly about {words[0]}"
    if len(words) > 1:
        head += f" ({', '.join(words[1:4])})"
    return f"{head}: {fact}"


# --- clustering -------------------------------------------------------------------


def cluster(items: pl.DataFrame, vectors: np.ndarray, config: MemoryConfig) -> list[Cluster]:
    """Cluster the archived items by meaning.

    Args:
        items: item rows (``ITEM_SCHEMA``), any statuses; only ``archived`` and ``cold``
            items are clustered.
        vectors: unit vectors aligned with ``items`` rows.
        config: ``[archive] min_cluster_size`` and ``min_samples`` (0: HDBSCAN's default).

    Returns:
        clusters, largest first, each with its offline insight; noise is not clustered.
    """
    vectors = _check_vectors(items, vectors)
    if not items.height:
        return []
    mask = items["status"].is_in(list(ARCHIVE_STATUSES)).fill_null(False).to_numpy()
    archived = items.filter(pl.Series(mask))
    points = vectors[mask]
    min_cluster_size = int(config.archive.min_cluster_size)
    min_samples = config.archive.min_samples
    if archived.height < max(min_cluster_size, int(min_samples or 0), 2):
        return []
    from sklearn.cluster import HDBSCAN  # here, not at the top: loading the code location needs no sklearn

    def labels_for(single: bool) -> np.ndarray:
        return HDBSCAN(
            min_cluster_size=min_cluster_size,
            min_samples=int(min_samples) if min_samples else None,
            metric="euclidean",
            copy=True,
            allow_single_cluster=single,
        ).fit_predict(points)

    labels = labels_for(False)
    if (labels < 0).all():
        # HDBSCAN never returns the root as a cluster by default, so a small archive about
        # one theme would stay unsummarized; ask again allowing one cluster.
        labels = labels_for(True)
    ids = archived["id"].to_list()
    texts = archived["content"].to_list()
    clusters = []
    for label in sorted(set(labels.tolist()) - {-1}):
        members = np.flatnonzero(labels == label)
        medoid = int(members[_medoid(points[members])])
        words = keywords([texts[i] for i in members],
                         [texts[i] for i in np.flatnonzero(labels != label)])
        member_ids = tuple(sorted(ids[i] for i in members))
        clusters.append(Cluster(
            cluster_id=cluster_id(member_ids),
            member_ids=member_ids,
            medoid_id=ids[medoid],
            keywords=tuple(words),
            insight=offline_insight(texts[medoid], words),
            size=len(member_ids),
        ))
    return sorted(clusters, key=lambda c: (-c.size, c.cluster_id))


# --- insights ---------------------------------------------------------------------


def _members_by_centrality(cl: Cluster, items: pl.DataFrame, vectors: np.ndarray) -> list[str]:
    """Member contents, the medoid first, then by cosine to the medoid."""
    index = {item_id: i for i, item_id in enumerate(items["id"].to_list())}
    rows = [index[m] for m in cl.member_ids if m in index]
    if not rows:
        return []
    contents = items["content"].to_list()
    centre = index.get(cl.medoid_id, rows[0])
    order = sorted(rows, key=lambda r: (r != centre, -float(vectors[r] @ vectors[centre])))
    return [contents[r] for r in order]


def _sentence(raw: str) -> tuple[str, str | None]:
    """The reply as one clean sentence, or the reason it is not one."""
    text = raw.strip().strip('"').strip("'").strip()
    if not text:
        return "", "the reply was empty"
    if "\n" in text:
        return text, "the reply has more than one line"
    if len(text) > MAX_INSIGHT_CHARS:
        return text, f"the reply is {len(text)} characters; the limit is {MAX_INSIGHT_CHARS}"
    return text, None


def insight(cl: Cluster, items: pl.DataFrame, vectors: np.ndarray, *, llm: Any = None,
            config: MemoryConfig | None = None, tally: InsightTally | None = None) -> str:
    """One sentence saying what a cluster is about.

    Args:
        cl: a cluster from ``cluster``.
        items: the item rows the cluster was built from (any superset works).
        vectors: unit vectors aligned with ``items``.
        llm: an ``openai.OpenAI`` client (``summaries.chat_client``) for the LLM path with
            ``prompts/cluster_insight.md``; None for the offline sentence (medoid fact
            plus keywords).
        config: ``[llm]`` model, temperature and retries; the loaded config if omitted.
        tally: collects tokens spent and the clusters that fell back to offline.

    An LLM that fails (transport error, or a reply that is not one short line after a
    repair) never loses the insight: the offline sentence is used and the reason is
    recorded in ``tally.fallbacks``.
    """
    vectors = _check_vectors(items, vectors)
    contents = _members_by_centrality(cl, items, vectors)
    fallback = offline_insight(contents[0], cl.keywords) if contents else cl.insight
    if llm is None:
        return fallback
    if config is None:
        raise TypeError("insight: an LLM's insight needs config= (its [llm] model and limits)")
    tally = tally if tally is not None else InsightTally()
    model = str(config.llm.model)
    facts = "\n".join(f"- {_BLOCK_TAG.sub('(block marker)', ' '.join(c.split()))}"
                      for c in contents[:MAX_FACTS_PER_REQUEST])
    messages = [
        {"role": "system", "content": load_prompt(PROMPT_NAME).render(max_chars=MAX_INSIGHT_CHARS)},
        {"role": "user", "content": (
            f"Keywords: {', '.join(cl.keywords) or '(none)'}\n"
            f"{cl.size} facts, the most central first:\n<facts>\n{facts}\n</facts>"
        )},
    ]

    def parse(raw: str) -> str:
        text, problem = _sentence(raw)
        if problem is not None:
            raise InvalidReply(problem)
        return text

    def repair(problem: str) -> str:
        return (f"That could not be used: {problem}. Reply with exactly one sentence on one line, "
                f"at most {MAX_INSIGHT_CHARS} characters.")

    try:
        text, usage = complete_validated(llm, messages, parse, repair, model=model,
                                         temperature=config.llm.temperature, attempts=1 + config.llm.max_retries,
                                         echo_limit=2000)
    except LLMOutputFailed as failed:
        tally.add(failed.usage)
        tally.fallbacks.append(f"{cl.cluster_id}: {failed.reason}")
        return fallback
    tally.add(usage)
    return text


def with_insights(clusters: list[Cluster], items: pl.DataFrame, vectors: np.ndarray, *,
                  llm: Any = None, config: MemoryConfig | None = None,
                  tally: InsightTally | None = None) -> list[Cluster]:
    """``clusters`` with ``insight`` filled by ``insight`` (LLM when ``llm`` is given)."""
    return [replace(c, insight=insight(c, items, vectors, llm=llm, config=config, tally=tally))
            for c in clusters]


CLUSTER_SCHEMA: dict[str, pl.DataType] = {
    "cluster_id": pl.String(),
    "member_ids": pl.List(pl.String()),
    "medoid_id": pl.String(),
    "keywords": pl.List(pl.String()),
    "insight": pl.String(),
    "size": pl.Int64(),
}


def clusters_frame(clusters: list[Cluster]) -> pl.DataFrame:
    """One row per cluster (``CLUSTER_SCHEMA``), for Parquet or a LanceDB ``insights`` table."""
    return pl.DataFrame(
        [{"cluster_id": c.cluster_id, "member_ids": list(c.member_ids), "medoid_id": c.medoid_id,
          "keywords": list(c.keywords), "insight": c.insight, "size": c.size} for c in clusters],
        schema=CLUSTER_SCHEMA,
    )


@dataclass
class ClustersWritten:
    """What one weekly clustering wrote: the clusters, over how many archived items, and
    what their insight sentences cost."""
    archived_items: int
    clusters: list[Cluster]
    frame: pl.DataFrame
    tally: InsightTally


def write_clusters(paths: DataRoot, embed: Callable[[list[str]], np.ndarray], config: MemoryConfig) -> ClustersWritten:
    """The weekly step (``archive_clusters``): the published archived and cold items
    clustered by their vectors, each cluster with its insight (the LLM's when configured),
    written to Parquet and, embedded, to the LanceDB ``insights`` table."""
    store = ItemStore(paths)
    items = store.items().filter(pl.col("status").is_in(["archived", "cold"]))
    vectors, _found = store.vectors_for(items["content_hash"])
    vectors = vectors if vectors is not None else np.zeros((0, 384), np.float32)
    tally = InsightTally()
    clusters = with_insights(cluster(items, vectors, config), items, vectors, llm=summaries.chat_client(config),
                             config=config, tally=tally)
    frame = clusters_frame(clusters)
    warehouse.write_frame(paths.clusters, frame)
    if frame.height:
        publish.publish_table(paths, INSIGHTS_TABLE, frame, embed(frame["insight"].to_list()))
    return ClustersWritten(archived_items=items.height, clusters=clusters, frame=frame, tally=tally)
