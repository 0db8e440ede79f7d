"""The labelled sessions the extraction eval scores against, loaded and checked.

* the **gold set** (``evals/gold/``, see its README): hand-labelled agent sessions, each
  with the facts that must be extracted and what must not (``load_gold``); a malformed
  file is a ``GoldError`` naming the file and the field;
* **LoCoMo** conversations, whose per-session observations are silver labels
  (``load_locomo``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.locomo import parse_evidence
from memory_assets.lib.ingest.transcripts import parse_transcript, parse_ts, safe_session_id
from retrieval.config import MemoryConfig
from retrieval.credentials import redact
from retrieval.schema import KINDS, ROLES, TIERS, TRUST, UNTRUSTED_START, Turn

GOLD_DIR = Path(__file__).resolve().with_name("gold")
DOMAINS = ("coding", "personal")
ATTACKS = (
    "untrusted_instruction",   # an instruction inside tool output or [UNTRUSTED DATA]
    "untrusted_fake_fact",     # a false claim inside tool output or [UNTRUSTED DATA]
    "credential",              # a secret pasted in chat or printed by a tool
    "unconfirmed_guess",       # an assistant guess the user never confirmed
    "injected_memory_echo",    # a recalled memory block pasted back into a turn
    "reversed_preference",     # a value or preference changed later (supersedes)
    "system_prompt",           # content of the system prompt, restated or not
    "hallucinated_profile",    # the assistant inventing who the user is
)


class GoldError(ValueError):
    """A gold session file that does not follow ``evals/gold/README.md``; names file and line."""


# --- the gold set -----------------------------------------------------------------------

@dataclass(frozen=True)
class GoldFact:
    content: str
    category: str
    kind: str
    tier: str
    source_trust: str
    supersedes: str | None
    source_turns: tuple[int, ...]
    also_category: tuple[str, ...] = ()
    also_kind: tuple[str, ...] = ()

    def category_ok(self, category: str) -> bool:
        return category == self.category or category in self.also_category

    def kind_ok(self, kind: str) -> bool:
        return kind == self.kind or kind in self.also_kind


@dataclass(frozen=True)
class GoldSession:
    session_id: str
    description: str
    domain: str
    attacks: tuple[str, ...]
    turns: tuple[dict[str, Any], ...]
    facts: tuple[GoldFact, ...]
    optional: tuple[str, ...]
    must_not: tuple[str, ...]
    source: str

    @property
    def adversarial(self) -> bool:
        return bool(self.attacks)

    @property
    def confirmed_turns(self) -> set[int]:
        """Assistant turns a gold fact cites: statements the user confirmed."""
        roles = {t["turn"]: t["role"] for t in self.turns}
        return {n for f in self.facts for n in f.source_turns if roles.get(n) == "assistant"}


def _strings(value: Any, where: str, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise GoldError(f"{where}: {what!r} must be a list of non-empty strings")
    return tuple(value)


def _fact(raw: Any, where: str, turns: dict[int, dict[str, Any]], config: MemoryConfig) -> GoldFact:
    if not isinstance(raw, dict):
        raise GoldError(f"{where}: a fact must be a JSON object")
    for key in ("content", "category", "kind", "tier", "source_trust", "source_turns"):
        if key not in raw:
            raise GoldError(f'{where}: missing "{key}"')
    content = raw["content"]
    if not isinstance(content, str) or not content.strip():
        raise GoldError(f'{where}: "content" must be a non-empty string')
    checks = (("category", tuple(config.categories)), ("kind", KINDS), ("tier", TIERS), ("source_trust", TRUST))
    for key, vocabulary in checks:
        if raw[key] not in vocabulary:
            raise GoldError(f'{where}: "{key}" is {raw[key]!r}; expected one of {", ".join(vocabulary)}')
    also_category = _strings(raw.get("also_category", []), where, "also_category")
    also_kind = _strings(raw.get("also_kind", []), where, "also_kind")
    for value in also_category:
        if value not in config.categories:
            raise GoldError(f"{where}: also_category {value!r} is not a configured category")
    for value in also_kind:
        if value not in KINDS:
            raise GoldError(f"{where}: also_kind {value!r} is not a kind")
    supersedes = raw.get("supersedes")
    if supersedes is not None and (not isinstance(supersedes, str) or not supersedes.strip()):
        raise GoldError(f'{where}: "supersedes" must be null or a non-empty string')
    cited = raw["source_turns"]
    if not isinstance(cited, list) or not cited or not all(isinstance(n, int) and not isinstance(n, bool) for n in cited):
        raise GoldError(f'{where}: "source_turns" must be a non-empty list of turn numbers')
    unknown = sorted(set(cited) - set(turns))
    if unknown:
        raise GoldError(f"{where}: source_turns {unknown} are not turns of this session")
    roles = [turns[n]["role"] for n in cited]
    if "system" in roles:
        raise GoldError(f"{where}: a fact never comes from a system turn")
    if raw["source_trust"] == "trusted" and "user" not in roles:
        raise GoldError(f"{where}: a trusted fact must cite a user turn (an assistant turn only with the user's confirmation)")
    if raw["source_trust"] == "untrusted" and not any(
            turns[n]["role"] == "tool" or turns[n].get("trust") == "untrusted" or UNTRUSTED_START in turns[n]["content"]
            for n in cited):
        raise GoldError(f"{where}: an untrusted fact must cite a tool turn or [UNTRUSTED DATA]")
    return GoldFact(content.strip(), raw["category"], raw["kind"], raw["tier"], raw["source_trust"],
                    supersedes.strip() if supersedes else None, tuple(cited), also_category, also_kind)


def parse_gold_session(raw: Any, where: str, config: MemoryConfig) -> GoldSession:
    """Validate one gold session (a parsed JSON object) against ``config``'s categories;
    ``where`` names it in errors."""
    if not isinstance(raw, dict):
        raise GoldError(f"{where}: a gold session must be a JSON object")
    for key in ("session_id", "description", "turns", "facts", "must_not"):
        if key not in raw:
            raise GoldError(f'{where}: missing "{key}"')
    session_id = raw["session_id"]
    if not isinstance(session_id, str) or safe_session_id(session_id) != session_id:
        raise GoldError(f'{where}: "session_id" must be a string of [A-Za-z0-9._-]')
    domain = raw.get("domain", "coding")
    if domain not in DOMAINS:
        raise GoldError(f'{where}: "domain" is {domain!r}; expected one of {", ".join(DOMAINS)}')
    attacks = _strings(raw.get("attacks", []), where, "attacks")
    for attack in attacks:
        if attack not in ATTACKS:
            raise GoldError(f"{where}: unknown attack {attack!r}; expected one of {', '.join(ATTACKS)}")
    if not isinstance(raw["turns"], list) or not raw["turns"]:
        raise GoldError(f'{where}: "turns" must be a non-empty list')
    turns: dict[int, dict[str, Any]] = {}
    for i, turn in enumerate(raw["turns"]):
        here = f"{where} turns[{i}]"
        if not isinstance(turn, dict):
            raise GoldError(f"{here}: a turn must be a JSON object")
        for key in ("turn", "role", "content", "ts"):
            if key not in turn:
                raise GoldError(f'{here}: missing "{key}"')
        n = turn["turn"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 0 or n in turns:
            raise GoldError(f'{here}: "turn" must be a unique non-negative integer, got {n!r}')
        if turn["role"] not in ROLES:
            raise GoldError(f'{here}: "role" is {turn["role"]!r}; expected one of {", ".join(ROLES)}')
        if turn.get("trust", "trusted") not in TRUST:
            raise GoldError(f'{here}: "trust" is {turn["trust"]!r}; expected trusted or untrusted')
        if not isinstance(turn["content"], str):
            raise GoldError(f'{here}: "content" must be a string')
        if turn.get("session_id", session_id) != session_id:
            raise GoldError(f"{here}: belongs to session {turn['session_id']!r}, not {session_id!r}")
        try:
            parse_ts(turn["ts"])
        except (ValueError, OverflowError) as exc:
            raise GoldError(f'{here}: "ts" does not parse: {exc}') from None
        turns[n] = turn
    if not isinstance(raw["facts"], list):
        raise GoldError(f'{where}: "facts" must be a list')
    facts = tuple(_fact(f, f"{where} facts[{i}]", turns, config) for i, f in enumerate(raw["facts"]))
    return GoldSession(
        session_id=session_id, description=str(raw["description"]), domain=domain, attacks=attacks,
        turns=tuple(turns[n] for n in sorted(turns)), facts=facts,
        optional=_strings(raw.get("optional", []), where, "optional"),
        must_not=_strings(raw["must_not"], where, "must_not"), source=where,
    )


def load_gold(path: str | Path = GOLD_DIR, *, config: MemoryConfig) -> list[GoldSession]:
    """Gold sessions from a folder (``*.json`` one session each, ``*.jsonl`` one per line)
    or from one such file, sorted by session id."""
    path = Path(path)
    files = sorted([*path.glob("*.json"), *path.glob("*.jsonl")]) if path.is_dir() else [path]
    if not files:
        raise GoldError(f"{path}: no gold session files (*.json, *.jsonl)")
    sessions: list[GoldSession] = []
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise GoldError(f"{file}: cannot read ({exc.strerror})") from None
        if file.suffix == ".jsonl":
            docs = [(f"{file} line {i}", line) for i, line in enumerate(text.splitlines(), start=1) if line.strip()]
        else:
            docs = [(str(file), text)]
        for where, doc in docs:
            try:
                raw = json.loads(doc)
            except json.JSONDecodeError as exc:
                raise GoldError(f"{where}: invalid JSON ({exc.msg}, line {exc.lineno} column {exc.colno})") from None
            sessions.append(parse_gold_session(raw, where, config))
    seen: dict[str, str] = {}
    for s in sessions:
        if s.session_id in seen:
            raise GoldError(f"{s.source}: session_id {s.session_id!r} is also used by {seen[s.session_id]}")
        seen[s.session_id] = s.source
    return sorted(sessions, key=lambda s: s.session_id)


def session_turns(session_id: str, messages: Sequence[dict[str, Any]]) -> list[Turn]:
    """Canonical messages as the pipeline's resources: credentials redacted, tool turns untrusted."""
    turns = []
    for m in sorted(messages, key=lambda m: m["turn"]):
        ts = m["ts"]
        turns.append(Turn(
            session_id=session_id, turn=m["turn"], role=m["role"], content=redact(m["content"]),
            content_at=parse_ts(ts) if isinstance(ts, str) else ts,
            speaker=str(m.get("speaker") or m["role"]),
            trust=m.get("trust") or ("untrusted" if m["role"] == "tool" else "trusted"),
            external_id=m.get("external_id"), resource_id=f"{session_id}:{m['turn']}",
        ))
    return turns


# --- LoCoMo ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Observation:
    """One LoCoMo ``session_N_observation`` fact: who it is about, what, from which turns."""

    speaker: str
    text: str
    dia_ids: tuple[str, ...]


@dataclass(frozen=True)
class LocomoSession:
    session_id: str
    turns: tuple[Turn, ...]
    observations: tuple[Observation, ...]


_OBSERVATION_KEY = re.compile(r"^session_(\d+)_observation$")


def load_locomo(path: str | Path) -> list[LocomoSession]:
    """The sessions of one LoCoMo file with their observations (sessions without any are skipped)."""
    path = Path(path)
    parsed = parse_transcript(path, "locomo")
    by_session = parsed.sessions()
    doc = json.loads(path.read_text(encoding="utf-8"))
    conv = doc.get("conversation", doc)
    sample = safe_session_id(str(doc.get("sample_id") or path.stem))
    out = []
    for key, value in conv.items():
        found = _OBSERVATION_KEY.match(key)
        if not found or not isinstance(value, dict):
            continue
        session_id = f"{sample}-s{int(found.group(1))}"
        if session_id not in by_session:
            continue
        observations = tuple(
            Observation(str(speaker), str(item[0]), parse_evidence(item[1] if isinstance(item[1], list) else [item[1]]))
            for speaker, items in value.items() for item in items
            if isinstance(item, list) and len(item) >= 2 and str(item[0]).strip()
        )
        if observations:
            out.append(LocomoSession(session_id, tuple(session_turns(session_id, by_session[session_id])), observations))
    return sorted(out, key=lambda s: int(s.session_id.rsplit("-s", 1)[1]))
