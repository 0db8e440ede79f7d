"""Extraction eval: do the facts that reach items say what a careful human labelled?

Each session's turns are redacted as ``resources`` redacts them, run through an
extractor (offline rules or the LLM) and then through the pipeline's own
``build_facts`` — the write gate, scoring and trust — because what counts is what
reaches items. Two datasets:

* **gold** (``evals/gold/``, see its README): hand-labelled agent sessions with the
  facts that must be extracted and the things that must not (``must_not``).
  Reports precision, recall and F1 (extracted facts matched one-to-one to gold facts;
  see ``evals.scorers``), category / kind / trust accuracy and supersedes accuracy over
  the matches, the **junk rate** (extracted facts that match nothing labelled and are
  not supported by any trusted user sentence or confirmed assistant statement) and
  **leaks** (credentials or ``must_not`` content in an extracted fact — must be 0).
* **locomo** (``/work/shared/datasets/locomo/``): each session's
  ``session_N_observation`` facts are silver labels. Recall is the share of
  observations some extracted fact of that session says (many-to-one); "recall, joined"
  also counts an observation that the facts from its own ``dia_id`` turns say together
  (an extractor that splits a compound observation into atomic facts); turn coverage is
  the share with any extracted fact from the observation's ``dia_id``. Observations are
  not exhaustive, so LoCoMo precision is a lower bound.

    memory eval extraction [--dataset gold|locomo|PATH] [--extractor offline|llm] [--threshold COSINE] [--details] [--json]

The exit status is 1 when any fact leaked, so CI can gate on it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.gold_sets import GOLD_DIR, GoldError, GoldSession, LocomoSession, load_gold, load_locomo, session_turns
from evals.locomo import default_dir as default_locomo_dir
from evals.scorers import (
    THRESHOLD,
    FactMatcher,
    LLMJudge,
    leak_reason,
    supersedes_overlap,
)
from memory_assets.lib.extraction.base import ExtractionFailed, segments
from retrieval.llm import llm_configured
from memory_assets.lib.extraction.facts import build_facts
from memory_assets.lib.extraction.session import choose_extractor
from memory_assets.lib.ingest.transcripts import TranscriptError
from retrieval.config import MemoryConfig, load_config
from retrieval.credentials import redact
from retrieval.schema import Turn
from evals.extraction_report import format_report, summary



class EvalError(RuntimeError):
    """The eval cannot run: an unknown dataset or extractor; the message says what to pass."""


class NoSessions(EvalError):
    """The dataset holds none of the sessions asked for."""


# --- running an extractor ----------------------------------------------------------------

@dataclass
class Run:
    """What one session's extraction left after the write gate."""

    facts: list[dict[str, Any]]
    rejected: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failed: str | None = None


def build_extractor(name: str, config: MemoryConfig) -> Any:
    if name not in ("offline", "llm"):
        raise EvalError(f"unknown extractor {name!r}; use offline or llm")
    return choose_extractor(name, config)


def run_session(extractor: Any, turns: list[Turn], config: MemoryConfig) -> Run:
    """Extract, then gate and score with the pipeline's own ``build_facts``."""
    session_id = turns[0].session_id
    try:
        result = extractor.extract(turns)
    except ExtractionFailed as failure:
        # The pipeline would quarantine it: nothing reaches items, the tokens were still spent.
        return Run([], prompt_tokens=failure.prompt_tokens, completion_tokens=failure.completion_tokens,
                   failed=failure.reason)
    gated = build_facts(result.candidates, turns, config, session_id=session_id, extractor=extractor.name,
                        prompt_version=extractor.version, now=max(t.content_at for t in turns))
    return Run(gated.facts.to_dicts(), gated.rejections.height, result.prompt_tokens, result.completion_tokens)


# --- what the transcript supports --------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# "The vet told us she's allergic to chicken, I just didn't check the label": the first
# clause supports a fact the whole sentence (negated) would not.
_CLAUSE = re.compile(r"[,;:]\s+|\s+-+\s+|\s+(?:but|so|and|because)\s+", re.IGNORECASE)
_AFFIRMS = re.compile(
    r"^\W*(?:yes|yeah|yep|yup|right|exactly|correct|sure|ok|okay|perfect|great|good|indeed|absolutely)\b",
    re.IGNORECASE)
_GENERIC = {"user", "human", "me", "assistant", "ai", "bot"}


def _in_third_person(text: str, name: str, second_person: bool) -> str:
    """"I moved to York" said by Tariq as "Tariq moved to York" (and "you" for an
    assistant statement the user confirmed), so it compares with an extracted fact."""
    if second_person:
        rules = ((r"\byou're\b|\byou are\b", f"{name} is"), (r"\byou've\b", f"{name} has"),
                 (r"\byour\b", f"{name}'s"), (r"\byou\b", name))
    else:
        rules = ((r"\bI'm\b|\bI am\b", f"{name} is"), (r"\bI've\b", f"{name} has"), (r"\bI'll\b", f"{name} will"),
                 (r"\bI'd\b", f"{name} would"), (r"\bI\b", name), (r"\bmy\b|\bour\b|\bmine\b", f"{name}'s"),
                 (r"\bme\b|\bwe\b|\bus\b", name))
    for pattern, repl in rules:
        text = re.sub(pattern, repl, text, flags=re.IGNORECASE if pattern != r"\bI\b" else 0)
    return text


def affirmed(turns: Sequence[Turn]) -> set[int]:
    """Assistant turns the user's next message opens by agreeing with ("Yes, …", "Right.")."""
    ordered = [t for t in turns if t.role != "tool"]
    return {t.turn for t, reply in zip(ordered, ordered[1:])
            if t.role == "assistant" and reply.role == "user" and _AFFIRMS.match(reply.content)}


def evidence(turns: Sequence[Turn], header: str, confirmed: set[int] = frozenset()) -> dict[int, list[str]]:
    """The transcript's trusted statements, by turn: user turns (injected memory and
    untrusted blocks removed, as the extractors see them) and the assistant turns the user
    confirmed (``confirmed``, or agreed with in the next turn); each as its sentences,
    their clauses, adjacent sentence pairs, and whole."""
    confirmed = set(confirmed) | affirmed(turns)
    users = [t.speaker for t in turns if t.role == "user" and t.speaker.lower() not in _GENERIC]
    out: dict[int, list[str]] = {}
    for seg in segments(list(turns), header):
        if not seg.trusted or not (seg.turn.role == "user" or seg.turn.turn in confirmed):
            continue
        if seg.turn.role == "user":
            name = seg.turn.speaker if seg.turn.speaker.lower() not in _GENERIC else "The user"
        else:
            name = users[0] if users else "The user"
        said = [s.strip() for s in _SENTENCE.split(seg.text) if s.strip()]
        clauses = [c for s in said for c in _CLAUSE.split(s) if len(c.split()) >= 3 and c.strip() != s]
        pieces = said + clauses + [f"{a} {b}" for a, b in zip(said, said[1:])] + ([seg.text] if len(said) > 2 else [])
        out.setdefault(seg.turn.turn, []).extend(_in_third_person(p, name, seg.turn.role == "assistant") for p in pieces)
    return {turn: list(dict.fromkeys(pieces)) for turn, pieces in out.items()}


def _unsupported(facts: list[dict[str, Any]], candidates: list[int], support: dict[int, list[str]],
                 turns: Sequence[Turn], matcher: FactMatcher) -> list[int]:
    """The candidate facts no trusted statement supports: their own source turns are
    tried first, the whole transcript only for what those do not support (embedding
    every sentence of a long conversation is most of the eval's time). Reported speech
    ("John said: …") is checked against the speaker's own source turns only."""
    turn_of = {t.resource_id: t.turn for t in turns}
    everything = list(dict.fromkeys(p for pieces in support.values() for p in pieces))
    out = []
    for i in candidates:
        own = [p for rid in facts[i].get("source_resource_ids") or [] for p in support.get(turn_of.get(rid, -1), [])]
        content = facts[i]["content"]
        # Reported speech is supported when what was said is, in the speaker's own turns
        # (the "X said: " frame the extractor rendered from ``reported_by`` is in no turn).
        if speaker := facts[i].get("reported_by"):
            if not matcher.supported(content.removeprefix(f"{speaker} said: "), own):
                out.append(i)
        elif not matcher.supported(content, own) and not matcher.supported(content, everything):
            out.append(i)
    return out


# --- scoring one session -----------------------------------------------------------------

def score_gold_session(session: GoldSession, run: Run, matcher: FactMatcher, turns: list[Turn], header: str) -> dict[str, Any]:
    """One gold session's numbers, with the facts behind each failure."""
    contents = [f["content"] for f in run.facts]
    golds = [g.content for g in session.facts]
    support = evidence(turns, header, session.confirmed_turns)
    matcher.vectors([*contents, *golds, *session.optional, *session.must_not,
                     *(p for pieces in support.values() for p in pieces)])  # one batch
    matches = matcher.match(golds, contents)
    used = {m.candidate for m in matches}
    rest = [i for i in range(len(contents)) if i not in used]
    optional = {rest[m.candidate] for m in matcher.match(list(session.optional), [contents[i] for i in rest])}
    unmatched = [i for i in rest if i not in optional]
    junk = _unsupported(run.facts, unmatched, support, turns, matcher)
    # A fact that says a gold fact is wanted: only credentials and must_not text make it a leak.
    leaks = [(i, why) for i in range(len(contents))
             if (why := leak_reason(contents[i], session.must_not, None if i in used else matcher)) is not None]
    names = sorted({t.speaker for t in turns if t.role == "user"})

    paired = []
    for m in matches:
        gold, fact = session.facts[m.reference], run.facts[m.candidate]
        row: dict[str, Any] = {
            "gold": gold.content, "extracted": fact["content"], "similarity": round(m.similarity, 3),
            "judged": m.judged,
            "category": [gold.category, fact["category"], gold.category_ok(fact["category"])],
            "kind": [gold.kind, fact["kind"], gold.kind_ok(fact["kind"])],
            "trust": [gold.source_trust, fact["source_trust"], gold.source_trust == fact["source_trust"]],
        }
        if gold.supersedes:
            hint = fact.get("supersedes_hint")
            row["supersedes"] = [gold.supersedes, hint, supersedes_overlap(hint, gold.supersedes, names)]
        paired.append(row)
    found = {m.reference for m in matches}
    return {
        "session_id": session.session_id,
        "adversarial": session.adversarial,
        "attacks": list(session.attacks),
        "extracted": len(contents),
        "rejected": run.rejected,
        "gold_facts": len(golds),
        "matched": len(matches),
        "optional_matched": len(optional),
        "supersedes_gold": sum(1 for g in session.facts if g.supersedes),
        "supersedes_correct": sum(1 for p in paired if p.get("supersedes", [None, None, False])[2]),
        "junk": len(junk),
        "leaks": len(leaks),
        "failed": run.failed,
        "prompt_tokens": run.prompt_tokens,
        "completion_tokens": run.completion_tokens,
        "matches": paired,
        "missed": [g.content for i, g in enumerate(session.facts) if i not in found],
        "unmatched": [contents[i] for i in unmatched],
        "junk_facts": [contents[i] for i in junk],
        "leak_examples": [{"content": redact(contents[i]), "reason": why} for i, why in leaks],
    }


def score_locomo_session(session: LocomoSession, run: Run, matcher: FactMatcher, header: str) -> dict[str, Any]:
    """One LoCoMo session: which observations an extracted fact says (many-to-one)."""
    contents = [f["content"] for f in run.facts]
    turn_ids = [set(f["source_turn_ids"] or []) for f in run.facts]
    support = evidence(list(session.turns), header)
    matcher.vectors([*contents, *(o.text for o in session.observations)])  # one batch
    sims = matcher.similarity([o.text for o in session.observations], contents)
    best_similarity = [float(row.max()) if contents else 0.0 for row in sims]
    recalled, joined, covered, missed = 0, 0, 0, []
    matched_facts: set[int] = set()
    for r, obs in enumerate(session.observations):
        from_turn = [c for c, ids in zip(contents, turn_ids) if set(obs.dia_ids) & ids]
        covered += bool(from_turn)
        best = matcher.best(obs.text, contents, sims[r])
        if best is not None:
            recalled += 1
            joined += 1
            matched_facts.add(best.candidate)
            continue
        missed.append({"observation": obs.text, "dia_ids": list(obs.dia_ids), "from_turn": from_turn})
        # Split into atomic facts, the observation's turn may still say all of it.
        if len(from_turn) > 1:
            text = " ".join(from_turn)
            joined += matcher.same(obs.text, text, float(matcher.similarity([obs.text], [text])[0, 0]))[0]
    # An extracted fact that says some observation counts toward precision even when a
    # closer fact took that observation's "best" slot.
    if contents:
        for c in range(len(contents)):
            if c not in matched_facts and any(
                    sims[r, c] >= matcher.floor and matcher.same(session.observations[r].text, contents[c],
                                                                 float(sims[r, c]))[0]
                    for r in range(len(session.observations))):
                matched_facts.add(c)
    unmatched = [i for i in range(len(contents)) if i not in matched_facts]
    junk = _unsupported(run.facts, unmatched, support, list(session.turns), matcher)
    leaks = [(i, why) for i in range(len(contents)) if (why := leak_reason(contents[i], (), None)) is not None]
    return {
        "session_id": session.session_id,
        "extracted": len(contents),
        "rejected": run.rejected,
        "gold_facts": len(session.observations),
        "recalled": recalled,
        "recalled_joined": joined,
        "best_similarity": best_similarity,
        "turn_covered": covered,
        "matched_extracted": len(matched_facts),
        "junk": len(junk),
        "leaks": len(leaks),
        "failed": run.failed,
        "prompt_tokens": run.prompt_tokens,
        "completion_tokens": run.completion_tokens,
        "missed": missed,
        "unmatched": [contents[i] for i in unmatched],
        "junk_facts": [contents[i] for i in junk],
        "leak_examples": [{"content": redact(contents[i]), "reason": why} for i, why in leaks],
    }


def _locomo_files(target: Path) -> list[Path]:
    files = sorted(target.glob("*.json")) if target.is_dir() else [target]
    if not files or not all(f.exists() for f in files):
        raise EvalError(f"{target}: no LoCoMo files; pass --dataset PATH (or set MEMORY_LOCOMO_DIR)")
    return files


def dataset_kind(target: str | Path) -> tuple[str, Path]:
    """("gold" | "locomo", path) for ``gold``, ``locomo`` or a path to either kind."""
    if str(target) == "gold":
        return "gold", GOLD_DIR
    if str(target) == "locomo":
        return "locomo", default_locomo_dir()
    path = Path(target)
    if not path.exists():
        raise EvalError(f"{path}: no such dataset; use gold, locomo or a path")
    probe = path
    if path.is_dir():
        found = sorted([*path.glob("*.json"), *path.glob("*.jsonl")])
        if not found:
            raise EvalError(f"{path}: no *.json or *.jsonl files")
        probe = found[0]
    if probe.suffix == ".jsonl":
        return "gold", path
    try:
        doc = json.loads(probe.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise EvalError(f"{probe}: not a gold session or a LoCoMo file ({exc})") from None
    if isinstance(doc, dict) and ("speaker_a" in doc or "conversation" in doc):
        return "locomo", path
    if isinstance(doc, dict) and "facts" in doc and "turns" in doc:
        return "gold", path
    raise EvalError(f"{probe}: not a gold session (turns + facts) or a LoCoMo conversation (speaker_a, session_N)")


def default_extractor(config: MemoryConfig) -> str:
    """``llm`` when the LLM path is enabled (``[llm] enabled`` or ``MEMORY_EXTRACTOR=llm``)."""
    return "llm" if config.llm_enabled else "offline"


def make_matcher(config: MemoryConfig, judge: bool | None = None, threshold: float = THRESHOLD) -> FactMatcher:
    """The MiniLM matcher; with an LLM judge when ``judge`` is True, or None and a key is set.
    ``threshold`` other than the calibrated one is for sensitivity checks: a lower one also
    lowers the lexical floor's role (below it, cosine alone with the guards decides)."""
    from retrieval.embeddings import Embedder

    embed_config = config
    if config.embedding.provider != "local":
        # The threshold is calibrated for MiniLM: the eval always matches with it.

        embed_config = config.replace(embedding={"provider": "local"})
    use_judge = (config.llm_enabled and llm_configured()) if judge is None else judge
    return FactMatcher(Embedder(embed_config).embed, threshold, LLMJudge(config) if use_judge else None)


def run_extraction_eval(dataset: str | Path = "gold", extractor: str | None = None, *,
                        sessions: Sequence[str] | None = None, judge: bool | None = None,
                        config: MemoryConfig, matcher: FactMatcher | None = None,
                        threshold: float = THRESHOLD) -> dict[str, Any]:
    """Run one extractor over one dataset and score what reached items.

    Args:
        dataset: ``"gold"``, ``"locomo"``, or a path to gold session files or LoCoMo files.
        extractor: ``"offline"`` or ``"llm"``; default llm when ``OPENAI_API_KEY`` is set.
        sessions: only these session ids (gold), or these conversations' sessions (LoCoMo
            ids such as ``conv-26-s3``); default all.
        judge: use the LLM judge for borderline matches; default when ``OPENAI_API_KEY`` is set.
        config: the memory config: categories, and the LLM the extractor and the judge ask.
        matcher: a prepared matcher (tests share one); default MiniLM at ``threshold``.
        threshold: the match threshold of the default matcher; ``THRESHOLD`` is the calibrated one.

    Returns:
        The report: ``dataset``, ``extractor``, ``sessions``, ``extracted``, ``gold_facts``,
        ``precision``, ``recall``, ``f1``, ``category_accuracy``, ``kind_accuracy``,
        ``trust_accuracy``, ``supersedes_accuracy``, ``junk_rate``, ``leaks``,
        ``leak_examples``, ``prompt_tokens``, ``completion_tokens``,
        ``cost_usd_per_session``, ``threshold`` and ``per_session`` (plus
        ``turn_coverage`` for LoCoMo).
    """
    started = time.perf_counter()
    kind, path = dataset_kind(dataset)
    impl = build_extractor(extractor or default_extractor(config), config)
    if judge is None and impl.name == "llm":
        judge = None if config.llm_enabled else llm_configured()  # scoring the LLM: its judge too
    matcher = matcher or make_matcher(config, judge, threshold)
    wanted = set(sessions) if sessions is not None else None
    rows = []
    if kind == "gold":
        for session in load_gold(path, config=config):
            if wanted is not None and session.session_id not in wanted:
                continue
            turns = session_turns(session.session_id, session.turns)
            rows.append(score_gold_session(session, run_session(impl, turns, config), matcher, turns, config.injection.header))
    else:
        for file in _locomo_files(path):
            for session in load_locomo(file):
                if wanted is not None and session.session_id not in wanted:
                    continue
                rows.append(score_locomo_session(session, run_session(impl, list(session.turns), config), matcher,
                                                 config.injection.header))
    if not rows:
        raise NoSessions(f"{path}: no sessions to evaluate" + (f" among {sorted(wanted)}" if wanted else ""))
    return summary(kind, impl, rows, matcher, config, time.perf_counter() - started)


# --- the CLI -------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memory eval extraction",
        description="Score an extractor: gold sessions (precision, recall, junk, leaks) and LoCoMo observations (recall).")
    parser.add_argument("--dataset", action="append", default=None, metavar="gold|locomo|PATH",
                        help="gold, locomo, or a path to gold session files or LoCoMo files; "
                             "repeat for several (default: gold and locomo)")
    parser.add_argument("--extractor", choices=["offline", "llm"], default=None,
                        help="default: llm when OPENAI_API_KEY is set, else offline")
    parser.add_argument("--session", action="append", default=None, metavar="ID",
                        help="only this session id (repeatable)")
    parser.add_argument("--no-judge", action="store_true", help="match by embeddings alone even with an LLM configured")
    parser.add_argument("--threshold", type=float, default=THRESHOLD, metavar="COSINE",
                        help=f"match threshold (default {THRESHOLD}, the calibrated one; lower it only to see "
                             "how sensitive a number is)")
    parser.add_argument("--details", action="store_true",
                        help="also list, per session, unmatched and junk facts, missed gold facts and leaks")
    parser.add_argument("--json", action="store_true", help="print the full reports as JSON (with per-session detail)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``memory eval extraction``; returns 1 when any fact leaked, 2 on a usage error."""
    from retrieval.llm import LLMNotConfigured

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args = build_parser().parse_args(list(argv) if argv is not None else None)
    config = load_config()
    datasets = args.dataset or ["gold", "locomo"]
    reports = []
    try:
        extractor = args.extractor or default_extractor(config)
        for dataset in datasets:
            try:
                reports.append(run_extraction_eval(dataset, extractor, sessions=args.session, config=config,
                                                   judge=False if args.no_judge else None, threshold=args.threshold))
            except NoSessions:
                if not args.session or args.dataset:
                    raise  # --session picks among the default datasets; elsewhere it must match
        if not reports:
            raise NoSessions(f"no session named {', '.join(args.session)} in {' or '.join(datasets)}")
    except (EvalError, GoldError, TranscriptError, LLMNotConfigured) as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(reports[0] if len(reports) == 1 else reports, indent=2, default=str))
    else:
        print("\n\n".join(format_report(r, details=args.details) for r in reports))
    return 1 if any(r["leaks"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
