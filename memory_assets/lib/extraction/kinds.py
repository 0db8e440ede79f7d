"""Kinds that carry structure (the coding-agent design): procedures, negative rules, and
the episode/note split.

- A **procedure** is a turn that lays out ordered steps: numbered ("1. open the vault,
  2. generate a key"), bulleted, or sequenced ("first run make test, then tag the
  release, then run ./deploy.sh"). It keeps its ``steps`` in order, and the turn's other
  sentences that say what must hold before it (``prerequisites``: "you need VPN access
  before you start") or what to watch for (``warnings``: "careful: never deploy while a
  migration is running"). A story told in order ("first we went to the park, then we had
  lunch") is not one: its steps are past-tense actions or have a subject of their own.
- A **negative** rule ("never commit .env files") keeps ``trigger_patterns``: the words
  of the action it forbids and of what it acts on ("commit", ".env"). Retrieval surfaces
  the rule whenever the context names one of them, whatever the query is about.
- **Episode or note** (the design's classifier): an episode is something that happened
  once, at a time: an event, or a past-tense action with a time marker ("went to a
  support group on May 7"). A note is what stays true: a preference, a rule, a
  procedure, a fact about someone, a plan. Temporal markers, the kind, past-tense
  verbs and note cues ("always", "usually", "prefers") decide.

The parse is spaCy's (``structure.nlp``, loaded once per process).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from retrieval.dates import MONTHS, WEEKDAYS
from retrieval.text import TOKEN, lexicon, normal_phrase

from . import structure

_I = re.IGNORECASE

# "1. open the vault", "2) generate", "step 3:", "- run make test"
_NUMBERED = re.compile(r"(?:^|(?<=\s)|(?<=[:;,]))(?:step\s+)?(\d{1,2})[.):]\s+(?=\S)", _I)
_BULLET = re.compile(r"^\s*[-*•]\s+(?=\S)", re.MULTILINE)
# "first, …, then …, then …, finally …"
_FIRST = re.compile(r"\b(?:first(?:ly)?|to start|start by|begin by)\b,?\s*", _I)
_THEN = re.compile(r"(?:,|;|\.)?\s*\b(?:and\s+)?(?:then|next|after that|afterwards|finally|lastly)\b,?\s*", _I)
# What the steps achieve: "here's how we deploy X:", "to rotate the keys:", "the release procedure:"
_GOAL = re.compile(
    r"(?:here(?:'s| is) how (?:we|you|i|to)\s+|how (?:we|you|i|to)\s+|(?:^|(?<=[.!?]\s))to\s+|"
    r"(?:^|(?<=[.!?]\s))(?:when|whenever|before) (?:we|you|i)\s+)"
    r"(?P<goal>[^:.!?]{3,80}?)\s*(?::|,\s*(?=first|start|begin|\d[.)]))", _I)
_NAMED_PROCEDURE = re.compile(r"\b(?:the|our|my)\s+(?P<goal>[\w .\-/]{2,40}?)\s+(?:procedure|process|steps|checklist|runbook|workflow)\b\s*(?:is|are)?\s*:?", _I)
_PREREQUISITE = re.compile(
    r"\b(?:you(?:'ll| will)? need|we need|requires?|required|prerequisites?|make sure (?:you|we) have|"
    r"before (?:you|we) (?:start|begin)|you must have|needs? to be (?:on|in|logged)|only works? (?:on|with|if))\b", _I)
_WARNING = re.compile(
    r"\b(?:careful|warning|caution|watch out|beware|never|don't|do not|avoid|must not|mustn't|"
    r"make sure (?:not|you don't|you do not)|otherwise|or else|important)\b", _I)
_PAST_NARRATIVE = re.compile(r"^(?:i|we|he|she|they|you|it|my|our)\b", _I)

# What a negative rule forbids: the words after its negation.
_NEGATION = re.compile(
    r"^(?:.*?\bwants the assistant\s+)?(?:not to|never|don't|do not|avoid|stop|must not|mustn't|to never|no)\s+", _I)
_TRIVIAL = frozenset({"be", "do", "have", "get", "make", "go", "use", "let", "put", "take", "thing", "anything",
                      "something", "stuff", "it", "them", "this", "that", "way", "time", "ever", "again",
                      "the assistant", "assistant", "file", "files", "one"})
_FILE_LIKE = re.compile(r"(?<![\w/])(?:\.[\w-]+|[\w-]+\.[a-z]{1,5}|[\w./-]+/[\w./-]*|--?[\w-]+)(?![\w])", _I)

# Episode or note.
_MONTH = "|".join(MONTHS)
_TIME_MARKER = re.compile(
    r"\b(?:yesterday|today|tonight|last (?:night|week|month|year|weekend|\w+day)|this (?:morning|afternoon|week|weekend)|"
    r"\d+ (?:days?|weeks?|months?|years?) ago|ago|on (?:" + "|".join(WEEKDAYS) + r")|"
    r"in (?:" + _MONTH + r")|(?:" + _MONTH + r") \d{1,2}|\d{1,2} (?:" + _MONTH + r")|"
    r"\b(?:19|20)\d\d\b|recently|just now|earlier today)\b", _I)
_NOTE_CUE = re.compile(
    r"\b(?:always|usually|never|every|each|prefers?|likes?|loves?|hates?|wants?|favou?rite|tends? to|"
    r"is allergic|lives?|works? (?:at|as|for)|uses?|owns?|plans? to|will|going to|is due)\b", _I)
NOTE_KINDS = frozenset({"preference", "decision", "correction", "procedure", "negative", "commitment", "insight"})


@dataclass(frozen=True)
class Procedure:
    """Ordered steps, and what the turn says must hold first or to watch for."""

    goal: str | None
    steps: list[str]
    prerequisites: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    named: bool = False  # the goal is the procedure's name ("the release checklist"), not an action

    def content(self, person: str, max_chars: int = 600) -> str:
        """One sentence naming the person and the goal, with the steps in order; the
        steps are cut (their count named) when the sentence would pass ``max_chars``."""
        if self.goal:
            lead = f"{person}'s {self.goal} procedure" if self.named else f"{person}'s procedure to {self.goal}"
        else:
            lead = f"{person}'s procedure"
        steps = list(self.steps)
        while True:
            more = len(self.steps) - len(steps)
            body = ", then ".join(steps) + (f", then {more} more steps" if more else "")
            text = f"{lead}: {body}."
            if len(text) <= max_chars or len(steps) <= 1:
                return text[:max_chars]
            steps.pop()

    def directive(self) -> str:
        lead = (f"For the {self.goal}" if self.named else f"To {self.goal}") if self.goal else "Follow these steps"
        return f"{lead}: " + "; ".join(f"{i}. {s}" for i, s in enumerate(self.steps, 1))


def _clean_step(text: str) -> str:
    text = " ".join(text.split()).strip(" ,;:-")
    text = re.sub(r"^(?:and|so|you|we)\s+", "", text, flags=_I)
    return text.rstrip(".!")


def _enumerated(text: str) -> tuple[str, list[str], str] | None:
    """(before, steps, after) of a numbered or bulleted list of at least two steps."""
    marks = list(_NUMBERED.finditer(text))
    numbers = [int(m.group(1)) for m in marks]
    if len(marks) >= 2 and numbers[:2] == [1, 2]:
        run = [marks[0]]
        for m in marks[1:]:
            if int(m.group(1)) == int(run[-1].group(1)) + 1:
                run.append(m)
        steps = []
        for m, nxt in zip(run, run[1:] + [None]):
            steps.append(text[m.end():nxt.start() if nxt else len(text)])
        # The last step ends at its sentence's end; the rest of the turn is after it.
        last = re.split(r"(?<=[.!?])\s+", steps[-1], maxsplit=1)
        steps[-1] = last[0]
        after = last[1] if len(last) > 1 else ""
        return text[:run[0].start()], [_clean_step(s) for s in steps], after
    bullets = list(_BULLET.finditer(text))
    if len(bullets) >= 2:
        steps = []
        for m, nxt in zip(bullets, bullets[1:] + [None]):
            steps.append(text[m.end():nxt.start() if nxt else len(text)].split("\n", 1)[0])
        tail = text[bullets[-1].end():].split("\n", 1)
        return text[:bullets[0].start()], [_clean_step(s) for s in steps], tail[1] if len(tail) > 1 else ""
    return None


def _base_form(step: str) -> str:
    """"bumping the version" → "bump the version"."""
    getAllLemmas = lexicon().getAllLemmas
    word, _, rest = step.partition(" ")
    lemma = getAllLemmas(word.lower()).get("VERB", (None,))[0] if word.lower().endswith("ing") else None
    return f"{lemma} {rest}".strip() if lemma else step


def _sequenced(text: str) -> tuple[str, list[str], str] | None:
    """(before, steps, after) of "first …, then …, then …" within one sentence or run of them."""
    first = _FIRST.search(text)
    if first is None:
        return None
    rest = text[first.end():]
    # The sequence ends at the first sentence end with no "then"/"next" after it.
    sentences = re.split(r"(?<=[.!?])\s+", rest)
    body, after = [], []
    for i, sentence in enumerate(sentences):
        if i == 0 or _THEN.match(sentence) or re.match(r"(?:then|next|after that|finally|lastly)\b", sentence, _I):
            body.append(sentence)
        else:
            after = sentences[i:]
            break
    steps = [_clean_step(s) for s in _THEN.split(" ".join(body)) if _clean_step(s)]
    if steps and re.match(r"(?:start|begin) by", first.group(0), _I):
        steps[0] = _base_form(steps[0])  # "start by bumping the version" → "bump the version"
    if len(steps) < 2:
        return None
    return text[:first.start()], steps, " ".join(after)


def _imperative(steps: list[str]) -> bool:
    """Steps are instructions: each opens on a verb in its base form ("clone the repo",
    "tag the release") or on a command ("git tag v1", "./deploy.sh prod"), not on a
    subject ("we went", "I bought") or a past-tense verb."""
    getAllLemmas = lexicon().getAllLemmas
    for step in steps:
        words = re.sub(r"^(?:please|just|also)\s+", "", step.strip(), flags=_I).split()
        if not words or _PAST_NARRATIVE.match(words[0]):
            return False
        first = words[0].strip("`'\"").lower()
        if first.startswith(("./", "/", "~/")):
            continue
        lemmas = getAllLemmas(first)
        if first in lemmas.get("VERB", ()):
            continue
        if not lemmas and first[:1].isalpha() and TOKEN.fullmatch(first):
            continue  # a command's name ("git", "kubectl", "npm")
        return False
    return True


def procedure_in(text: str) -> Procedure | None:
    """The procedure a turn lays out, or None (see the module doc)."""
    text = text.strip()
    found = _enumerated(text) or _sequenced(text)
    if found is None:
        return None
    before, steps, after = found
    steps = [s for s in steps if len(s.split()) >= 1]
    if len(steps) < 2 or not _imperative(steps):
        return None
    goal, named = None, False
    head = before.strip().rstrip(",:;- ")
    lead_in = head  # the sentence that introduces the steps, left out of the notes
    if head:
        lead_in = re.split(r"(?<=[.!?])\s+", head)[-1]
        if m := _GOAL.search(lead_in + ":"):
            goal = re.sub(r"^(?:the way to|how to)\s+", "", m.group("goal").strip(), flags=_I)
        elif m := _NAMED_PROCEDURE.search(lead_in + ":"):
            goal, named = m.group("goal").strip(), True
    # Without a named goal, only three steps or more read as a procedure.
    if goal is None and len(steps) < 3:
        return None
    notes = head[:len(head) - len(lead_in)] + " " + after
    others = [s.strip().rstrip(".!") for s in re.split(r"(?<=[.!?])\s+", notes) if s.strip()]
    prerequisites = [s for s in others if _PREREQUISITE.search(s)]
    warnings = [s for s in others if _WARNING.search(s) and s not in prerequisites]
    return Procedure(goal, steps, prerequisites, warnings, named)


def trigger_patterns(rule: str) -> list[str]:
    """The words whose mention should bring a negative rule back: the action it forbids
    (its verb's lemma) and what that acts on (the object's nouns, file names and flags),
    e.g. "never commit .env files to the repo" → ["commit", ".env", "repo"]."""
    m = _NEGATION.search(rule.strip())
    body = rule.strip()[m.end():] if m else rule.strip()
    body = body.rstrip(".!")
    patterns: list[str] = []
    for token in _FILE_LIKE.findall(body):
        if len(token.strip(".-/")) >= 2:
            patterns.append(token.lower())
    masked = _FILE_LIKE.sub(" ", body)
    doc = structure.nlp()(masked)
    verb_seen = False
    for token in doc:
        if token.is_stop or token.is_punct or not token.text.strip():
            continue
        if token.pos_ == "VERB":
            if verb_seen:
                continue  # only the forbidden action: "deploy", not "running" in "while a migration is running"
            verb_seen = True
        if token.pos_ in ("VERB", "NOUN", "PROPN") or (token.pos_ == "ADJ" and token.dep_ in ("dobj", "pobj")):
            lemma = normal_phrase(token.lemma_ if token.pos_ != "PROPN" else token.text)
            if lemma and lemma not in _TRIVIAL and len(lemma) > 2:
                patterns.append(lemma)
    return list(dict.fromkeys(patterns))[:6]


def memory_kinds(contents: list[str], kinds: list[str], shapes: list[structure.Structure]) -> list[str]:
    """``episode`` for what happened once, at a time; ``note`` for what stays true (see
    the module doc), for each fact, from its wording and its parse (``structure.read_all``,
    which extraction has already run)."""
    out = []
    for content, kind, shape in zip(contents, kinds, shapes):
        text = re.sub(r"^[\w .'-]{1,40} said:\s*", "", content)
        if kind == "event":
            out.append("episode")
        elif kind in NOTE_KINDS or _NOTE_CUE.search(text) and not _TIME_MARKER.search(text):
            out.append("note")
        else:
            dated = shape.dated or bool(_TIME_MARKER.search(text))
            out.append("episode" if shape.past_action and (dated or not _NOTE_CUE.search(text)) else "note")
    return out


def structure_of(kind: str, content: str, directive: str | None, steps: list[str], prerequisites: list[str],
                 warnings: list[str], patterns: list[str]) -> dict[str, list[str]]:
    """A fact's procedure and negative columns: the extractor's where it gave them; a
    negative rule (a ``directive`` for the assistant: "never commit .env files") without
    trigger patterns gets them from its wording, and a procedure without steps gets them
    from its content when it lists them. A negative statement that is no rule ("Nate
    does not expect to win") triggers nothing."""
    if kind == "negative" and not patterns and directive:
        patterns = trigger_patterns(directive)
    if kind == "procedure" and not steps and (found := procedure_in(content)) is not None:
        steps = found.steps
        prerequisites = prerequisites or found.prerequisites
        warnings = warnings or found.warnings
    return {"steps": list(steps), "prerequisites": list(prerequisites), "warnings": list(warnings),
            "trigger_patterns": list(patterns)}
