"""Category summaries: tier 1 of retrieval, one short markdown page per category.

A summary is what an agent reads first ("what do I know about the user's vehicle?"):
the category's most valuable active facts, contradictions resolved, each line citing
the item ids it rests on as ``[id]`` so a check can verify that every cited item exists.

Two summarizers behind one function (DESIGN principle 3):

- **LLM** (``llm`` given): the current summary plus the new facts are rewritten into one
  page with ``prompts/summarize_category.md``. The reply is validated — every bullet
  cites, only known ids are cited, the caps hold — and retried with a repair message up
  to ``[llm] max_retries`` times before ``SummaryFailed`` is raised with the raw reply.
- **Offline**: extractive. Active facts ordered by ``retrieval.scoring.memory_score``,
  near-duplicates dropped, at most ``[summaries] max_items`` facts and ``max_chars``
  characters, one bullet per fact.

Only active, trusted, unexpired items are summarized: retrieval serves summary lines as
trusted context (``retrieval.agent.retrieve.tier1``), so an untrusted fact stays in tier 2 where
it keeps its ``[untrusted]`` tag.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import polars as pl

from retrieval.citations import cited_ids, strip_citations, summary_lines
from retrieval.config import MemoryConfig
from retrieval.llm import InvalidReply, LLMOutputFailed, Prompt, complete_validated, load_prompt
from retrieval.llm import chat_client as llm_client
from retrieval.moments import utc
from retrieval.scoring import belief, memory_score
from retrieval.spans import spanned
from retrieval.text import normalize, tokens
from retrieval.text import QUERY_STOPWORDS as STOPWORDS

PROMPT_NAME = "summarize_category"

_FENCE = re.compile(r"^\s*```(?:markdown|md)?\s*(.*?)\s*```\s*$", re.DOTALL)
# Text inside a fact that could close our data blocks early is neutralised.
_BLOCK_TAG = re.compile(r"</?\s*(facts|current-summary)\s*>", re.IGNORECASE)


class SummaryFailed(LLMOutputFailed):
    """The LLM's summary failed validation on every attempt, or the endpoint failed: the
    failure is quarantined and the previous summary stays published."""


@dataclass(frozen=True)
class Summary:
    """One category's summary, as written to ``<summary_file>`` and the ``summaries`` table.

    Attributes:
        category: the configured category, e.g. ``"vehicle"``.
        file_name: ``[categories.<name>] summary_file``, e.g. ``"vehicle.md"``.
        text: the markdown: ``# Vehicle`` then one bullet per fact, citations as ``[id]``.
        item_ids: every cited item id, in order of first citation.
        version: ``<UTC stamp>-<first 8 hex of the text's sha256>``.
        updated_at: the ``now`` it was written at.
        summarizer: ``"offline"`` or ``"llm"``.
        prompt_version: the prompt's content hash (LLM path only).
        model: the chat model (LLM path only).
        prompt_tokens: tokens sent, over every attempt.
        completion_tokens: tokens received, over every attempt.
        cost_usd: what those tokens cost at the ``[llm]`` prices.
    """

    category: str
    file_name: str
    text: str
    item_ids: tuple[str, ...]
    version: str
    updated_at: datetime
    summarizer: str
    prompt_version: str | None = None
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def content(self) -> str:
        """The text without citations: what tier 1 embeds and quotes to the agent."""
        return strip_citations(self.text)


# --- citations (their grammar is in retrieval.citations: tier 1 reads them) ---------


def missing_citations(summary: Summary, known_ids: set[str] | pl.Series) -> list[str]:
    """Cited ids that are not among ``known_ids`` (the check: every cited item exists)."""
    known = set(known_ids.to_list()) if isinstance(known_ids, pl.Series) else set(known_ids)
    return [i for i in summary.item_ids if i not in known]


# --- which facts a summary may hold ----------------------------------------------


def _title(category: str) -> str:
    words = category.replace("_", " ").replace("-", " ")
    return words[:1].upper() + words[1:]


def _eligible(row: dict, now: datetime) -> bool:
    expires = row.get("expires_at")
    return (
        (row.get("status") or "active") == "active"
        and row.get("source_trust") != "untrusted"
        and (expires is None or expires > now)
    )


@dataclass
class _Plan:
    """What goes into one summary: scored new facts, carried lines, retired ids."""

    facts: list[tuple[float, dict]] = field(default_factory=list)
    carried: list[tuple[str, list[str]]] = field(default_factory=list)
    retired: set[str] = field(default_factory=set)

    @property
    def allowed_ids(self) -> set[str]:
        ids = {row["id"] for _, row in self.facts}
        for _, cited in self.carried:
            ids.update(cited)
        return ids


def _plan(category: str, current_summary: str | None, new_items: pl.DataFrame,
          config: MemoryConfig, now: datetime) -> _Plan:
    plan = _Plan()
    fresh: set[str] = set()
    for row in new_items.iter_rows(named=True):
        fresh.add(row["id"])  # includes items that moved to another category
        if row.get("supersedes"):
            plan.retired.add(row["supersedes"])  # a correction may land in another category
        if row.get("category") != category:
            continue
        if _eligible(row, now):
            plan.facts.append((memory_score(config, row, now), row))
        else:
            plan.retired.add(row["id"])
    plan.retired |= _doubted(row for _, row in plan.facts)
    plan.facts = [(s, r) for s, r in plan.facts if r["id"] not in plan.retired]
    # Highest score first; among equals the newer fact, then the id, so the order is stable.
    plan.facts.sort(key=lambda sr: (-sr[0], -_ts(sr[1].get("created_at")), sr[1]["id"]))
    for text, ids in summary_lines(current_summary or ""):
        # A carried line whose item came back in ``new_items`` is replaced by that row.
        if ids and not (set(ids) & (plan.retired | fresh)):
            plan.carried.append((text, ids))
    return plan


def _doubted(rows) -> set[str]:
    """Of two facts here that contradict each other, the one less believed (lower
    confidence, then older: ``retrieval.scoring.belief``): a summary states one side.
    Retrieval still shows the other, flagged, next to the line (``retrieval.agent.retrieve.tier1``)."""
    by_id = {row["id"]: row for row in rows}
    out: set[str] = set()
    for row in by_id.values():
        for other_id in row.get("contradicts") or []:
            other = by_id.get(other_id)
            if other is not None and belief(other["confidence"], other.get("created_at")) > \
                    belief(row["confidence"], row.get("created_at")):
                out.add(row["id"])
    return out


def _ts(value: datetime | None) -> float:
    return value.timestamp() if value is not None else 0.0


def _words(text: str) -> frozenset[str]:
    words = (w.removesuffix("'s") for w in tokens(text.lower()))
    return frozenset(w for w in words if w not in STOPWORDS)


def _near_duplicate(words: frozenset[str], kept: list[frozenset[str]], bar: float) -> bool:
    """Two facts sharing ``bar`` of their content words say the same thing twice."""
    for other in kept:
        overlap = len(words & other) / max(len(words | other), 1)
        if overlap >= bar:
            return True
    return False


def _one_line(text: str) -> str:
    # Brackets are how citations are written: a fact's own brackets must not forge one.
    return " ".join(text.split()).replace("[", "(").replace("]", ")")


def version_stamp(now: datetime) -> str:
    """``now`` to the second, for a summary's version and its archived file's name."""
    return utc(now).strftime("%Y%m%dT%H%M%SZ")


def _summary(category: str, text: str, config: MemoryConfig, now: datetime, **fields: Any) -> Summary:
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    return Summary(
        category=category,
        file_name=config.category(category).summary_file,
        text=text,
        item_ids=tuple(cited_ids(text)),
        version=f"{version_stamp(now)}-{digest}",
        updated_at=now,
        **fields,
    )


# --- the offline summarizer -------------------------------------------------------


def bulleted(title: str, lines: list[tuple[str, list[str]]], config: MemoryConfig, max_items: int) -> tuple[str, int]:
    """The extractive page: ``# title`` then one bullet per (fact, cited ids) in order,
    near-duplicates dropped, at most ``max_items`` bullets and ``[summaries] max_chars``
    characters. Returns the text and how many bullets it holds (category summaries and
    entity pages are both written this way)."""
    max_chars = int(config.summaries.max_chars)
    text = f"# {title}\n" + ("\n" if lines else "")
    seen_hashes: set[str] = set()
    kept_words: list[frozenset[str]] = []
    count = 0
    for fact, ids in lines:
        if count >= max_items:
            break
        key = normalize(fact)
        words = _words(fact)
        if not key or key in seen_hashes or _near_duplicate(words, kept_words, config.summaries.near_duplicate_overlap):
            continue
        line = f"- {fact} " + " ".join(f"[{i}]" for i in ids) + "\n"
        if len(text) + len(line) > max_chars:
            continue  # a shorter fact further down may still fit
        text += line
        seen_hashes.add(key)
        kept_words.append(words)
        count += 1
    return text, count


def _offline(category: str, plan: _Plan, config: MemoryConfig, now: datetime) -> Summary:
    # Carried lines have no row to score; they rank after the new facts until the weekly
    # rebuild scores everything afresh (pass the whole category to summarize it exactly).
    lines = [(_one_line(r["content"]), [r["id"]]) for _, r in plan.facts] + plan.carried
    text, _ = bulleted(_title(category), lines, config, int(config.summaries.max_items))
    return _summary(category, text, config, now, summarizer="offline")


# --- the LLM summarizer -----------------------------------------------------------


def chat_client(config: MemoryConfig) -> Any:
    """An ``openai.OpenAI`` for summaries and insights, or None when the LLM path is off
    (``[llm] enabled``; see ``retrieval.llm.chat_client``)."""
    return llm_client(config) if config.llm_enabled else None


def _data(text: str) -> str:
    return _BLOCK_TAG.sub("(block marker)", " ".join(text.split()))


def render_request(category: str, current_summary: str | None, plan: _Plan) -> str:
    """The user message: the current summary, the retired ids and the new facts, as data."""
    current = _BLOCK_TAG.sub("(block marker)", (current_summary or "").strip()) or "(none yet)"
    retired = "\n".join(f"- {i}" for i in sorted(plan.retired)) or "(none)"
    facts = "\n".join(
        f"[{row['id']}] ({row.get('kind') or 'fact'}; confidence {float(row.get('confidence') or 0):.2f}; "
        f"score {score:.3f}; {(row.get('created_at') or row.get('updated_at') or datetime.min).date().isoformat()}) "
        f"{_data(row['content'])}"
        for score, row in plan.facts
    ) or "(none)"
    return (
        f"Category: {category}\n\n"
        f"Current summary:\n<current-summary>\n{current}\n</current-summary>\n\n"
        f"Retired item ids (superseded, purged, archived or expired; drop every line citing them):\n{retired}\n\n"
        "New facts, highest score first, one per line as [id] (kind; confidence; score; date) text:\n"
        f"<facts>\n{facts}\n</facts>"
    )


def _problems(text: str, plan: _Plan, config: MemoryConfig) -> list[str]:
    problems = []
    bullets = summary_lines(text)
    unknown = [i for i in cited_ids(text) if i not in plan.allowed_ids]
    if unknown:
        problems.append(f"it cites ids that are not in the facts or the current summary: {', '.join(unknown[:10])}")
    retired = [i for i in cited_ids(text) if i in plan.retired]
    if retired:
        problems.append(f"it cites retired ids: {', '.join(retired[:10])}")
    uncited = [t for t, ids in bullets if not ids]
    if uncited:
        problems.append(f"{len(uncited)} bullet(s) cite no item id, e.g. {uncited[0][:80]!r}")
    if (plan.facts or plan.carried) and not bullets:
        problems.append("it has no bullet lines")
    if len(bullets) > int(config.summaries.max_items):
        problems.append(f"it has {len(bullets)} bullets; the limit is {config.summaries.max_items}")
    if len(text) > int(config.summaries.max_chars):
        problems.append(f"it is {len(text)} characters; the limit is {config.summaries.max_chars}")
    return problems


def _markdown(raw: str, category: str) -> str:
    fenced = _FENCE.match(raw)
    text = (fenced.group(1) if fenced else raw).strip()
    lines = text.splitlines()
    # The header is ours to fix, not worth a retry: drop whatever header came back.
    if lines and lines[0].lstrip().startswith("#"):
        lines = lines[1:]
    body = "\n".join(lines).strip()
    return f"# {_title(category)}\n" + (f"\n{body}\n" if body else "")


def _llm(category: str, current_summary: str | None, plan: _Plan, config: MemoryConfig,
         now: datetime, client: Any) -> Summary:
    if not plan.facts and not plan.carried:
        return _offline(category, plan, config, now)  # nothing left to summarize: no call
    prompt: Prompt = load_prompt(PROMPT_NAME)
    model = str(config.llm.model)
    system = prompt.render(
        category=category, title=_title(category),
        max_items=config.summaries.max_items, max_chars=config.summaries.max_chars,
    )
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": render_request(category, current_summary, plan)},
    ]

    def parse(raw: str) -> str:
        text = _markdown(raw, category)
        problems = _problems(text, plan, config)
        if problems:
            raise InvalidReply("; ".join(problems))
        return text

    def repair(problem: str) -> str:
        return (f"Your summary could not be used: {problem}. Write it again following the rules: one bullet "
                "per fact, each ending with the [id] of every fact it rests on, citing only ids shown in the "
                "facts or the current summary.")

    try:
        text, usage = complete_validated(client, messages, parse, repair, model=model,
                                         temperature=config.llm.temperature, attempts=1 + config.llm.max_retries,
                                         what=f"summary of {category!r}")
    except LLMOutputFailed as failed:
        raise SummaryFailed(failed.reason, raw_response=failed.raw_response, attempts=failed.attempts,
                            prompt_tokens=failed.prompt_tokens, completion_tokens=failed.completion_tokens) from failed
    return _summary(
        category, text, config, now, summarizer="llm", prompt_version=prompt.version, model=model,
        prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens, cost_usd=usage.cost_usd(config),
    )


# --- the public functions ---------------------------------------------------------


@spanned("summarize")
def summarize(category: str, current_summary: str | None, new_items: pl.DataFrame,
              config: MemoryConfig, now: datetime, *, llm: Any = None) -> Summary:
    """Fold new facts into a category's summary.

    Args:
        category: a configured category.
        current_summary: the summary's current markdown, or None for a first summary.
        new_items: item rows (``ITEM_SCHEMA``) that are new or changed since
            ``current_summary``; rows of other categories only retire lines. Non-active,
            untrusted or expired rows retire the lines citing them; a row's ``supersedes``
            retires the item it replaces. Passing every item summarizes the category
            exactly.
        config: the memory config (``[summaries]`` caps, ``[llm]`` model and prices).
        now: the clock, for scores and the version stamp.
        llm: an ``openai.OpenAI`` client (see ``chat_client``) for the LLM path; None for
            the offline, extractive path.

    Raises:
        SummaryFailed: the LLM's reply never validated, or the endpoint failed.
    """
    config.category(category)  # an unknown category is a config error, named clearly
    plan = _plan(category, current_summary, new_items, config, now)
    if llm is None:
        return _offline(category, plan, config, now)
    return _llm(category, current_summary, plan, config, now, llm)


@spanned("summaries rebuild")
def rebuild(items: pl.DataFrame, config: MemoryConfig, now: datetime, *, llm: Any = None) -> list[Summary]:
    """Every category's summary from scratch (the weekly rebuild), in config order.

    Categories with no summarizable item (active, trusted, unexpired) get no summary.
    """
    out = []
    for category in config.categories:
        rows = items.filter(pl.col("category") == category) if items.height else items
        if any(_eligible(r, now) for r in rows.iter_rows(named=True)):
            out.append(summarize(category, None, rows, config, now, llm=llm))
    return out
