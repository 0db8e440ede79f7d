"""Clauses for the offline extractor: sentences split into statements, filler and
questions told apart, absolute dates written in, and each clause labelled (kind,
strength, entities, category). The word lists and cue patterns are in ``rules.py``."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from memory_assets.lib.extraction import cues as C
from memory_assets.lib.extraction import rules as R
# The category of a clause: keywords (words and lemmas), then the nearest description.
from memory_assets.lib.extraction.categories import Categorizer  # noqa: F401
from retrieval.schema import Turn
from retrieval.dates import DATE, RELATIVE_DAYS
from retrieval.text import lexicon, tokens


_ABBREV = re.compile(r"\b(" + "|".join(a if "(" in a else re.escape(a) for a in R.ABBREVIATIONS) + r")\.", re.IGNORECASE)
# "…amazing!Thanks" splits; "sqlalchemy.exc.TimeoutError" does not.
# "./..." (a Go package pattern) is a path, not the end of a sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!/\.\.\.)[\"')\]]*\s+|\n+|(?<=[!?])(?=[A-Z][a-z])")
_VERB = re.compile(
    r"\b(?:i|i'm|i've|i'll|i'd|we|we're|we've|he|she|they|you|it)\s+\w|"
    r"\b(?:am|is|are|was|were|be|been|being|'m|'s|'re|'ve|'ll|'d|have|has|had|do|does|did|will|would|can|could|"
    r"should|may|might|must|gonna|wanna|[a-z]{2,}ed|[a-z]{3,}(?:s|es)\s+(?:me|my|us|our|him|her|them|it))\b|"
    r"\b(?!(?:for|to|with|at|of|from|about|like|than|by|on|in|behind|around|without|near|and|or|but)\b)[a-z]{3,}\s+(?:me|us)\b|"
    r"\b(?:matters|means|helps|makes|keeps|gives|brings|takes|feels|seems|works|goes|comes|needs|wants|likes|loves|"
    r"hates|says|plays|runs|lives|stays|reminds|lets)\b|"
    # "Completion moves to June 26": a short subject, then a verb in -s and a preposition.
    r"^(?:(?:the|a|an|my|our|his|her|their)\s+)?[\w'-]+(?:\s+[\w'-]+)?\s+"
    r"(?!(?:\w+ings|days|nights|weeks|weekends|months|years|hours|minutes|times|sets|reps|miles|dollars|euros|pounds)\b)"
    r"[a-z]{3,}s\s+(?:to|on|at|in|from|into|every|each|until|by)\b|"
    r"\b(?:" + "|".join(sorted(R.IRREGULAR_PAST)) + r")\b|"
    # A plural subject and its plain present verb: "My kids love the beach", "My parents
    # live in Ohio" (the -s forms above miss them).
    r"^(?:(?:my|our|his|her|their|the)\s+)(?:[\w'-]+\s+)?(?!thanks\b)(?:[a-z]{2,}[^s's]s|children|people|folks)\s+"
    r"(?!(?:and|or|of|in|on|at|for|to|with|from|who|that|which|this|these|the|a|an|my|our|is|was)\b)[a-z]{2,}\b",
    re.IGNORECASE,
)

# --- Text shape --------------------------------------------------------------------

def speaker_name(turn: Turn) -> str:
    """The name facts are attributed to: the speaker, or "User" for an unnamed user."""
    name = (turn.speaker or "").strip()
    if turn.role == "user" and (not name or name.lower() in ("user", "human", "me")):
        return "User"
    if turn.role == "assistant" and (not name or name.lower() in ("assistant", "ai", "bot")):
        return "the assistant"
    return name or turn.role.capitalize()


def split_caption(text: str) -> tuple[str, str | None]:
    """Separate an ingester's " [shared image: …]" from what the speaker wrote."""
    found = C.CAPTION.search(text)
    if not found:
        return text, None
    return C.CAPTION.sub(" ", text).strip(), found.group(1).strip() or None


# The longest sentence the rules read at once: a longer run of words (a pasted log with no
# full stop) is read in pieces of at most this, cut at a space, so no rule's time grows
# with the length of the whole text.
SENTENCE_MAX_CHARS = 1000


def _pieces(sentence: str) -> list[str]:
    out = []
    while len(sentence) > SENTENCE_MAX_CHARS:
        cut = sentence.rfind(" ", SENTENCE_MAX_CHARS // 2, SENTENCE_MAX_CHARS)
        cut = cut if cut > 0 else SENTENCE_MAX_CHARS
        out.append(sentence[:cut].strip())
        sentence = sentence[cut:]
    return [*out, sentence.strip()]


def sentences(text: str) -> list[str]:
    text = R.EMOJI.sub(" ", text.replace("’", "'"))
    text = re.sub(r"^[^\S\n]*(?:[-*•]|\d+[.)])\s+", "", text, flags=re.MULTILINE)  # list bullets
    protected = _ABBREV.sub(lambda m: m.group(1) + "<DOT>", text)
    return [piece for p in _SENTENCE_END.split(protected) if p and p.strip()
            for piece in _pieces(p.replace("<DOT>", ".").strip()) if piece]


def clauses(sentence: str) -> list[str]:
    """Split a sentence where a new statement starts, so each fact stays atomic; what a
    "who" clause says of a person is a statement of its own (``relative_statements``)."""
    sentence, told = relative_statements(sentence)
    pieces: list[str] = []
    for piece in R.CLAUSE_BREAK.split(sentence):
        piece = piece.strip(" ,")
        # "…adopting a rescue dog - for love and to teach our kids…": a phrase, not a statement.
        if pieces and piece and (R.CONTINUATION.match(piece) or not R.HAS_SUBJECT.search(piece)):
            pieces[-1] = f"{pieces[-1]}, {piece}"
        elif piece:
            pieces.append(piece)
    parts = []
    for piece in pieces:
        for sub in _split_joins(piece):
            left, *rest = R.COMMA_SUBJECT.split(sub)
            # "Especially after I failed the test, I've been…": the cut-off part is still a fact.
            parts.extend([R.FACTUAL_SUBORDINATOR.sub("", left) if rest else left, *rest])
    return [p.strip(" ,") for p in parts if p and p.strip(" ,")] + told


# "<a person>, who <does something>": "our tech lead Bruno, who runs Fedora", "Bruno, our
# tech lead, who runs Fedora", "my sister Ana, who lives in Porto, is visiting".
_WHO = re.compile(
    r"(?P<np>(?:\b(?i:my|our|his|her|their)\s+(?:[A-Za-z-]+\s+){0,3}?)?\b[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?)"
    r"(?:,\s+(?P<role>(?:my|our)\s+(?:[\w-]+\s+){0,2}[\w-]+))?,\s+who\s+(?P<vp>[^,;:?!.]+?)\s*(?=[,;:?!.]|$)")


def relative_statements(sentence: str) -> tuple[str, list[str]]:
    """The sentence without its "who" clauses about a person, and each as a statement
    of that person: "Bruno, our tech lead, who runs everything on Fedora" → "our tech
    lead Bruno runs everything on Fedora"."""
    told = []
    for m in _WHO.finditer(sentence):
        who = f"{m['role']} {m['np']}" if m["role"] else m["np"]
        name = re.sub(r"^(?i:my|our|his|her|their)\s+(?:[a-z-]+\s+)*", "", m["np"])  # "my sister Ana" → "Ana"
        if name and name.split()[0].lower() not in C.NOT_ENTITIES:
            told.append(f"{who} {m['vp'].strip()}")
    if not told:
        return sentence, []
    return re.sub(r",\s+who\s+[^,;:?!.]+?\s*(?=[,;:?!.]|$),?", "", sentence), told


def _split_joins(piece: str) -> list[str]:
    """Split at "and I…"/"but we…", except inside a plural subject ("My wife and I were…")."""
    out, start = [], 0
    for m in R.JOIN.finditer(piece):
        left = piece[start:m.start()]
        if "," not in m.group(0) and not R.LEFT_HAS_CLAUSE.search(left):
            continue
        out.append(left)
        start = m.end()
    out.append(piece[start:])
    return out


def split_label(clause: str) -> tuple[str, str]:
    """Separate a heading ("Change of plan on scheduling: …", "Remember this: …") from the
    statement; "Joanna got ideas from everywhere: …" is a statement, not a heading."""
    found = R.LABEL.match(clause)
    if not found:
        return "", clause
    head = found.group(1)
    if len(head.split()) > 3 and R.FINITE_VERB.search(head) and not C.ASKS_TO_KEEP.search(head):
        return "", clause
    return head, clause[found.end():]


def strip_filler(clause: str, names: tuple[str, ...]) -> str:
    """Peel interjections and vocatives ("Wow, Caroline!") off a clause."""
    vocative = (r"(?:" + "|".join(re.escape(n) for n in names if n) + r")") if names else None
    previous = None
    while previous != clause:
        previous = clause
        clause = R.LEADING_FILLER.sub("", clause).strip()
        if vocative:
            clause = re.sub(r"^" + vocative + r"\w{0,2}\b[\s,!.:]*", "", clause, flags=re.IGNORECASE).strip()
            clause = re.sub(r",\s*" + vocative + r"\w{0,2}\s*([.!?]*)$", r"\1", clause, flags=re.IGNORECASE).strip()
    return clause


def is_question(clause: str) -> bool:
    text = R.QUESTION_TAG.sub("", clause.strip()).strip()
    if re.search(r"(?:\?!|!\?)[?!]*$", text):
        return False  # "the deploy failed again?!" is exasperation, not a question
    return text.endswith("?") or bool(R.QUESTION_START.match(text)) or bool(R.QUESTION_INVERSION.match(text))


def drop_tail_question(clause: str) -> str:
    # "…about my flight, does it look right?": the tail question goes whole, before a tag
    # ("right?") is peeled off and leaves "does it look" behind.
    if found := R.TAIL_QUESTION.match(clause.strip()):
        return found.group(1)
    text = R.QUESTION_TAG.sub("", clause.strip()).strip()
    found = R.TAIL_QUESTION.match(text)
    return found.group(1) if found else text


def is_chatter(clause: str) -> bool:
    return R.CHATTER.search(clause) is not None


def content_words(text: str, names: tuple[str, ...] = ()) -> list[str]:
    """The words that carry information: no stopwords, verdicts, vague verbs or names."""
    lowered_names = {n.lower() for n in names}
    words = []
    for word in (t for t in tokens(text) if t[0].isalpha()):
        w = word.lower().strip("'-").split("'")[0]
        if len(w) > 2 and w not in C.STOPWORDS and w not in R.EVALUATIVE and w not in R.VAGUE and w not in lowered_names:
            words.append(w)
    return words


def has_verb(text: str) -> bool:
    """A finite verb somewhere: "Expression of myself and a way to relax" has none."""
    return _VERB.search(text) is not None


def is_specific(text: str) -> bool:
    """Concrete enough to stand without a speaker: a number, a date, a name, a code span."""
    if C.QUANTITY.search(text) or DATE.search(text) or re.search(r"`[^`]+`|\d", text):
        return True
    return re.search(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-zA-Z0-9]+", text.strip()) is not None


# A sentence that opens on a person's proper name as its subject: "Yusuf switched…", "Mr.
# Okafor, our landlord, lives…", "Lea's contract went up…" (the name, then a lowercase
# word, a possessive, or an apposition).
_NAME_OPENING = re.compile(r"^(?:(?:Mr|Mrs|Ms|Dr|Prof)\.?\s+)?(?P<name>[A-Z][a-z]+)"
                           r"(?:'s\s+[a-z]|,\s+(?:our|my|the|his|her|their)\s|\s+(?=[a-z]))")


def opens_on_name(text: str, names: tuple[str, ...] = ()) -> bool:
    """Whether ``text``'s subject is someone named by a proper name: a name the session knows
    (``names``), or a capitalised word that is no English word in lemminflect's lexicon
    ("Yusuf", "Okafor"; not "Sure", "Honestly") and no adverb."""
    m = _NAME_OPENING.match(text.strip())
    if m is None:
        return False
    name = m["name"].lower()
    return name in {n.lower() for n in names} or not (name.endswith("ly") or lexicon().getAllLemmas(name))


def absolute_dates(text: str, when: datetime) -> str:
    """Write an adverbial "today", "yesterday", "tomorrow", "last night" as the date it
    means from the turn's timestamp: "…out of winter storage today" → "…on March 1"."""
    def dated(m: re.Match[str]) -> str:
        word = m.group(2).lower()
        day = (when + timedelta(days=RELATIVE_DAYS[word])).date()
        return f" {m.group(1) or 'on'} {C.DAY_PART.get(word, '')}{day.strftime('%B')} {day.day}"
    return C.RELATIVE_DAY_ADVERB.sub(dated, text)


def finish(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip(" ,;:-")
    text = re.sub(r"[.!?]*$", "", text).rstrip(" ,;:-")
    if not text:
        return ""
    # Capitalise a sentence, not an identifier ("sqlalchemy.exc.TimeoutError: …").
    head = text.split()[0]
    return (text if re.search(r"[._/-]", head) and head[:1].islower() else text[:1].upper() + text[1:]) + "."


# --- Labels ------------------------------------------------------------------------

def kind_of(clause: str) -> str:
    for kind, pattern in C.KIND_RULES:
        cues = [m.group(0).lower() for m in pattern.finditer(clause)]
        if not cues:
            continue
        if kind == "preference" and set(cues) <= {"like", "likes"} and not C.LIKE_AS_VERB.search(clause):
            continue  # "like" as a comparison, not a liking
        return kind
    if C.PAST_TENSE.search(clause) and (C.TIME_ANCHOR.search(clause) or C.EVENT_VERB.search(clause)):
        return "event"
    return "fact"


def supersedes_of(clause: str) -> str | None:
    """What a correction replaces, as a short phrase the supersession step can match."""
    for pattern in C.SUPERSEDES:
        found = pattern.search(clause)
        if found and found.group(1).strip():
            return " ".join(C.SUPERSEDES_TRIM.sub("", found.group(1).strip()).split()[:5]) or None
    for pattern in C.SUPERSEDES_TOPIC:
        found = pattern.search(clause)
        if found:
            return found.group(1)
    return None


def strength_of(text: str) -> str:
    if C.INFERRED.search(text):
        return "inferred"
    if C.IMPLIED.search(text):
        return "implied"
    return "explicit"


def entities_of(clause: str, names: tuple[str, ...], when: datetime) -> list[str]:
    """Names, products, quantities with units and dates; "yesterday" as the date it was."""
    found: list[str] = [n for n in names if n and n not in ("User", "the assistant")]
    found += [m.group(1) for m in re.finditer(r"`([^`]+)`", clause)]
    found += [m.group(0).strip() for m in C.QUANTITY.finditer(clause)]
    found += [m.group(0).strip() for m in DATE.finditer(clause)]
    for m in re.finditer(r"\b[A-Z][A-Za-z0-9&'-]*(?:\s+(?:of\s+|the\s+|&\s+)?[A-Z][A-Za-z0-9&'-]*)*", clause):
        phrase = re.sub(r"'s$", "", m.group(0))
        if phrase.split()[0].lower() in C.NOT_ENTITIES or phrase.lower() in C.NOT_ENTITIES:
            continue
        at_start = re.match(r"^[\s\"'(]*$", clause[:m.start()]) is not None
        if at_start and " " not in phrase and not phrase.isupper() and phrase not in names:
            continue  # a capitalised first word is usually just a sentence start
        if not any(phrase in other for other in found):
            found.append(phrase)
    lowered = clause.lower()
    for word, offset in RELATIVE_DAYS.items():
        if re.search(r"\b" + word + r"\b", lowered):
            found.append((when + timedelta(days=offset)).date().isoformat())
    return list(dict.fromkeys(found))
