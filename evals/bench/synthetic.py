"""The synthetic memory the benches run on: items and questions that read like real ones.

People, vehicles, work decisions, preferences, health, hobbies… drawn from a fixed
vocabulary by a seeded generator, so the same seed gives the same sentences in every
bench (``synthetic_items`` for the retrieval and quality benches' data roots and the
nightly bench's facts, ``synthetic_queries`` for the questions an agent asks of them).
"""

from __future__ import annotations

import hashlib
import random
from datetime import datetime, timedelta, timezone
from typing import Any

import polars as pl

from evals.bench import BenchError
from retrieval import dates
from retrieval.config import MemoryConfig

# The synthetic memory's clock: items are dated up to two years before it, and every
# inject runs "now" at this instant, so ages, decay and staleness are reproducible.
BENCH_NOW = datetime(2026, 1, 15, 9, 0, tzinfo=timezone.utc)
UNTRUSTED_SHARE = 0.05
SUPERSEDED_SHARE = 0.03
ITEMS_PER_SESSION = 20


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
WEEKDAYS = tuple(d.title() for d in dates.WEEKDAYS[:5])
MONTHS = tuple(m.title() for m in dates.MONTHS)


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


def synthetic_items(n_items: int, *, config: MemoryConfig, seed: int = 0) -> pl.DataFrame:
    """``n_items`` distinct item rows (ITEM_SCHEMA) built the way the pipeline builds them.

    Facts get importance and confidence from ``retrieval.scoring`` and become items through
    ``facts_to_items``; about 5% are untrusted and 3% superseded by a later item.
    """
    from retrieval.ids import content_hash
    from memory_assets.lib.extraction.facts import fact_id
    from memory_assets.lib.items.consolidation import facts_to_items
    from retrieval import scoring
    from memory_assets.lib.extraction.fields import with_fields
    from retrieval.schema import FACT_SCHEMA, ITEM_SCHEMA

    templates = [t for t in TEMPLATES if t[0] in config.categories]
    if not templates:
        raise BenchError(f"none of the bench's categories is configured ({', '.join(config.categories)})")
    rng = random.Random(seed)
    namespace = config.default_namespace
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
