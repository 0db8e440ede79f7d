"""How fast is retrieval: ``inject`` and ``search`` latency over N synthetic memory items.

A benchmark, not a test. It builds a data root with N items that read like real ones
(people, vehicles, work decisions, preferences, health, hobbies…) through the pipeline's
own write path (``facts_to_items`` → ``Embedder`` → ``publish.write_items`` →
``publish.publish``: same full-text index, same vector index, same ``published`` tag),
then times what an agent pays per prompt with the model already loaded:

* ``inject_ms`` — ``MemoryClient.inject(context)``: rewrite, tiers, query embedding,
  vector + full-text search, scoring, trust pass, the block and its ``injected`` event;
* ``search_ms`` — ``MemoryClient.search(query, k=10)``;
* ``embed_ms`` — the query embedding alone (``client.embedder.embed_one``);
* ``first_inject_ms`` — the first ``inject`` of a new client: the table is opened and
  its index caches are cold (the model is already loaded).

Model load and the first ``warmup`` calls are excluded. Item vectors come from the real
model (``--embed model``, ≈ 200 sentences/s on 2 cores, so 100k items take ~8 minutes
once) or are random unit vectors (``--embed random``, seconds; the same index and search
path, but vector neighbours are meaningless). Each built root is cached by
(items, seed, embed, generator version), so re-running reuses it.

    memory bench retrieval --items 10000,100000 [--embed model|random] [--json]
    memory bench retrieval --items 100000 --study   # + index types, FTS, table-open cost
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import inspect
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from evals import stderr_progress
from retrieval import text
from retrieval.config import MemoryConfig, load_config
from retrieval.paths import DataRoot

# Bump when the generator or the build changes, so cached roots are rebuilt.
GENERATOR_VERSION = "1"
EMBED_MODES = ("model", "random")
MANIFEST = "bench_build.json"
# The synthetic memory's clock: items are dated up to two years before it, and every
# inject runs "now" at this instant, so ages, decay and staleness are reproducible.
BENCH_NOW = datetime(2026, 1, 15, 9, 0, tzinfo=timezone.utc)
RANDOM_DIM = 384  # all-MiniLM-L6-v2's dimension
UNTRUSTED_SHARE = 0.05
SUPERSEDED_SHARE = 0.03
ITEMS_PER_SESSION = 20
FIRST_INJECT_SAMPLES = 10  # at most; one per 10 timed queries

Progress = Callable[[str], None]


class BenchError(RuntimeError):
    """The benchmark could not build or read its data root; the message says which."""


# --- the vocabulary ---------------------------------------------------------------------

FIRST = (
    "Aaron", "Priya", "Marcus", "Elena", "Tomás", "Mei", "Kofi", "Sofia", "Jonas", "Aisha",
    "Liam", "Yuki", "Rafael", "Ingrid", "Dmitri", "Fatima", "Noah", "Chloe", "Arjun", "Hannah",
    "Mateo", "Zara", "Oliver", "Leila", "Ethan", "Nadia", "Samuel", "Ines", "Caroline", "Melanie",
    "Wei", "Gabriel", "Amara", "Lucas", "Freya", "Omar", "Isabel", "Kenji", "Rosa", "Theo",
)
LAST = (
    "Nguyen", "Okafor", "Schmidt", "Haddad", "Kowalski", "Tanaka", "Silva", "Johansson",
    "Reyes", "Patel", "Moreau", "Brennan", "Adeyemi", "Larsen", "Costa", "Ivanova",
)
RELATIONS = ("wife", "husband", "sister", "brother", "mom", "dad", "son", "daughter",
             "best friend", "neighbor", "mentor", "coworker", "partner", "grandmother")
VEHICLES = (("Subaru", "WRX"), ("Toyota", "Tacoma"), ("Honda", "Civic"), ("Tesla", "Model 3"),
            ("Ford", "F-150"), ("Mazda", "CX-5"), ("Kia", "Niro"), ("Volkswagen", "Golf"),
            ("Hyundai", "Ioniq 5"), ("BMW", "R 1250 GS"), ("Volvo", "XC60"), ("Jeep", "Wrangler"))
PARTS = ("brake pads", "tires", "wiper blades", "cabin air filter", "battery", "spark plugs", "timing belt")
SHOPS = ("Jiffy Lube", "the dealer", "Mike's Garage", "Costco Tire Center", "a shop on 5th Street")
SERVICES = ("billing service", "auth service", "search API", "payments gateway", "ingestion pipeline",
            "mobile app", "admin dashboard", "notification worker", "reporting job", "checkout flow")
TECH = ("Postgres", "DuckDB", "Redis", "Kafka", "gRPC", "GraphQL", "Rust", "Go", "TypeScript",
        "Terraform", "Kubernetes", "SQLite", "ClickHouse", "Celery", "FastAPI", "Dagster")
CAUSES = ("an expired TLS certificate", "a full disk", "a bad config push", "a memory leak",
          "a DNS misconfiguration", "a runaway cron job", "connection pool exhaustion", "a schema migration")
COMMANDS = ("make test", "make lint", "ruff check", "pytest -q", "the smoke tests", "terraform plan")
COMPANIES = ("Acme Robotics", "Northwind", "Globex", "Initech", "Umbrella Health", "Stark Logistics", "Hooli")
ROLES = ("staff engineer", "product manager", "data scientist", "nurse", "teacher",
         "site reliability engineer", "designer", "accountant", "paramedic")
PROJECTS = ("Atlas", "Beacon", "Comet", "Delta", "Ember", "Falcon", "Gemini", "Harbor", "Orion", "Quartz")
DRINKS = ("oat milk lattes", "green tea", "black coffee", "sparkling water", "chai", "espresso")
CUISINES = (("Thai", "pad see ew"), ("Italian", "cacio e pepe"), ("Mexican", "tacos al pastor"),
            ("Japanese", "ramen"), ("Ethiopian", "injera with lentils"), ("Indian", "dal makhani"))
FOODS = ("pork", "red meat", "dairy", "gluten", "mushrooms", "cilantro", "shellfish")
ALLERGENS = ("peanuts", "shellfish", "penicillin", "lactose", "bee stings", "cats", "pollen")
MEDICATIONS = (("ibuprofen", 200), ("metformin", 500), ("lisinopril", 10), ("sertraline", 50),
               ("levothyroxine", 75), ("vitamin D", 1000))
HOBBIES = ("pottery", "rock climbing", "trail running", "watercolor painting", "chess", "sourdough baking",
           "birdwatching", "photography", "salsa dancing", "gardening", "woodworking", "surfing")
INSTRUMENTS = ("guitar", "piano", "violin", "drums", "cello", "ukulele")
CITIES = ("Lisbon", "Denver", "Osaka", "Toronto", "Austin", "Cape Town", "Reykjavik", "Portland",
          "Nairobi", "Edinburgh", "Seoul", "Oaxaca")
PETS = ("dog", "cat", "rabbit", "parrot")
PET_NAMES = ("Biscuit", "Luna", "Pepper", "Mochi", "Rufus", "Olive", "Ziggy", "Maple")
EDITORS = ("VS Code", "Neovim", "PyCharm", "Emacs", "Zed")
WEEKDAYS = tuple(d.title() for d in text.WEEKDAYS[:5])
MONTHS = tuple(m.title() for m in text.MONTHS)


class Draw:
    """One random draw of the vocabulary; a template's fields are looked up here."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        c = rng.choice
        self.person = c(FIRST) if rng.random() < 0.7 else f"{c(FIRST)} {c(LAST)}"
        self.person2 = c(FIRST)
        self.relation = c(RELATIONS)
        self.make, self.model = c(VEHICLES)
        self.part, self.shop = c(PARTS), c(SHOPS)
        self.service, self.cause, self.command = c(SERVICES), c(CAUSES), c(COMMANDS)
        self.tech, self.tech2 = rng.sample(TECH, 2)
        self.company, self.role, self.project = c(COMPANIES), c(ROLES), c(PROJECTS)
        self.drink, self.drink2 = rng.sample(DRINKS, 2)
        self.cuisine, self.dish = c(CUISINES)
        self.food, self.allergen = c(FOODS), c(ALLERGENS)
        self.medication, self.dose = c(MEDICATIONS)
        self.hobby, self.instrument, self.city = c(HOBBIES), c(INSTRUMENTS), c(CITIES)
        self.pet, self.pet_name, self.editor = c(PETS), c(PET_NAMES), c(EDITORS)
        self.weekday, self.month = c(WEEKDAYS), c(MONTHS)
        self.miles = f"{rng.randrange(3_000, 160_000, 7):,}"
        self.miles2 = f"{rng.randrange(3_000, 160_000, 7):,}"
        self.year = rng.randint(2009, 2025)
        self.day = f"{c(MONTHS)} {rng.randint(1, 28)}"
        self.time = f"{rng.randint(1, 12)}:{rng.choice(('00', '15', '30', '45'))} {rng.choice(('am', 'pm'))}"
        self.hour = rng.randint(7, 10)
        self.n = rng.randint(2, 25)
        self.km = rng.randint(3, 21)
        self.minutes = rng.randint(4, 180)
        self.version = f"{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 12)}"

    def fill(self, template: str) -> str:
        return template.format(**vars(self))

    def entities(self, template: str) -> list[str]:
        names = {"person": self.person, "person2": self.person2, "model": f"{self.make} {self.model}",
                 "service": self.service, "tech": self.tech, "tech2": self.tech2, "company": self.company,
                 "project": self.project, "city": self.city, "pet_name": self.pet_name}
        return [v for k, v in names.items() if "{" + k + "}" in template]


# (category, kind, template). Kinds decide tiers through config.tier_for, as in production.
TEMPLATES: tuple[tuple[str, str, str], ...] = (
    ("vehicle", "fact", "{person}'s {make} {model} has {miles} miles on it"),
    ("vehicle", "event", "{person} bought a {year} {make} {model} in {month}"),
    ("vehicle", "commitment", "{person}'s {model} needs new {part} before {day}"),
    ("vehicle", "preference", "{person} prefers to take the {model} on long trips to {city}"),
    ("maintenance", "commitment", "{person}'s {model} oil change is due at {miles} miles"),
    ("maintenance", "event", "{person}'s {model} got new {part} at {shop} on {day}"),
    ("maintenance", "correction", "{person}'s {model} oil change is due at {miles} miles, not {miles2}"),
    ("incident", "event", "The {service} went down on {day} because of {cause}"),
    ("incident", "event", "{person} was paged at {time} for a {service} outage caused by {cause}"),
    ("incident", "fact", "A {tech} upgrade caused a regression in the {service} in {month} {year}"),
    ("decision", "decision", "The team decided to use {tech} for the {service}"),
    ("decision", "decision", "{person} decided to migrate the {service} from {tech} to {tech2} by {month}"),
    ("decision", "decision", "We agreed to freeze deploys of the {service} on Fridays after {time}"),
    ("preferences", "preference", "{person} prefers {drink} over {drink2}"),
    ("preferences", "preference", "{person} loves {cuisine} food, especially {dish}"),
    ("preferences", "preference", "{person} hates meetings before {hour} am"),
    ("preferences", "preference", "{person} prefers {editor} for code review in the {service} repo"),
    ("preferences", "negative", "{person} does not eat {food}"),
    ("process", "procedure", "Always run {command} before merging changes to the {service}"),
    ("process", "procedure", "Deploys of the {service} need {person}'s review first"),
    ("process", "procedure", "Release notes for the {service} go in the {project} wiki before each release"),
    ("work", "fact", "{person} works as a {role} at {company}"),
    ("work", "commitment", "{person}'s deadline for the {project} project is {day}"),
    ("work", "fact", "{person} has a weekly one-on-one with {person2} on {weekday}s"),
    ("work", "event", "{person} joined {company} in {month} {year}"),
    ("health", "fact", "{person} is allergic to {allergen}"),
    ("health", "fact", "{person} takes {dose} mg of {medication} every morning"),
    ("health", "commitment", "{person} has a dentist appointment on {day} at {time}"),
    ("health", "fact", "{person} runs {km} km three times a week"),
    ("relationships", "fact", "{person}'s {relation} {person2} lives in {city}"),
    ("relationships", "fact", "{person2} is {person}'s {relation} and their birthday is {day}"),
    ("relationships", "event", "{person} and {person2} have been married since {year}"),
    ("hobbies", "fact", "{person} plays {instrument} in a band with {person2}"),
    ("hobbies", "fact", "{person} has been doing {hobby} for {n} years"),
    ("hobbies", "commitment", "{person} is training for a half marathon in {city} on {day}"),
    ("personal", "event", "{person} moved to {city} in {year}"),
    ("personal", "fact", "{person} has a {pet} named {pet_name}"),
    ("personal", "commitment", "{person} is planning a trip to {city} in {month}"),
    ("casual", "event", "{person} watched a documentary about {hobby} last weekend"),
    ("operational", "event", "Version {version} of the {service} was deployed on {day}"),
    ("operational", "fact", "The nightly {service} backup took {minutes} minutes on {day}"),
)

QUESTIONS: tuple[str, ...] = (
    "When is {person}'s {model} oil change due?",
    "How many miles are on {person}'s {make} {model}?",
    "Does {person}'s {model} need any repairs soon?",
    "What did we decide about {tech} for the {service}?",
    "Why did the {service} go down last time?",
    "Is {person} allergic to anything?",
    "What medication does {person} take?",
    "Where does {person}'s {relation} live?",
    "What hobbies does {person} have?",
    "What should I run before merging to the {service}?",
    "Does {person} prefer {drink} or {drink2}?",
    "What food does {person} like? I'm booking dinner.",
    "When is the deadline for the {project} project?",
    "Where is {person} travelling in {month}?",
    "What's the name of {person}'s {pet}?",
    "Remind me what {person} does at {company}.",
    "Who reviews deploys of the {service}?",
    "Any incidents with {tech} recently?",
)
EARLIER = ("Morning! Quick question before my meeting.", "Thanks, that helped.",
           "Ugh, the {service} is acting up again.", "I'm planning the week.",
           "Can you help me with something for {person}?")


def _session_resource_ids(session: str, turn: int) -> list[str]:
    return [hashlib.sha256(f"{session}:{turn}".encode()).hexdigest()]


def synthetic_items(n_items: int, *, seed: int = 0, config: MemoryConfig | None = None) -> pl.DataFrame:
    """``n_items`` distinct item rows (ITEM_SCHEMA) built the way the pipeline builds them.

    Facts get importance and confidence from ``retrieval.scoring`` and become items through
    ``facts_to_items``; about 5% are untrusted and 3% superseded by a later item.
    """
    from memory_assets.lib.items.dedup import content_hash
    from memory_assets.lib.extraction.facts import fact_id
    from memory_assets.lib.items.consolidation import facts_to_items
    from retrieval import scoring
    from memory_assets.lib.extraction.fields import with_fields
    from retrieval.schema import FACT_SCHEMA, ITEM_SCHEMA

    config = config or load_config()
    templates = [t for t in TEMPLATES if t[0] in config.categories]
    if not templates:
        raise BenchError(f"none of the bench's categories is configured ({', '.join(config.categories)})")
    rng = random.Random(seed)
    namespace = config.pipeline.namespace
    seen: set[str] = set()
    rows: list[dict[str, Any]] = []
    while len(rows) < n_items:
        category, kind, template = rng.choice(templates)
        draw = Draw(rng)
        content = draw.fill(template)
        digest = content_hash(content)
        if digest in seen:
            continue
        seen.add(digest)
        index = len(rows)
        session = f"bench-s{index // ITEMS_PER_SESSION:05d}"
        turn = index % ITEMS_PER_SESSION + 1
        untrusted = rng.random() < UNTRUSTED_SHARE
        strength = rng.choices(("explicit", "implied", "inferred"), (0.8, 0.15, 0.05))[0]
        if untrusted and strength == "explicit":
            strength = "implied"  # as build_facts: a tool's say-so is never explicit
        remember, action = rng.random() < 0.05, kind == "commitment" and rng.random() < 0.3
        rows.append({
            "id": fact_id(namespace, session, digest), "content": content, "category": category,
            "kind": kind, "memory_kind": "episode" if kind == "event" else "note",
            "tags": sorted({category, kind}), "entities": draw.entities(template),
            "importance": scoring.base_importance(config, category, source_trust="untrusted" if untrusted else "trusted",
                                                  remember=remember, action_required=action),
            "confidence": scoring.confidence(config, strength), "strength": strength,
            "sentiment": rng.choices(("neutral", "excited", "frustrated", "uncertain"), (0.85, 0.06, 0.06, 0.03))[0],
            "tier": config.tier_for(kind), "scope": "global", "project": None, "namespace": namespace,
            "source_trust": "untrusted" if untrusted else "trusted",
            "provenance": "extracted" if untrusted else rng.choices(("user_stated", "user_corrected"), (0.95, 0.05))[0],
            "source_session": session, "source_resource_ids": _session_resource_ids(session, turn),
            "source_turn_ids": [f"{session}:{turn}"], "supersedes_hint": None, "content_hash": digest,
            "created_at": BENCH_NOW - timedelta(days=rng.uniform(0, 730)),
            "prompt_version": "bench", "extractor": "synthetic",
        })
    facts = with_fields(pl.DataFrame(rows, schema=FACT_SCHEMA))  # the typed fields, as extraction writes them
    items = facts_to_items(facts, BENCH_NOW).select(list(ITEM_SCHEMA))
    # Superseded: an item replaced by another, linked both ways as supersession links them.
    ids = items["id"].to_list()
    n_old = int(round(n_items * SUPERSEDED_SHARE))
    old = rng.sample(range(n_items), n_old) if n_items > 1 else []
    status, by, sup = ["active"] * n_items, [None] * n_items, [None] * n_items
    for i in old:
        j = rng.randrange(n_items)
        if j == i or status[j] == "superseded" or sup[j] is not None:
            continue
        status[i], by[i], sup[j] = "superseded", ids[j], ids[i]
    return items.with_columns(status=pl.Series(status), superseded_by=pl.Series(by, dtype=pl.String),
                              supersedes=pl.Series(sup, dtype=pl.String))


def synthetic_queries(n: int, *, seed: int = 0) -> list[str | list[dict[str, str]]]:
    """``n`` questions a user would ask about this memory; every third is a short conversation."""
    rng = random.Random(f"queries-{seed}")
    out: list[str | list[dict[str, str]]] = []
    for i in range(n):
        draw = Draw(rng)
        question = draw.fill(rng.choice(QUESTIONS))
        if i % 3 == 2:
            out.append([{"role": "user", "content": draw.fill(rng.choice(EARLIER))},
                        {"role": "assistant", "content": "Sure, what do you need?"},
                        {"role": "user", "content": question}])
        else:
            out.append(question)
    return out


def query_text(context: str | list[dict[str, str]]) -> str:
    return context if isinstance(context, str) else context[-1]["content"]


# --- building the data root -------------------------------------------------------------

def default_cache_dir() -> Path:
    return Path(tempfile.gettempdir()) / "agent-memory-bench"


def build_key(n_items: int, *, seed: int = 0, embed: str = "model") -> dict[str, Any]:
    """Everything a built root depends on; a change to any part builds a new root.

    The write path's code is part of the key, so a change to ``publish.py`` (say, another
    vector index) is measured on a root built the new way, never on a stale one.
    """
    from memory_assets.lib.items import consolidation as items_lib
    from memory_assets.lib.items import graph as graph_lib
    from memory_assets.lib.items import publish
    from retrieval.schema import ITEM_SCHEMA

    config = load_config()
    # Only what shapes the stored rows; ranking and injection settings are read per query.
    shaping = {name: getattr(config, name, None) for name in
               ("categories", "importance", "confidence", "tiers", "pipeline", "embedding", "graph")}
    code = (inspect.getsource(publish) + inspect.getsource(items_lib.facts_to_items) + inspect.getsource(graph_lib)
            + repr(ITEM_SCHEMA))
    return {
        "items": n_items, "seed": seed, "embed": embed, "generator": GENERATOR_VERSION,
        "code_sha256": hashlib.sha256(code.encode()).hexdigest()[:16],
        "config_sha256": hashlib.sha256(json.dumps(shaping, sort_keys=True, default=repr).encode()).hexdigest()[:16],
    }


def root_dir(cache_dir: Path, key: dict[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:10]
    return Path(cache_dir) / f"items{key['items']}-seed{key['seed']}-{key['embed']}-{digest}"


def _random_vectors(n: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((n, RANDOM_DIM), dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _embed_texts(texts: list[str], vectors_dir: Path | None,
                 progress: Progress | None) -> tuple[np.ndarray, str, float, bool]:
    """Vectors for ``texts`` from the configured embedder, the model id, the seconds
    embedding took and whether kept vectors were reused.

    With ``vectors_dir``, vectors are kept by a hash of the model id and the texts, so a
    rebuild after a code change to the write path does not embed 100k sentences again
    (the seconds returned are then those of the original embedding).
    """
    from retrieval.embeddings import Embedder

    embedder = Embedder(load_config())
    digest = hashlib.sha256("\n".join([embedder.model_id, *texts]).encode()).hexdigest()[:20]
    kept = Path(vectors_dir) / f"{digest}.npy" if vectors_dir else None
    if kept is not None and kept.exists():
        seconds = json.loads(kept.with_suffix(".json").read_text()).get("embed_seconds", 0.0) \
            if kept.with_suffix(".json").exists() else 0.0
        return np.load(kept), embedder.model_id, float(seconds), True
    chunk = 5_000
    parts = []
    started = time.perf_counter()
    for start in range(0, len(texts), chunk):
        parts.append(embedder.embed(texts[start:start + chunk]))
        if progress and len(texts) > chunk:
            done = min(start + chunk, len(texts))
            rate = done / (time.perf_counter() - started)
            progress(f"embedded {done:,}/{len(texts):,} items ({rate:.0f}/s)")
    vectors = np.concatenate(parts).astype(np.float32)
    seconds = round(time.perf_counter() - started, 1)
    if kept is not None:
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.with_suffix(".json").write_text(json.dumps({
            "model": embedder.model_id, "texts": len(texts), "embed_seconds": seconds,
            "load_avg_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        }))
        tmp = kept.with_name(f".{kept.name}.{os.getpid()}.tmp.npy")
        np.save(tmp, vectors)
        os.replace(tmp, kept)
    return vectors, embedder.model_id, seconds, False


def build_synthetic_root(root: Path, n_items: int, *, seed: int = 0, embed: str = "model",
                         vectors_dir: Path | None = None, progress: Progress | None = None) -> Path:
    """Write a data root at ``root`` holding ``n_items`` synthetic items, published.

    Args:
        root: the data root to create (must not exist yet).
        n_items: how many items.
        seed: the generator's seed; the same seed gives the same items.
        embed: ``model`` (the configured embedder) or ``random`` (random unit vectors).
        vectors_dir: where model vectors are kept between builds (none: always embed).
        progress: called with a line of text as the build goes.
    Returns:
        ``root``, with ``bench_build.json`` describing the build.
    """
    from memory_assets.lib.items import publish
    from memory_assets.lib.items.graph import build_graph

    if embed not in EMBED_MODES:
        raise BenchError(f"embed={embed!r}; expected one of {', '.join(EMBED_MODES)}")
    if n_items < 1:
        raise BenchError(f"items={n_items}; need at least 1")
    root = Path(root)
    paths = DataRoot.resolve(root)
    started = time.perf_counter()
    items = synthetic_items(n_items, seed=seed)
    generated = time.perf_counter()
    if progress:
        progress(f"generated {n_items:,} items; embedding ({embed})")
    if embed == "model":
        vectors, model_id, embed_seconds, reused = _embed_texts(items["content"].to_list(), vectors_dir, progress)
    else:
        vectors, model_id, embed_seconds, reused = _random_vectors(n_items, seed), f"random:unit-{RANDOM_DIM}", 0.0, False
    items = items.with_columns(embedding_model=pl.lit(model_id))
    embedded = time.perf_counter()
    if progress:
        progress("writing and indexing (publish.write_items)")
    written = publish.write_items(paths, items, vectors, BENCH_NOW)
    # The graph, as the pipeline builds it with every version: dual search walks it.
    graph = build_graph(items, vectors, None, load_config(), BENCH_NOW)
    entities, edges = publish.write_graph(paths, graph.entities, graph.edges, BENCH_NOW)
    written = publish.ItemsVersion(**{**written.__dict__, "entities": entities, "edges": edges})
    publish.publish(paths, written)
    done = time.perf_counter()
    manifest = {
        **build_key(n_items, seed=seed, embed=embed),
        "embedding_model": model_id, "active": int((items["status"] == "active").sum()),
        "untrusted": int((items["source_trust"] == "untrusted").sum()),
        "build_seconds": round(done - started, 1), "generate_seconds": round(generated - started, 1),
        # Kept vectors: embed_seconds is the original embedding's, not part of build_seconds.
        "embed_seconds": round(embed_seconds, 1), "vectors_reused": reused,
        "write_and_index_seconds": round(done - embedded, 1),
        "index": describe_indexes(root), "built_at": datetime.now(timezone.utc).isoformat(),
        "graph": graph.counts(),
    }
    (root / MANIFEST).write_text(json.dumps(manifest, indent=2))
    return root


def cached_root(n_items: int, *, seed: int = 0, embed: str = "model", cache_dir: Path | None = None,
                progress: Progress | None = None) -> tuple[Path, bool]:
    """The cached root for ``build_key(...)``, built on first use. Returns (root, reused).

    Built under a temporary name and renamed into place, so an interrupted build never
    leaves a half-built root that looks cached. Model vectors are kept in
    ``<cache_dir>/vectors`` and outlive the roots built from them.
    """
    cache_dir = Path(cache_dir or default_cache_dir())
    final = root_dir(cache_dir, build_key(n_items, seed=seed, embed=embed))
    if (final / MANIFEST).exists():
        return final, True
    cache_dir.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=cache_dir))
    try:
        build_synthetic_root(building / "root", n_items, seed=seed, embed=embed,
                             vectors_dir=cache_dir / "vectors", progress=progress)
        if final.exists():
            shutil.rmtree(final)
        os.replace(building / "root", final)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return final, False


def describe_indexes(root: Path) -> str:
    """The published items table's indexes, e.g. ``IVF_HNSW_SQ(vector) + FTS(content)``."""
    from retrieval.store import ItemStore

    table = ItemStore(DataRoot.resolve(root)).table()
    if table is None:
        raise BenchError(f"{root}: nothing published")
    found = [f"{'FTS' if 'FTS' in str(i.index_type).upper() else i.index_type}({', '.join(i.columns)})"
             for i in table.list_indices()]
    if not any("vector" in f for f in found):
        found.insert(0, "brute force(vector)")
    return " + ".join(sorted(found, key=lambda f: "FTS" in f))


# --- timing -----------------------------------------------------------------------------

def latency_stats(seconds: Sequence[float]) -> dict[str, float]:
    """p50, p95, mean and max in milliseconds."""
    ms = np.asarray(seconds, dtype=np.float64) * 1000.0
    return {"p50": round(float(np.percentile(ms, 50)), 2), "p95": round(float(np.percentile(ms, 95)), 2),
            "mean": round(float(ms.mean()), 2), "max": round(float(ms.max()), 2)}


def machine() -> dict[str, Any]:
    import lancedb

    info: dict[str, Any] = {"cpus": os.cpu_count(), "platform": platform.platform(),
                            "python": platform.python_version(), "lancedb": lancedb.__version__}
    try:
        import torch

        info["torch_threads"] = torch.get_num_threads()
        info["query_threads"] = int(load_config().embedding.query_threads) or info["torch_threads"]
        info["idle_query_threads"] = int(load_config().embedding.idle_query_threads)
    except ImportError:
        pass
    if hasattr(os, "getloadavg"):
        # The numbers are only as good as the machine was idle: record how busy it was.
        info["load_avg_1m"] = round(os.getloadavg()[0], 2)
    return info


def _timed(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def _search_call(client: Any) -> Callable[[str], Any]:
    if "now" in inspect.signature(client.search).parameters:
        return lambda q: client.search(q, k=10, now=BENCH_NOW)
    return lambda q: client.search(q, k=10)


# What an inject spends its time on, from the read path's own spans (``retrieval.spans``):
# the query embedding, the vector query ("vector": the vector and full-text queries run
# together after the embedding, and this is both; "full-text" is the full-text query's own
# time inside it), the graph walk, the candidates' rows from the in-memory
# snapshot and the visibility filter ("rows"), ranking (tier 2 less its candidate lists)
# and the rest: tier 1, the pending overlay, the trust pass and the block ("block"). The
# stages but "full-text" add up to the inject.
STAGES = ("embed", "vector", "full-text", "graph", "rows", "rank", "block")


def _stages(calls: list[tuple[str, float, float, float]]) -> dict[str, float]:
    """One inject's seconds by stage, from its spans."""
    # The search stages count only inside the candidate lists: the trust pass may embed
    # too (a disagreeing pair's contents, on an object-store root), and that is "block".
    lists = [(start, start + seconds) for label, start, seconds, _cpu in calls if label == "candidates"]
    searching = {"embed", "vector", "full-text", "graph"}
    wall: dict[str, float] = {}
    for label, start, seconds, _cpu in calls:
        if label not in searching or any(a <= start <= b for a, b in lists):
            wall[label] = wall.get(label, 0.0) + seconds
    parts = {name: wall.get(name, 0.0) for name in ("embed", "vector", "full-text", "graph")}
    parts["rows"] = wall.get("candidates", 0.0) - sum(v for k, v in parts.items() if k != "full-text")
    parts["rank"] = wall.get("tier 2", 0.0) - wall.get("candidates", 0.0)
    parts["block"] = wall.get("inject", 0.0) - wall.get("tier 2", 0.0)
    return parts


def upload_root(root: Path, bucket: str) -> str:
    """Copy a built data root into ``bucket`` (the environment names the store); its URI."""
    from memory_assets.lib import warehouse

    fs, target = warehouse.filesystem(f"s3://{bucket}/{root.name}")
    fs.put(str(root), target, recursive=True)
    return f"s3://{target}"


def run_bench(n_items: int, *, queries: int = 200, warmup: int = 20, seed: int = 0, embed: str = "model",
              cache_dir: Path | None = None, torch_threads: int | None = None,
              progress: Progress | None = None, s3: Any = None) -> dict[str, Any]:
    """Time ``inject``, ``search`` and the query embedding over ``n_items`` synthetic items.

    Args:
        n_items: items in the data root (built once, then reused from ``cache_dir``).
        queries: timed calls of each kind.
        warmup: untimed calls first (model load, table open, index caches).
        seed: the generator's seed for items and questions.
        embed: how item vectors were made: ``model`` or ``random``.
        cache_dir: where built roots are kept (default: a folder in the system temp dir).
        torch_threads: torch threads for the query embedding (default: the config's
            ``embedding.query_threads``).
        progress: called with a line of text as the run goes.
        s3: an ``evals.bench.s3.S3Server``: the built root is copied into a bucket on it and
            read from there (this process's environment must point at it).
    Returns:
        a JSON-able report; ``inject_ms`` is None (and ``inject_error`` set) when inject fails.
    """
    from retrieval import MemoryClient
    from retrieval.spans import Recorder, recording

    root, reused = cached_root(n_items, seed=seed, embed=embed, cache_dir=cache_dir, progress=progress)
    built = json.loads((root / MANIFEST).read_text())
    local_root = root
    if s3 is not None:
        if progress:
            progress(f"copying {root} to the S3-compatible server")
        root = upload_root(root, s3.bucket(f"bench-{n_items}-{int(time.time())}"))
    client = MemoryClient(root)
    if torch_threads:  # exactly this many threads, alone or not
        client.embedder.query_threads, client.embedder.idle_query_threads = torch_threads, 0
    client.embedder.embed_one("load the model")  # excluded: a long-lived agent loads it once
    search = _search_call(client)
    contexts = synthetic_queries(warmup + queries, seed=seed)
    warm, timed = contexts[:warmup], contexts[warmup:]
    if progress:
        progress(f"{n_items:,} items ({'cached' if reused else 'built'}: {root}); timing {queries} queries")

    inject_error = None
    for context in warm:
        client.embedder.embed_one(query_text(context))
        search(query_text(context))
        if inject_error is None:
            try:
                client.inject(context, now=BENCH_NOW)
            except Exception as exc:  # the client is being rewritten: measure search, report why
                inject_error = f"{type(exc).__name__}: {exc}"
    embed_s, search_s, inject_s, injected, tokens = [], [], [], 0, []
    stages: dict[str, list[float]] = {stage: [] for stage in STAGES}
    recorder = Recorder()
    # Every timed call embeds its query: the cached query vectors (an agent asking the
    # same thing again) are dropped before each, so no call reuses another's embedding.
    for context in timed:
        text = query_text(context)
        embed_s.append(_timed(lambda: client.embedder.embed_one(text)))
        client.stores.forget_queries()
        search_s.append(_timed(lambda: search(text)))
        if inject_error is None:
            # Timed with the spans off, then again with them on for the breakdown.
            client.stores.forget_queries()
            start = time.perf_counter()
            injection = client.inject(context, now=BENCH_NOW)
            inject_s.append(time.perf_counter() - start)
            injected += len(injection.items)
            tokens.append(injection.tokens)
            client.stores.forget_queries()
            recorder.clear()
            with recording(recorder):
                client.inject(context, now=BENCH_NOW)
            for stage, seconds in _stages(recorder.calls).items():
                stages[stage].append(seconds)
    # A new client opens the table with cold index caches (the model stays loaded): what an
    # inject pays right after the client (re)opens the published table.
    first_s = []
    if inject_error is None:
        for context in timed[:min(FIRST_INJECT_SAMPLES, max(1, queries // 10))]:
            fresh = MemoryClient(root)
            first_s.append(_timed(lambda: fresh.inject(context, now=BENCH_NOW)))
    # How often dual search had something to walk: queries naming an entity of the graph,
    # and the items its walk reached (the third list fused into inject's ranking).
    graph_index = client.stores.graph
    walked = [graph_index.search(query_text(c), None, client.config, 100) for c in timed] if inject_s else []
    # inject appends an ``injected`` event per call; the bench's root is not a real memory.
    shutil.rmtree(client.paths.events, ignore_errors=True)
    report: dict[str, Any] = {
        "items": n_items, "queries": queries, "warmup": warmup,
        "inject_ms": latency_stats(inject_s) if inject_s else None,
        "search_ms": latency_stats(search_s), "embed_ms": latency_stats(embed_s),
        "first_inject_ms": latency_stats(first_s) if first_s else None,
        "stages_p50_ms": {stage: round(float(np.median(values)) * 1000, 2) for stage, values in stages.items() if values},
        "data_root": "s3 (moto, 127.0.0.1)" if s3 is not None else "local disk",
        "build_seconds": built["build_seconds"], "embed_seconds": built.get("embed_seconds"),
        "index_seconds": built.get("write_and_index_seconds"), "cache": "reused" if reused else "built",
        "index": built["index"], "embedding": embed, "embedding_model": built["embedding_model"],
        "items_per_inject": round(injected / len(inject_s), 2) if inject_s else None,
        "tokens_per_inject": round(float(np.mean(tokens)), 1) if tokens else None,
        "root": str(root), "built_at": str(local_root), "machine": machine(),
        "graph": {**built.get("graph", {}), "graph_on": bool(client.config.graph.weight > 0),
                  "queries_walked": sum(1 for w in walked if w),
                  "items_reached_mean": round(float(np.mean([len(w) for w in walked])), 1) if walked else 0.0},
    }
    if inject_error:
        report["inject_error"] = inject_error
    return report


# --- the index study --------------------------------------------------------------------

ACTIVE = "status = 'active'"
# (index type, query parameter sets) tried by the study; {} is LanceDB's defaults.
INDEX_GRID: tuple[tuple[str, tuple[dict[str, int], ...]], ...] = (
    ("IVF_HNSW_SQ", ({}, {"nprobes": 5}, {"nprobes": 40}, {"ef": 100}, {"nprobes": 40, "ef": 100})),
    ("IVF_PQ", ({}, {"refine_factor": 5}, {"refine_factor": 10}, {"nprobes": 40, "refine_factor": 10})),
    ("IVF_FLAT", ({}, {"nprobes": 5}, {"nprobes": 40})),
)


def _time_calls(calls: Sequence[Callable[[], Any]], warm: int = 5) -> tuple[dict[str, float], list[Any]]:
    for call in calls[:warm]:
        call()
    seconds, results = [], []
    for call in calls:
        start = time.perf_counter()
        results.append(call())
        seconds.append(time.perf_counter() - start)
    return latency_stats(seconds), results


def _vector_search(table: Any, vector: np.ndarray, *, limit: int = 10, where: str | None = ACTIVE,
                   columns: Sequence[str] = ("id",), bypass: bool = False, **params: int) -> list[dict[str, Any]]:
    q = table.search(vector, vector_column_name="vector").distance_type("cosine").limit(limit)
    if bypass:
        q = q.bypass_vector_index()
    for name, value in params.items():
        q = getattr(q, name)(value)
    if where:
        q = q.where(where, prefilter=True)
    return q.select(list(columns)).to_list()


def _fts_search(table: Any, text: str, *, limit: int = 50, where: str | None = ACTIVE,
                columns: Sequence[str] = ("id",)) -> list[dict[str, Any]]:
    from retrieval.agent.search import fts_query

    q = table.search(fts_query(text), query_type="fts").limit(limit)
    if where:
        q = q.where(where, prefilter=True)
    return q.select(list(columns)).to_list()


def index_study(n_items: int, *, queries: int = 100, seed: int = 0, embed: str = "model",
                cache_dir: Path | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """Vector index types and parameters, full-text search and table-open cost, measured.

    Runs on a scratch copy of the cached root's published items table (the root itself is
    not touched). Every vector case has the production prefilter ``status = 'active'`` and
    reports recall@10 against exact cosine over the active items (numpy). Query vectors
    come from the real model; on an ``embed="random"`` root recall is meaningless.
    """
    import lancedb

    from retrieval.embeddings import Embedder
    from retrieval.published import PUBLISHED_TAG
    from retrieval.store import ItemStore

    say = progress or (lambda _m: None)
    root, _ = cached_root(n_items, seed=seed, embed=embed, cache_dir=cache_dir, progress=progress)
    store = ItemStore(DataRoot.resolve(root))
    published = store.table()
    data = published.to_arrow()
    vectors = data.column("vector").combine_chunks().flatten().to_numpy().reshape(data.num_rows, -1)
    ids = np.asarray(data.column("id").to_pylist())
    active = np.asarray([s == "active" for s in data.column("status").to_pylist()])
    all_columns = [c for c in data.schema.names if c != "vector"]

    texts = [query_text(c) for c in synthetic_queries(queries, seed=seed + 1)]
    qvecs = Embedder(load_config()).embed(texts)
    exact = np.where(active[None, :], qvecs @ vectors.T, -np.inf)
    truth = [set(ids[np.argsort(-row)[:10]]) for row in exact]
    report: dict[str, Any] = {"items": n_items, "queries": queries, "embedding": embed,
                              "vector_ms": {}, "index_build_seconds": {}, "fts_ms": {}, "open_ms": {},
                              "machine": machine()}

    def vector_case(table: Any, label: str, **kwargs: Any) -> None:
        stats, results = _time_calls([lambda q=q: _vector_search(table, q, **kwargs) for q in qvecs])
        recall = float(np.mean([len(truth[i] & {r["id"] for r in rows[:10]}) / 10 for i, rows in enumerate(results)]))
        report["vector_ms"][label] = {**stats, "recall_at_10": round(recall, 3)}
        say(f"vector {label}: p50 {stats['p50']} ms, p95 {stats['p95']} ms, recall@10 {recall:.3f}")

    def fts_case(table: Any, label: str, **kwargs: Any) -> None:
        stats, _ = _time_calls([lambda t=t: _fts_search(table, t, **kwargs) for t in texts])
        report["fts_ms"][label] = stats
        say(f"fts {label}: p50 {stats['p50']} ms, p95 {stats['p95']} ms")

    cache_dir = Path(cache_dir or default_cache_dir())
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix=".study-") as scratch, warnings.catch_warnings():
        # create_index(metric=..., index_type=...) is deprecated in lancedb 0.40 but is
        # what publish.write_items calls; the study builds indexes the same way.
        warnings.simplefilter("ignore", DeprecationWarning)
        table = lancedb.connect(scratch).create_table("items", data=data)
        vector_case(table, "none (brute force)", bypass=True)
        vector_case(table, "none (brute force), all columns", bypass=True, columns=all_columns)
        for index_type, grid in INDEX_GRID:
            start = time.perf_counter()
            table.create_index(metric="cosine", vector_column_name="vector", index_type=index_type, replace=True)
            report["index_build_seconds"][index_type] = round(time.perf_counter() - start, 1)
            for params in grid:
                suffix = " ".join(f"{k}={v}" for k, v in params.items())
                vector_case(table, f"{index_type} {suffix}".strip(), **params)
            if index_type == "IVF_HNSW_SQ":
                # retrieval fetches 50 candidates per list; recall@10 counts the first 10.
                vector_case(table, "IVF_HNSW_SQ limit=50", limit=50)
                vector_case(table, "IVF_HNSW_SQ, no status filter", where=None)
                vector_case(table, "IVF_HNSW_SQ, all columns", columns=all_columns)

        fts_case(published, "published table")
        fts_case(published, "published table, no status filter", where=None)
        fts_case(published, "published table, limit 50, all columns", columns=all_columns)
        # What a scalar index on status buys the prefilter, for both searches.
        table.create_fts_index("content", replace=True, with_position=False)
        table.create_scalar_index("status", index_type="BITMAP")
        fts_case(table, "with BITMAP(status)")
        table.create_index(metric="cosine", vector_column_name="vector", index_type="IVF_HNSW_SQ", replace=True)
        vector_case(table, "IVF_HNSW_SQ with BITMAP(status)")

    opens = [store.table for _ in range(30)]
    report["open_ms"]["ItemStore.table()"] = _time_calls(opens, warm=2)[0]
    q0, t0 = qvecs[0], texts[0]

    def hybrid(table: Any) -> None:
        _vector_search(table, q0, limit=50, columns=all_columns)
        _fts_search(table, t0, columns=all_columns)

    session = lancedb.Session()

    def open_shared() -> Any:
        # What ItemStore.table() does, on a connection that shares one lancedb Session:
        # index and metadata caches survive reopening the table.
        table = lancedb.connect(str(store.paths.lancedb), session=session).open_table("items")
        table.checkout(PUBLISHED_TAG)
        return table

    report["open_ms"]["hybrid on a cached table"] = _time_calls([lambda: hybrid(published)] * 30, warm=2)[0]
    report["open_ms"]["open + hybrid (no cache)"] = _time_calls([lambda: hybrid(store.table())] * 30, warm=2)[0]
    report["open_ms"]["open, shared Session + hybrid"] = _time_calls([lambda: hybrid(open_shared())] * 30, warm=2)[0]
    say(f"open: {report['open_ms']}")
    return report


# --- the shell --------------------------------------------------------------------------

def items_arg(values: Sequence[str]) -> list[int]:
    out = []
    for value in values:
        for part in value.split(","):
            part = part.strip().replace("_", "").lower()
            if part:
                out.append(int(float(part[:-1]) * 1000) if part.endswith("k") else int(part))
    return out


def format_report(report: dict[str, Any]) -> str:
    def row(name: str, stats: dict[str, float] | None) -> str:
        if not stats:
            return f"  {name:<8} —"
        return f"  {name:<8} p50 {stats['p50']:>7.2f} ms   p95 {stats['p95']:>7.2f} ms   mean {stats['mean']:>7.2f}   max {stats['max']:>7.2f}"

    m = report["machine"]
    lines = [f"{report['items']:,} items · {report['queries']} queries · embedding: {report['embedding']} "
             f"({report['embedding_model']}) · index: {report['index']}",
             row("inject", report["inject_ms"]), row("search", report["search_ms"]), row("embed", report["embed_ms"]),
             row("1st inj", report.get("first_inject_ms")),
             "  inject by stage, p50 ms: " + (" · ".join(f"{k} {v}" for k, v in report["stages_p50_ms"].items())
                                              if report.get("stages_p50_ms") else "—") + f" · data root: {report['data_root']}",
             f"  build {report['build_seconds']} s ({report['cache']}; embedding {report['embed_seconds']} s, "
             f"index {report['index_seconds']} s) · {m['cpus']} CPUs · torch threads "
             f"{m.get('torch_threads', '?')} · load {m.get('load_avg_1m', '?')}"]
    if report.get("inject_error"):
        lines.append(f"  inject failed: {report['inject_error']}")
    return "\n".join(lines)


def format_study(study: dict[str, Any]) -> str:
    lines = [f"index study, {study['items']:,} items, {study['queries']} queries (embedding: {study['embedding']})"]
    for section in ("vector_ms", "fts_ms", "open_ms"):
        for label, st in study[section].items():
            recall = f"   recall@10 {st['recall_at_10']:.3f}" if "recall_at_10" in st else ""
            lines.append(f"  {section[:-3]:<6} {label:<42} p50 {st['p50']:>7.2f} ms   p95 {st['p95']:>7.2f} ms{recall}")
    builds = ", ".join(f"{k} {v} s" for k, v in study["index_build_seconds"].items())
    lines.append(f"  index builds: {builds}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memory bench retrieval", description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", action="append", required=True, metavar="N",
                        help="items in the store; repeat or comma-separate (10000,100000 or 10k,100k)")
    parser.add_argument("--queries", type=int, default=200, help="timed queries (default 200)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed queries first (default 20)")
    parser.add_argument("--embed", choices=EMBED_MODES, default="model",
                        help="item vectors: the real model (default; 100k ≈ 8 min once) or random unit vectors")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--torch-threads", type=int, default=None, metavar="N",
                        help="torch threads for the query embedding (default: embedding.query_threads in the config)")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help=f"where built data roots are kept (default {default_cache_dir()})")
    parser.add_argument("--study", action="store_true",
                        help="also compare vector index types, full-text search and table-open cost")
    parser.add_argument("--s3", action="store_true",
                        help="read the built root from an S3-compatible server (moto) started on 127.0.0.1")
    parser.add_argument("--json", action="store_true", help="print a JSON list of reports")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    progress = stderr_progress("bench retrieval")

    try:
        sizes = items_arg(args.items)
        reports = []
        with contextlib.ExitStack() as stack:
            server = None
            if args.s3:
                from evals.bench.s3 import local_s3, s3_env

                server = stack.enter_context(local_s3())
                stack.enter_context(s3_env(server))
            for n in sizes:
                reports.append(_one(args, n, server, progress))
    except (BenchError, ValueError) as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(reports, indent=2, ensure_ascii=False))
    return 0


def _one(args: argparse.Namespace, n: int, server: Any, progress: Progress) -> dict[str, Any]:
    report = run_bench(n, queries=args.queries, warmup=args.warmup, seed=args.seed, embed=args.embed,
                       cache_dir=args.cache_dir, torch_threads=args.torch_threads, progress=progress, s3=server)
    if args.study:
        report["study"] = index_study(n, seed=args.seed, embed=args.embed, cache_dir=args.cache_dir,
                                      progress=progress)
    if not args.json:
        print(format_report(report), flush=True)
        if args.study:
            print(format_study(report["study"]), flush=True)
    return report


if __name__ == "__main__":
    raise SystemExit(main())
