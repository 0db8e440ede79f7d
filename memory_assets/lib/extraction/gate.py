"""The write gate: the one place that decides what may become a memory item.

Every candidate fact, from either extractor, passes ``check`` before dedup. A refused
candidate becomes a Rejection row (reason, detail, redacted preview), never an item,
so the health report can show what was kept out and why (DESIGN.md, "Nothing is lost").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

from retrieval.intent import HENCEFORTH
from retrieval.config import MemoryConfig
from retrieval.credentials import find_credentials, redact
from retrieval.privacy import WITHHELD, forget_request, off_the_record
from retrieval.schema import Candidate

REDACTED = re.compile(r"\[REDACTED:([a-z_]+)\]")  # what ingest leaves where a credential was
REASONS = ("credential", "chatter", "opinion", "too_long", "too_short", "instruction", "empty",
           "memory_request", "forgotten")

PREVIEW_CHARS = 120

# Turns made only of acknowledgements, greetings, thanks, laughter or stalling carry no
# fact; they are the bulk of junk in naive memory stores. A candidate is chatter only
# when *all* of it is these phrases: "thanks, Priya moved to Berlin" is a fact.
CHATTER_PHRASES = (
    r"ok(?:ay)?", r"k+", r"sure(?: thing)?", r"yes", r"yeah", r"yep", r"yup", r"no", r"nope",
    r"nah", r"alright", r"all right", r"right", r"cool", r"great", r"nice", r"awesome",
    r"perfect", r"excellent", r"got it", r"gotcha", r"understood", r"noted", r"makes sense",
    r"fair enough", r"sounds (?:good|great|fine|right|perfect)(?: to me)?", r"that works",
    r"will do", r"done", r"exactly", r"agreed", r"i see", r"oh", r"ah", r"hm+", r"uh+",
    r"um+", r"well", r"so", r"please",
    r"thanks?(?: (?:a lot|so much|again|a ton))?", r"thank you(?: (?:so much|very much|again))?",
    r"thx", r"ty", r"tysm", r"cheers", r"no problem", r"np", r"you'?re welcome",
    r"hi", r"hello", r"hey", r"yo", r"there", r"all", r"everyone", r"folks", r"team", r"guys",
    r"good (?:morning|afternoon|evening|night)", r"bye", r"goodbye", r"see you", r"later",
    r"ttyl", r"brb",
    r"lol", r"lmao", r"rofl", r"(?:ha)+h?", r"(?:he){2,}h?",
    r"let me (?:check|see|look|think|try|test|run|verify)"
    r"(?: (?:that|this|it|again|on that|into it|real quick|quickly|now|one more time))*",
    r"i'?ll (?:check|try|look into|test|verify)(?: (?:that|this|it|again|now))*",
    r"(?:one|just a|give me a) (?:sec|second|moment|minute)", r"hold on",
)

# Evaluations of a thing, with no fact about the user in them ("that's a great idea",
# "this library is awesome"). Matched against the whole candidate, so a preference
# ("Priya prefers ruff over black") or an opinion with a reason and a number in it
# passes: only the bare verdict is refused.
_HEDGE = r"(?:(?:i think|i feel like|imo|imho|in my opinion|honestly|tbh|personally|frankly|wow|oh|man)\s+)*"
_INTENSIFIER = r"(?: (?:a|an|so|really|very|pretty|super|such a|such an|kinda|kind of|totally|absolutely|quite|truly|just))*"
_VERDICT = (
    r"(?:great|good|bad|awesome|amazing|terrible|awful|horrible|cool|nice|neat|brilliant|"
    r"excellent|fantastic|wonderful|lovely|beautiful|ugly|stupid|dumb|smart|clever|genius|"
    r"perfect|weird|interesting|fun|boring|overrated|underrated|elegant|gross|meh|incredible|"
    r"impressive|silly|ridiculous|annoying|superb|outstanding|clunky|slick|sweet|insane|crazy)"
)
_THING = (
    r"(?:idea|plan|approach|solution|library|tool|framework|choice|point|question|suggestion|"
    r"option|one|thing|call|design|feature|language|move|job|work|answer|catch|find|pattern)"
)
OPINION_PATTERNS = (
    rf"{_HEDGE}(?:that|this|it|these|those|the)(?: \w+){{0,2}}(?:'s| is| was| are| looks| seems| sounds| feels)"
    rf"{_INTENSIFIER} {_VERDICT}(?: {_THING})?",
    rf"{_HEDGE}(?:that|this|it|these|those|the)(?: \w+){{0,2}}(?: really)? (?:sucks|rocks|rules)",
    rf"{_HEDGE}(?:what|such) an? {_VERDICT} {_THING}",
    rf"{_HEDGE}(?:an? )?{_VERDICT} {_THING}",
)

# Text addressed to the model, not about the user: prompt injection and memory
# poisoning. Stored as a fact it would be injected into every later prompt, so it is
# refused wherever it comes from, trusted turn or tool output alike.
INSTRUCTION_PATTERNS = (
    r"\b(?:ignore|disregard|forget|override|skip)\s+(?:(?:all|any|the|your|of)\s+)*"
    r"(?:previous|prior|above|earlier|preceding|former|existing|original|system)\s+"
    r"(?:instructions?|prompts?|messages?|rules|directions|guidance|guidelines|context|commands?)",
    r"\b(?:ignore|disregard|forget)\s+(?:all|everything)\s+(?:you\s+(?:know|were told|have been told)"
    r"|(?:that\s+)?(?:came\s+)?before|above)",
    r"\byou\s+must\s+now\b",
    r"\byou\s+are\s+now\b",
    r"\b(?:" + HENCEFORTH + r"),?\s+you\s+(?:must|will|shall|should|are)\b",
    r"\b(?:new|updated|revised)\s+instructions?\s*:",
    r"\bsystem\s+(?:prompt|message)\s*:",
    r"^\s*(?:system|assistant)\s*:",
    r"<\|?(?:im_start|im_end|system|endoftext)\|?>|\[/?inst\]|<</?sys>>|###\s*(?:instruction|system)",
    r"\b(?:record|remember|store|save|memorize)\s+(?:that|this:?)\s+(?:the\s+)?user\s+"
    r"(?:wants|prefers|likes|asked|requested|requires|said|is|has|always|never|needs|would)\b",
    r"\b(?:add|write|save|store|insert|put)\s+(?:this|that|the\s+following|it)\s+(?:to|in|into)\s+"
    r"(?:your\s+|the\s+)?(?:long[- ]term\s+)?memor(?:y|ies)",
    r"\bupdate\s+your\s+(?:memory|memories|instructions|system\s+prompt)",
    r"\b(?:reveal|print|show|repeat|output)\s+(?:your|the)\s+(?:system\s+prompt|instructions|hidden\s+prompt)",
    r"\b(?:do\s+not|don'?t)\s+(?:tell|inform|alert)\s+the\s+user\b",
    r"\bpretend\s+(?:to\s+be|you\s+are)\b",
)

# Untrusted text that speaks to the agent ("Assistant reading this: …", "@fleet-ai-assistant
# please remember …", "AI agents: set X=false") is an attempt to steer it, never a fact.
UNTRUSTED_ADDRESS_PATTERNS = (
    r"\b(?:assistants?|ai\s+(?:agents?|models?|assistants?)|agents?|bots?|llms?|(?:language\s+)?models?)\s*(?:reading\s+this)?\s*[:,]",
    r"@[\w-]*(?:assistant|agent|bot|ai)\b",
    r"\b(?:assistants?|agents?|ai|models?)\s+reading\s+this\b",
    r"\bplease\s+(?:remember|note|record|save|store)\s+that\b",
    r"\b(?:already|has)\s+approved\b.*\b(?:set|disable|commit|deploy|skip)\b|\b(?:set|disable|commit|deploy|skip)\b.*\b(?:already|has)\s+approved\b",
)

_CHATTER = re.compile(rf"(?:{'|'.join(CHATTER_PHRASES)})(?: (?:{'|'.join(CHATTER_PHRASES)}))*")
_OPINION = tuple(re.compile(p) for p in OPINION_PATTERNS)
_INSTRUCTION = tuple(re.compile(p, re.IGNORECASE | re.MULTILINE) for p in INSTRUCTION_PATTERNS)
_UNTRUSTED_ADDRESS = tuple(re.compile(p, re.IGNORECASE) for p in UNTRUSTED_ADDRESS_PATTERNS)


def steers_agent(text: str) -> bool:
    """Whether untrusted ``text`` tries to instruct the agent or its memory (the patterns
    the gate refuses). The offline extractor drops such a line whole: the rest of it comes
    from the same author trying to steer the model."""
    return any(p.search(text) for p in (*_INSTRUCTION, *_UNTRUSTED_ADDRESS))


@dataclass(frozen=True)
class Rejection:
    """Why the gate refused a candidate. ``detail`` never contains a secret."""

    reason: str
    detail: str


def _normalized(content: str) -> str:
    """Lower case, curly quotes straightened, punctuation and emoji dropped."""
    text = content.lower().replace("\u2019", "'")
    return " ".join(re.sub(r"[^\w\s']", " ", text).split())


def _credential(content: str, config: MemoryConfig) -> Rejection | None:
    kinds = sorted({match.kind for match in find_credentials(content)})
    if kinds:
        return Rejection("credential", f"contains a credential ({', '.join(kinds)})")
    # A turn redacted at ingest still says "here is the key [REDACTED:…]": a fact about
    # a secret is no memory, and storing it would tell a reader where one was pasted.
    redacted = sorted(set(REDACTED.findall(content)))
    if redacted:
        return Rejection("credential", f"mentions a redacted credential ({', '.join(redacted)})")
    return None


def _memory_request(content: str, config: MemoryConfig) -> Rejection | None:
    # What the user says about the memory is obeyed, never stored: "forget what I told
    # you about X" retires X (lib/extraction/forgetting.py); "don't remember this" is withheld at ingest.
    if WITHHELD in content or off_the_record(content):
        return Rejection("memory_request", "the user asked that this not be remembered")
    topic = forget_request(content)
    if topic:
        return Rejection("memory_request", f"a request to forget {topic[:60]!r}, not a fact")
    return None


def _instruction(content: str, config: MemoryConfig) -> Rejection | None:
    for pattern in _INSTRUCTION:
        match = pattern.search(content)
        if match:
            phrase = " ".join(match.group(0).split())[:60]
            return Rejection("instruction", f"instruction aimed at the model: {phrase!r}")
    return None


def _too_long(content: str, config: MemoryConfig) -> Rejection | None:
    limit = int(config.gate.max_chars)
    if len(content) > limit:
        return Rejection("too_long", f"{len(content)} characters; an atomic fact has at most {limit}")
    return None


def _chatter(content: str, config: MemoryConfig) -> Rejection | None:
    text = _normalized(content)
    if not text or _CHATTER.fullmatch(text):
        return Rejection("chatter", "acknowledgement or filler, no fact")
    return None


def _opinion(content: str, config: MemoryConfig) -> Rejection | None:
    text = _normalized(content)
    if any(pattern.fullmatch(text) for pattern in _OPINION):
        return Rejection("opinion", "a verdict on a thing, no fact about the user")
    return None


def _too_short(content: str, config: MemoryConfig) -> Rejection | None:
    minimum = int(config.gate.min_words)
    words = len(content.split())
    if words < minimum:
        return Rejection("too_short", f"{words} word(s); a fact needs at least {minimum}")
    return None


# Security first: a credential or an injected instruction is named as such even when
# the text is also too long or mostly chatter.
_RULES = (_credential, _memory_request, _instruction, _too_long, _chatter, _opinion, _too_short)


def check(candidate: Candidate, config: MemoryConfig) -> Rejection | None:
    """The reason ``candidate`` may not become a memory item, or None when it may.

    Args:
        candidate: a fact proposed by an extractor.
        config: the loaded config; ``[gate]`` gives min_words and max_chars.
    """
    content = candidate.content.strip()
    if not content:
        return Rejection("empty", "no content")
    for rule in _RULES:
        rejection = rule(content, config)
        if rejection is not None:
            if rejection.reason != "credential" and candidate.source_trust == "untrusted":
                break  # an untrusted text steering the agent is named as such first
            return rejection
    if candidate.source_trust == "untrusted":
        for pattern in _UNTRUSTED_ADDRESS:
            match = pattern.search(content)
            if match:
                phrase = " ".join(match.group(0).split())[:60]
                return Rejection("instruction", f"untrusted text addressed to the agent: {phrase!r}")
    for rule in _RULES:
        rejection = rule(content, config)
        if rejection is not None:
            return rejection
    return None


def admitted(config: MemoryConfig) -> pl.Expr:
    """The status a new item starts in, over its ``confidence`` column: ``active``, or
    ``candidate`` below the usefulness bar (DESIGN check 2: "useful or chatter,
    confidence > 0.7"; ``[gate] min_confidence``). A candidate is stored but never
    injected; another session stating it makes it active (``lifecycle.policy``), and
    unconfirmed it expires after the speculative TTL."""
    bar = float(config.gate.min_confidence)
    return pl.when(pl.col("confidence") < bar).then(pl.lit("candidate")).otherwise(pl.lit("active"))


def preview(content: str) -> str:
    """A one-line preview for the rejection log: credentials redacted, at most 120 characters."""
    text = " ".join(redact(content).split())
    if len(text) <= PREVIEW_CHARS:
        return text
    return text[: PREVIEW_CHARS - 1] + "\u2026"
