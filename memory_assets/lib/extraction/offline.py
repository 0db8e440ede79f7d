"""The extractor used when no LLM is configured: rules over sentences, no model, no network.

Per informative clause a user says, it proposes one literal fact in the third person:
"I went to a support group yesterday" said by Caroline becomes "Caroline went to a
support group yesterday." Questions, greetings, thanks, filler and one-off requests to
the assistant yield nothing. An assistant's statement becomes a fact only when the
user's next turn confirms it; tool output and [UNTRUSTED DATA] yield untrusted facts,
never instructions, claims about the user or claims the user denies. Within a session
the user's last word stands: a value changed later replaces the earlier one. The word
lists and cue patterns live in ``rules.py``; this module is the procedure.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from memory_assets.lib.extraction import rules as R
from memory_assets.lib.extraction.base import ExtractionResult
from memory_assets.lib.extraction.preprocess import Segment, segments
from memory_assets.lib.items.gate import steers_agent
from retrieval.config import MemoryConfig
from retrieval.text import NEGATION, sentiment
from retrieval.schema import Candidate, Turn

_ABBREV = re.compile(r"\b(" + "|".join(a if "(" in a else re.escape(a) for a in R.ABBREVIATIONS) + r")\.", re.IGNORECASE)
# "…amazing!Thanks" splits; "sqlalchemy.exc.TimeoutError" does not.
# "./..." (a Go package pattern) is a path, not the end of a sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!/\.\.\.)[\"')\]]*\s+|\n+|(?<=[!?])(?=[A-Z][a-z])")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
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
_SUBJECT_I = re.compile(
    r"\bi\b((?:\s+(?:" + "|".join(sorted(R.ADVERBS)) + r"|(?!(?:fly|rely|reply|apply|supply|multiply|bully)\b)[a-z]+ly))*)"
    r"\s+([a-z']+(?:-[a-z]+)?)(\s+and\s+([a-z]+)\b)?", re.IGNORECASE)
# "you" as a subject (sentence start or after a conjunction) takes a third-person verb.
_SUBJECT_YOU = re.compile(
    r"((?:^|\b(?:that|and|but|because|if|when|whenever|so|as|since|how|what|like|until|unless|before|after|once)\s+|,\s*))you\b((?:\s+(?:"
    + "|".join(sorted(R.ADVERBS)) + r"|[a-z]+ly))*)\s+(?!(?:are|were|have|don't|do|'re|'ve)\b)([a-z']+)",
    re.IGNORECASE)


@dataclass(frozen=True)
class _Voice:
    """Who is speaking and to whom, for rewriting pronouns."""

    name: str
    addressee: str | None
    companion: str | None = None


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
    found = R.CAPTION.search(text)
    if not found:
        return text, None
    return R.CAPTION.sub(" ", text).strip(), found.group(1).strip() or None


def sentences(text: str) -> list[str]:
    text = R.EMOJI.sub(" ", text.replace("’", "'"))
    text = re.sub(r"^\s*(?:[-*•]|\d+[.)])\s+", "", text, flags=re.MULTILINE)  # list bullets
    protected = _ABBREV.sub(lambda m: m.group(1) + "<DOT>", text)
    return [p.replace("<DOT>", ".").strip() for p in _SENTENCE_END.split(protected) if p and p.strip()]


def clauses(sentence: str) -> list[str]:
    """Split a sentence where a new statement starts, so each fact stays atomic."""
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
    return [p.strip(" ,") for p in parts if p and p.strip(" ,")]


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
    if len(head.split()) > 3 and R.FINITE_VERB.search(head) and not R.REMEMBER.search(head):
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
    for word in _WORD.findall(text):
        w = word.lower().strip("'-").split("'")[0]
        if len(w) > 2 and w not in R.STOPWORDS and w not in R.EVALUATIVE and w not in R.VAGUE and w not in lowered_names:
            words.append(w)
    return words


def has_verb(text: str) -> bool:
    """A finite verb somewhere: "Expression of myself and a way to relax" has none."""
    return _VERB.search(text) is not None


def is_specific(text: str) -> bool:
    """Concrete enough to stand without a speaker: a number, a date, a name, a code span."""
    if R.QUANTITY.search(text) or R.DATE.search(text) or re.search(r"`[^`]+`|\d", text):
        return True
    return re.search(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-zA-Z0-9]+", text.strip()) is not None


def absolute_dates(text: str, when: datetime) -> str:
    """Write an adverbial "today", "yesterday", "tomorrow", "last night" as the date it
    means from the turn's timestamp: "…out of winter storage today" → "…on March 1"."""
    def dated(m: re.Match[str]) -> str:
        word = m.group(2).lower()
        day = (when + timedelta(days=R.RELATIVE_DAYS[word])).date()
        return f" {m.group(1) or 'on'} {R.DAY_PART.get(word, '')}{day.strftime('%B')} {day.day}"
    return R.RELATIVE_DAY_ADVERB.sub(dated, text)


def _finish(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip(" ,;:-")
    text = re.sub(r"[.!?]*$", "", text).rstrip(" ,;:-")
    if not text:
        return ""
    # Capitalise a sentence, not an identifier ("sqlalchemy.exc.TimeoutError: …").
    head = text.split()[0]
    return (text if re.search(r"[._/-]", head) and head[:1].islower() else text[:1].upper() + text[1:]) + "."


# --- Pronouns ------------------------------------------------------------------------

def _as_said(text: str, voice: _Voice, turn: Turn) -> str:
    """A clause as a fact: in the third person, relative days as dates, finished."""
    return _finish(absolute_dates(rewrite_first_person(text, voice), turn.content_at))


def _third_person(verb: str) -> str:
    if "-" in verb:  # "force-push" → "force-pushes"
        head, _, last = verb.rpartition("-")
        return f"{head}-{_third_person(last)}"
    low = verb.lower()
    if low in R.THIRD_PERSON:
        return R.THIRD_PERSON[low]
    if (low in R.INVARIANT_AFTER_I or low in R.IRREGULAR_PAST or low.endswith("ed") and low not in R.BASE_ENDING_ED
            or low.endswith("n't") or not low.isalpha()):
        return verb
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def rewrite_first_person(text: str, voice: _Voice) -> str:
    """Replace I/me/my/we (and "you", when the listener is known) with names, keeping
    the rest of the wording literal and the verbs in agreement."""
    for pattern, plain in R.CASUAL:
        text = pattern.sub(plain, text)
    n = voice.name
    group = f"{n} and {n}'s {voice.companion}" if voice.companion else f"{n} and others"

    def plural(before: str) -> bool:
        # "My wife and I" is a plural subject; "I have a dog and I walk him" is two clauses.
        segment = re.split(r"[,;:]", before)[-1]
        return (re.search(r"\w\s+(?:and|or)\s+$", segment) is not None
                and re.search(r"\b(?:i|" + re.escape(n) + r")\b", before, re.IGNORECASE) is None
                and not R.LEFT_HAS_CLAUSE.search(segment))

    text = re.sub(r"(\w\s+(?:and|or)\s+)i\b(?!')",
                  lambda m: m.group(1) + n if plural(m.string[:m.end(1)]) else m.group(0), text, flags=re.IGNORECASE)
    text = re.sub(r"\bi'd\b", lambda m: f"{n} had" if R.PARTICIPLE_AFTER_D.match(text[m.end():]) else f"{n} would",
                  text, flags=re.IGNORECASE)
    for pattern, repl in ((r"\bi'?m\b|\bi am\b", f"{n} is"), (r"\bi've\b|\bi have\b", f"{n} has"),
                          (r"\bi'll\b|\bi will\b", f"{n} will"), (r"\bi don't\b|\bi do not\b", f"{n} does not"),
                          (r"\bi haven't\b", f"{n} hasn't")):
        text = re.sub(pattern, repl, text, flags=re.IGNORECASE)

    def subject(m: re.Match[str]) -> str:
        if plural(text[:m.start()]):
            return f"{n}{m.group(0)[1:]}"
        verb, second, tail = m.group(2), m.group(4), ""
        if m.group(3):
            # "I practice and train" → "practices and trains"; "I love cooking and baking" keeps the gerund.
            both = second.lower() not in R.STOPWORDS and not second.lower().endswith("ing") and _third_person(verb) != verb
            tail = f" and {_third_person(second) if both else second}"
        return f"{n}{m.group(1)} {_third_person(verb)}{tail}"

    text = _SUBJECT_I.sub(subject, text)
    text = re.sub(r"\bi\b", n, text, flags=re.IGNORECASE)
    for pattern, repl in ((r"\bwe're\b|\bwe are\b", f"{group} are"), (r"\bwe've\b", f"{group} have"),
                          (r"\bwe'll\b", f"{group} will"), (r"\bwe'd\b", f"{group} would"),
                          (r"\bourselves\b", "themselves"), (r"\bmine\b|\bmy\b|\bours\b|\bour\b", f"{n}'s"),
                          (r"\bus\b|\bwe\b", group), (r"\bme\b", n)):
        text = re.sub(pattern, repl, text, flags=re.IGNORECASE)
    # "myself" names the speaker unless the clause already does ("Caroline taught themself").
    named = re.search(r"\b" + re.escape(n) + r"\b", text)
    text = re.sub(r"\bmyself\b", "themself" if named else n, text, flags=re.IGNORECASE)
    if voice.addressee:
        a = voice.addressee
        text = _SUBJECT_YOU.sub(lambda m: f"{m.group(1)}{a}{m.group(2)} {_third_person(m.group(3))}", text)
        for pattern, repl in ((r"\byou're\b|\byou are\b", f"{a} is"), (r"\byou've\b|\byou have\b", f"{a} has"),
                              (r"\byou were\b", f"{a} was"), (r"\byou don't\b|\byou do not\b", f"{a} does not"),
                              (r"\byou'll\b", f"{a} will"), (r"\byou'd\b", f"{a} would"),
                              (r"\byourself\b", "themself"), (r"\byours\b|\byour\b", f"{a}'s"), (r"\byou\b", a)):
            text = re.sub(pattern, repl, text, flags=re.IGNORECASE)
    return text


def _resolve(clause: str, antecedent: str, things: bool) -> str:
    """Put the antecedent in place of an opening he/she ("She just got into ceramics"),
    or "it" when the antecedent was named in the sentence before ("Star Wars! It's…")."""
    pronoun = r"(?:he|she|it)" if things else r"(?:he|she)"
    clause = re.sub(r"^" + pronoun + r"'s(?=\s+(?:been|got|gotten|[a-z]+ed)\b)", antecedent + " has", clause,
                    count=1, flags=re.IGNORECASE)
    clause = re.sub(r"^" + pronoun + r"'s\b", antecedent + " is", clause, count=1, flags=re.IGNORECASE)
    return re.sub(r"^" + pronoun + r"\b", antecedent, clause, count=1, flags=re.IGNORECASE)


@dataclass(frozen=True)
class _Mention:
    """A named third person the session talked about: who, in which turn, and "f"/"m"
    when a relation word or a pronoun in the same sentence says so (None: either)."""

    index: int
    name: str
    gender: str | None


def _gender(word: str) -> str | None:
    low = word.lower()
    return "f" if low in R.FEMININE else "m" if low in R.MASCULINE else None


def note_people(sentence: str, named: str | None, index: int, mentions: list[_Mention]) -> None:
    """Add the people a sentence names ("my daughter Zoe", "Dr. Alvarez", a name opening
    it) to ``mentions``, most recent last; a "she"/"he" in the same sentence gives an
    unmarked name its gender ("Mochi is my Shiba Inu, she's 4")."""
    found = [(m.start(), m.group(1) or m.group(2), _gender(m.group(0).split()[-2].strip(",")) if m.group(1) else None)
             for m in R.PERSON.finditer(sentence)]
    if named and named.split()[0].lower() not in R.NOT_ENTITIES and " " not in named:
        found.append((-1, named, None))
    pronouns = {m.group(1).lower() for m in R.PERSON_PRONOUN.finditer(sentence)}
    heard = "f" if pronouns & {"she", "her"} and not pronouns & {"he", "his", "him"} else \
        "m" if pronouns & {"he", "his", "him"} and not pronouns & {"she", "her"} else None
    for _, name, gender in sorted(found):
        mentions.append(_Mention(index, name, gender or (heard if len(found) == 1 else None)))


def referent(mentions: list[_Mention], pronoun: str, index: int, within: int = 6) -> str | None:
    """Who a he/she/her/his/him means: the most recently named person of that gender in
    the last few turns, else the most recent one of unknown gender ("Dr. Alvarez" does not
    take the "she" that has meant Mochi); None when no one fits."""
    wanted = "f" if pronoun.lower() in ("she", "her") else "m"
    recent = [m for m in mentions if index - m.index <= within]
    for gender in (wanted, None):
        for m in reversed(recent):
            if m.gender == gender:
                return m.name
    return None


def resolve_people(clause: str, mentions: list[_Mention], index: int) -> tuple[str, tuple[str, ...]]:
    """Put names in place of third-person pronouns inside a clause ("The school needs her
    vaccination record" → "…needs Zoe's vaccination record"); once a person is named in
    the clause, later pronouns for them stay. Returns the clause and the names used."""
    used: list[str] = []

    def swap(m: re.Match[str]) -> str:
        pronoun, contracted = m.group(1), m.group(2)
        name = referent(mentions, pronoun, index)
        if name is None or re.search(r"\b" + re.escape(name) + r"\b", m.string[:m.start()]):
            return m.group(0)
        low = pronoun.lower()
        if low in ("she", "he"):
            if contracted == "'s":
                has = re.match(r"\s+(?:been|got|gotten|[a-z]+ed)\b", m.string[m.end():])
                out = f"{name} {'has' if has else 'is'}"
            elif contracted:
                out = name + (" will" if contracted == "'ll" else " would")
            else:
                out = name
        elif low == "his":
            out = f"{name}'s"
        elif low == "her":
            after = re.match(r"\s+([A-Za-z][\w-]*)", m.string[m.end():])
            possessive = after is not None and after.group(1).lower() not in R.NOT_AFTER_POSSESSIVE
            out = f"{name}'s" if possessive else name
        else:
            out = name
        used.append(name)
        return out

    # One pass per pronoun, left to right, so "She gets her pill" names her once.
    result, start = clause, 0
    while found := R.PERSON_PRONOUN.search(result, start):
        replaced = swap(found)
        result = result[:found.start()] + replaced + result[found.end():]
        start = found.start() + len(replaced)
    if used and result[:1].islower():
        result = result[:1].upper() + result[1:]
    return result, tuple(dict.fromkeys(used))


def _antecedent(sentence: str, names: tuple[str, ...]) -> str | None:
    """A name opening a sentence ("Oliver's hilarious!") is who the next "he/she" is."""
    found = R.NAME_START.match(strip_filler(sentence, names).rstrip(" .!?")) or R.LABEL_NAME.match(sentence)
    if not found or found.group(1) in names or found.group(1).split()[0].lower() in R.NOT_ENTITIES:
        return None
    return found.group(1)


# --- Labels ------------------------------------------------------------------------

def kind_of(clause: str) -> str:
    for kind, pattern in R.KIND_RULES:
        cues = [m.group(0).lower() for m in pattern.finditer(clause)]
        if not cues:
            continue
        if kind == "preference" and set(cues) <= {"like", "likes"} and not R.LIKE_AS_VERB.search(clause):
            continue  # "like" as a comparison, not a liking
        return kind
    if R.PAST_TENSE.search(clause) and (R.TIME_ANCHOR.search(clause) or R.EVENT_VERB.search(clause)):
        return "event"
    return "fact"


def supersedes_of(clause: str) -> str | None:
    """What a correction replaces, as a short phrase the supersession step can match."""
    for pattern in R.SUPERSEDES:
        found = pattern.search(clause)
        if found and found.group(1).strip():
            return " ".join(R.SUPERSEDES_TRIM.sub("", found.group(1).strip()).split()[:5]) or None
    for pattern in R.SUPERSEDES_TOPIC:
        found = pattern.search(clause)
        if found:
            return found.group(1)
    return None


def strength_of(text: str) -> str:
    if R.INFERRED.search(text):
        return "inferred"
    if R.IMPLIED.search(text):
        return "implied"
    return "explicit"


def entities_of(clause: str, names: tuple[str, ...], when: datetime) -> list[str]:
    """Names, products, quantities with units and dates; "yesterday" as the date it was."""
    found: list[str] = [n for n in names if n and n not in ("User", "the assistant")]
    found += [m.group(1) for m in re.finditer(r"`([^`]+)`", clause)]
    found += [m.group(0).strip() for m in R.QUANTITY.finditer(clause)]
    found += [m.group(0).strip() for m in R.DATE.finditer(clause)]
    for m in re.finditer(r"\b[A-Z][A-Za-z0-9&'-]*(?:\s+(?:of\s+|the\s+|&\s+)?[A-Z][A-Za-z0-9&'-]*)*", clause):
        phrase = re.sub(r"'s$", "", m.group(0))
        if phrase.split()[0].lower() in R.NOT_ENTITIES or phrase.lower() in R.NOT_ENTITIES:
            continue
        at_start = re.match(r"^[\s\"'(]*$", clause[:m.start()]) is not None
        if at_start and " " not in phrase and not phrase.isupper() and phrase not in names:
            continue  # a capitalised first word is usually just a sentence start
        if not any(phrase in other for other in found):
            found.append(phrase)
    lowered = clause.lower()
    for word, offset in R.RELATIVE_DAYS.items():
        if re.search(r"\b" + word + r"\b", lowered):
            found.append((when + timedelta(days=offset)).date().isoformat())
    return list(dict.fromkeys(found))


class _Categorizer:
    """Best keyword match against the configured categories (most distinct keywords wins,
    ties go to the category listed first)."""

    def __init__(self, config: MemoryConfig):
        self.owners: dict[str, list[str]] = {}
        for name, category in config.categories.items():
            for keyword in category.keywords:
                self.owners.setdefault(keyword, []).append(name)
        self.order = {name: i for i, name in enumerate(config.categories)}
        # Longest first, so "run the" wins over "run" and "oil change" over "change".
        keywords = sorted(self.owners, key=len, reverse=True)
        self.pattern = re.compile(r"\b(?:" + "|".join(re.escape(k) for k in keywords) + r")\b") if keywords else None

    def hits(self, text: str) -> list[tuple[str, str]]:
        if self.pattern is None:
            return []
        lowered = text.lower()
        # "like" only counts as a liking after a subject ("I like"), not as a comparison.
        masked = re.sub(r"\blike\b", "____", lowered)
        for m in R.LIKE_AS_VERB.finditer(lowered):
            masked = masked[:m.start()] + lowered[m.start():m.end()] + masked[m.end():]
        return [(name, m.group(0)) for m in self.pattern.finditer(masked) for name in self.owners[m.group(0)]]

    def best(self, text: str, default: str, skip: tuple[str, ...] = ()) -> tuple[str, list[str]]:
        hits = list(dict.fromkeys(h for h in self.hits(text) if h[0] not in skip))
        if not hits:
            return default, []
        scores: dict[str, int] = {}
        for name, _ in hits:
            scores[name] = scores.get(name, 0) + 1
        best = min(scores, key=lambda c: (-scores[c], self.order[c]))
        return best, list(dict.fromkeys(k for _, k in hits))


# --- The extractor ----------------------------------------------------------------

class OfflineExtractor:
    """Rule-based extraction: deterministic, offline, fast.

    Args:
        config: the memory config; category keywords pick each fact's category and
            ``tiers`` its tier.
    """

    name = "offline"
    version = "rules-v8"

    def __init__(self, config: MemoryConfig):
        self.config = config
        self._categorizer = _Categorizer(config)

    def extract(self, turns: list[Turn]) -> ExtractionResult:
        """Candidate facts from one session's turns, in order."""
        by_turn: dict[int, list[Segment]] = {}
        for seg in segments(turns):
            by_turn.setdefault(seg.turn.turn, []).append(seg)
        ordered = [t for t in turns if t.role != "system"]
        names = tuple(dict.fromkeys(speaker_name(t) for t in turns if t.role == "user"))
        user_names = tuple(n for n in names if n != "User")
        # Two people talking (LoCoMo) rather than a user instructing an assistant, whose
        # turns an agent may not even send: there "never give up" is advice, not a rule.
        agent = any(t.role == "assistant" for t in turns) or len(names) < 2
        # Who "we" was, per speaker: (turn index, who), remembered for a few turns; and
        # the people the session has named, for "she", "his", "him".
        companions: dict[str, tuple[int, str]] = {}
        mentions: list[_Mention] = []
        out: list[Candidate] = []
        seen: set[str] = set()
        absorbed: dict[int, str] = {}  # a reply's details already folded into the fact it confirmed
        for index, turn in enumerate(ordered):
            found: list[Candidate] = []
            for seg in by_turn.get(turn.turn, []):
                if not seg.trusted:
                    later = [s.text for t in ordered[index + 1:] if t.role == "user"
                             for s in by_turn.get(t.turn, []) if s.trusted]
                    found += self._untrusted(seg, user_names, later)
                elif turn.role == "assistant":
                    reply = next((t for t in ordered[index + 1:] if t.role != "tool"), None)
                    if reply is not None and reply.role == "user" and _confirms(reply):
                        untrusted = {w for t in ordered[:index] for s in by_turn.get(t.turn, []) if not s.trusted
                                     for w in _tokens(s.text)}
                        confirmed = self._confirmed(seg, reply, untrusted)
                        # "Want a reminder?" "Yes, Sundays at 4pm.": the details belong to the yes.
                        if confirmed and (details := _answer_details(reply, names)):
                            said = rewrite_first_person(details, _Voice(speaker_name(reply), "the assistant"))
                            last = confirmed[-1]
                            confirmed[-1] = dataclasses.replace(
                                last, content=_finish(f"{last.content.rstrip('.')}, {_lower_lead(said)}"))
                            absorbed[reply.turn] = _finish(said).lower()
                        found += confirmed
                elif turn.role == "user":
                    name = speaker_name(turn)
                    if m := R.COMPANION.search(seg.text):
                        companions[name] = (index, m.group(1).lower())
                    companion = _recent(companions.get(name), index)
                    voice = _Voice(name, "the assistant" if agent else _addressee(ordered, index), companion)
                    found += [c for c in self._stated(seg, voice, names, agent, index, mentions)
                              if c.content.lower() != absorbed.get(turn.turn)]
            for cand in found:
                if cand.content.lower() not in seen:
                    seen.add(cand.content.lower())
                    out.append(cand)
        # "Hmm, actually no." opening a turn: everything in it changes what came before.
        reversing = {t.turn for t in ordered if t.role == "user" and R.TURN_REVERSAL.match(t.content)}
        speakers = {t.turn: speaker_name(t) for t in ordered}
        # What others claimed: the assistant's sentences, tool output, pasted data.
        claims = [(seg.turn.turn, sentence) for seg in segments(turns)
                  if not seg.trusted or seg.turn.role == "assistant" for sentence in sentences(seg.text)]
        settled = _settle_reversals(out, names, reversing, speakers)
        return ExtractionResult(candidates=[_denial_of(c, claims, names, self.config) for c in settled])

    # A user's own words.
    def _stated(self, seg: Segment, voice: _Voice, names: tuple[str, ...], agent: bool, index: int,
                mentions: list[_Mention]) -> list[Candidate]:
        """A user turn's facts. ``mentions`` holds the people named so far in the session
        and gains the ones this turn names."""
        text, caption = split_caption(seg.text)
        found: list[Candidate] = []
        all_names = tuple(dict.fromkeys(names + ((voice.addressee,) if voice.addressee else ())))
        antecedent: str | None = None
        previous: Candidate | None = None  # the fact the last sentence ended on
        for sentence in sentences(text):
            # "I finally bought a kiln! A used Skutt KM-818, 600 dollars from a retiring
            # teacher.": a verbless sentence right after a fact describes that fact.
            if previous is not None and (tail := _appositive(sentence, all_names)):
                merged = dataclasses.replace(previous, content=_finish(f"{previous.content.rstrip('.')}, {tail}"))
                found[found.index(previous)] = merged
                previous = None
                continue
            previous = None
            for raw in clauses(sentence):
                cand = self._clause(raw, sentence, seg.turn, voice, all_names, agent, antecedent, (index, mentions))
                if cand is not None:
                    found.append(cand)
                    previous = cand
                # "My wife Priti has the folder, I need to ask her": the next clause's "her".
                note_people(raw, None, index, mentions)
            antecedent = _antecedent(sentence, all_names)
            note_people(sentence, antecedent, index, mentions)
        if caption and R.REFERS_TO_IMAGE.search(text):
            what = R.CAPTION_LEAD.sub("", caption.strip().rstrip("."))
            if len(content_words(what)) >= 2:
                found.append(self._candidate(_finish(f"{voice.name} shared a photo of {what}"), what, what,
                                             seg.turn, voice, "fact", False))
        return found

    def _clause(self, raw: str, sentence: str, turn: Turn, voice: _Voice, names: tuple[str, ...],
                agent: bool, antecedent: str | None, people: tuple[int, list[_Mention]]) -> Candidate | None:
        """One clause's fact, or None. ``antecedent`` is a name that opened the sentence
        before (what an opening "he", "she" or "it" means); ``people`` the turn's index
        and the people named so far, for pronouns elsewhere."""
        raw = R.CHATTER_TAIL.sub("", raw.strip())
        if R.CHATTER_OPENERS.match(raw):
            return None
        label, body = split_label(raw)
        remember = bool(R.REMEMBER.search(raw))
        clause = strip_filler(drop_tail_question(body), names)
        clause = R.ANNOUNCEMENT.sub("", R.REMEMBER_PREFIX.sub("", clause)).strip()
        cue = f"{label}: {clause}" if label else clause  # "Change of plan: …" is a correction cue
        clause = re.sub(r"^no[,.!]+\s+(?=\w)", "", clause, flags=re.IGNORECASE)
        if (not clause or is_question(clause) or is_chatter(clause)
                or R.SUBORDINATE_START.match(clause) and "," not in clause
                or R.PREPOSITION_START.match(clause) and not R.SUBJECT_PRONOUN.search(clause)):
            return None
        if agent and (R.PASTE_INTRO.search(clause) or R.LET_ME.match(clause)):
            return None  # "here's what I set in the env:" hands material over; "let me ask" is a next step
        if agent:
            request = self._request(clause, cue, sentence, turn, voice, remember)
            if request is not None:
                return request or None
        if R.SECOND_PERSON_SUBJECT.match(clause) and not agent and voice.addressee:
            # "You've put a lot of work into this" to Jon: what Gina said about Jon.
            told = R.DANGLING_END.sub("", R.EVALUATIVE_TAIL.sub("", clause).strip())
            return self._reported(told, clause, sentence, turn, voice, names)
        if R.SECOND_PERSON_SUBJECT.match(clause) or R.SOCIAL_IMPERATIVE.match(clause) or R.GENERIC_WE.search(clause) \
                or R.LETS.match(clause):
            return None
        clause = R.DANGLING_END.sub("", R.EVALUATIVE_TAIL.sub("", clause).strip())
        resolved = _resolve(clause, antecedent, True) if antecedent else clause
        resolved, used = resolve_people(resolved, people[1], people[0])
        named_first = bool(antecedent) and resolved.startswith(antecedent)  # it opens on the sentence's name
        text = resolved
        if (intro := R.SELF_INTRO.match(text)) and intro.group(1) == voice.name:
            text = "I'm " + text[intro.end():]
        for pattern, lead, unless in R.PRO_DROP:
            if pattern.match(text) and not (unless and unless.search(text)):
                text = pattern.sub(lead, text[:1].lower() + text[1:], count=1)
                break
        # "She just got into ceramics" about "my sister Maya" is a fact; "he never gives up"
        # about a name that merely opened the last sentence is too often a character or a verdict.
        about_someone = not named_first and resolved != clause \
            and re.match(r"(?:he|she)\b", clause, re.IGNORECASE)
        if not (R.FIRST_PERSON.search(text) or about_someone
                or agent and (is_specific(text) or self._domain_fact(text, names))):
            return None if agent else self._reported(text, clause, sentence, turn, voice, names)
        singular = R.SINGULAR_FIRST_PERSON.search(text)
        if not singular and R.FIRST_PERSON.search(text) and R.GENERIC_WE_CLAIM.search(text) and not R.WE_DID.search(text):
            return None
        if not singular and (R.MAXIM.match(text) or R.OPINION_OPENER.match(text)):
            return None
        if R.DEICTIC_SUBJECT.match(text) and len(content_words(text, names)) < 3:
            return None
        if agent and R.UNRESOLVED_PERSON.match(text) and not (R.REVERSAL.search(text) or kind_of(cue) == "correction"):
            # "They need CSV after all": who needs it is in another turn, and a vague fact is
            # worse than none; a change ("…April 15 now, not the 17th") stays, to replace the old value.
            return None
        # A verbless answer ("Max 200, not 500.", "Sundays at 4pm.") leans on the question
        # it answers; only one with enough of its own ("Dr. Alvarez at Cedar Animal Clinic")
        # stands alone.
        if not has_verb(text) and not (agent and is_specific(text) and len(content_words(text, names)) >= 4):
            return None
        if agent and R.PRONOUN_OBJECT.search(text) and not is_specific(text) and len(content_words(text, names)) < 3:
            return None  # "I'll rotate it": what "it" is lives in another sentence
        # "I need a hotel too", "I want a training plan": what the user asks the assistant
        # for in this chat, unless it carries a specific (a date, a number, a name).
        if agent and R.BARE_WANT.match(text) and not is_specific(text) and len(content_words(text, names)) <= 3:
            return None
        if agent and not (voice.companion and not re.search(r"\b(?:dog|cat|puppy|kitten)s?$", voice.companion)):
            text = _we_as_i(text)  # to an assistant, "we use uv" says what the user does: "Raj uses uv"
        content = _as_said(text, voice, turn)
        if re.search(r"\b(\w+) is \1\b", content):
            return None  # "I'm Kenji" said by Kenji
        kind = kind_of(cue)
        if not _informative(content, clause, voice, names, kind):
            return None
        extra = tuple(dict.fromkeys(((antecedent,) if named_first else ()) + used))
        return self._candidate(content, clause, sentence, turn, voice, kind, remember, extra=extra)

    def _reported(self, text: str, clause: str, sentence: str, turn: Turn, voice: _Voice,
                  names: tuple[str, ...]) -> Candidate | None:
        """Between two people, a statement with no "I" in it is still what the speaker
        said: "Fitting into the new team's style of play was a challenge during
        pre-season" (John) becomes "John said: Fitting into the new team's style of play
        was a challenge during pre-season." Kept as reported speech (implied strength),
        only with a verb and three content words of its own, and never for a maxim
        ("Family is everything") or advice with no subject ("Push through and it'll be
        worth it"). An assistant's user gets no such
        fact: there a sentence without "I" is about the task. What one says of the other
        ("You're the perfect mentor" to Jon) is reported the same way, about them."""
        if not has_verb(text) or len(content_words(text, names)) < 3 or R.MAXIM.match(text) \
                or R.OPINION_OPENER.match(text) or R.BARE_IMPERATIVE.match(text):
            return None
        said = _as_said(text, voice, turn)
        if not said:
            return None
        # A colon keeps the statement's own capitals: "Gina said: Rome wasn't built in a day."
        content = f"{voice.name} said: {said}"
        return self._candidate(content, clause, sentence, turn, voice, "fact", False, strength="implied")

    def _request(self, clause: str, cue: str, sentence: str, turn: Turn, voice: _Voice,
                 remember: bool) -> Candidate | None | bool:
        """What a user asks of an assistant: a standing rule or a reminder is kept, a
        one-off task is not. Returns a candidate, False to drop, None if not a request."""
        n = voice.name
        # A standing rule: "always…"/"never…", a convention ("use anyhow with .context()",
        # not "use the blue one for this one"), or an instruction under a condition ("if it
        # rains, just move the run to the next day" → "…to move the run to the next day if
        # it rains": the condition makes it standing).
        rule = clause if R.RULE_START.match(clause) or R.CONVENTION.match(clause) and not R.ONE_OFF.search(clause) \
            else None
        conditional = R.CONDITIONAL_RULE.match(clause) if rule is None else None
        if conditional and (R.TASK_REQUEST.match(conditional["rest"]) or R.CONVENTION.match(conditional["rest"])):
            rule = f"{conditional['rest'].strip().rstrip(' .!')} {conditional['cond'][:1].lower()}{conditional['cond'][1:]}"
        if rule is not None:
            body = R.RULE_LEAD.sub("", rule)
            body = re.sub(r"^(?:don't|do not)\b", "not to", body, flags=re.IGNORECASE)
            if not body.lower().startswith("not to"):
                body = "to " + body[:1].lower() + body[1:]
            kind = kind_of(cue)
            if R.NEGATIVE_RULE.match(body):
                kind = "negative"
            elif kind not in ("procedure", "correction", "preference"):
                kind = "procedure"
            # "No, never." / "Yes, always.": an answer, with the rule itself in the question.
            if not content_words(re.sub(r"^(?:not to|to)\s+(?:always|never)?", "", body, flags=re.IGNORECASE), (n,)):
                return False
            content = _finish(f"{n} wants the assistant {rewrite_first_person(body, voice)}")
            return self._candidate(content, clause, sentence, turn, voice, kind, remember)
        if R.REMIND_ME.match(clause):
            body = R.REMIND_ME.sub("", clause)
            if R.DATE.match(body) or R.WEEKDAY.match(body):
                body = "on " + body  # "remind me October 1" → "a reminder on October 1"
            if not content_words(body, (n,)) and not is_specific(body):
                return False  # "remind me" alone: the reminder is in the question it answers
            content = _finish(f"{n} wants a reminder {rewrite_first_person(body, voice)}")
            return self._candidate(content, clause, sentence, turn, voice, "commitment", True)
        if R.LETS.match(clause):
            body = R.LETS.sub("", clause)
            content = _finish(f"{n} wants to {rewrite_first_person(body, voice)}")
            if len(content_words(content, (n,))) < 2 or not (R.CHOICE.match(body) or R.STANDING.search(body)):
                return False  # "let's check if pushes work first": the chat's next step, not a decision
            return self._candidate(content, clause, sentence, turn, voice, "decision", remember)
        if R.TASK_REQUEST.match(clause) or R.SECOND_PERSON_SUBJECT.match(clause):
            return False
        return None

    def _domain_fact(self, text: str, names: tuple[str, ...]) -> bool:
        """In a chat with an assistant, "the deploy failed again" is a fact without an I."""
        hits = [c for c, _ in self._categorizer.hits(text) if c != R.OTHER_DEFAULT_CATEGORY]
        return bool(hits) and len(content_words(text, names)) >= 2 and not R.DEICTIC_SUBJECT.match(text)

    def _candidate(self, content: str, clause: str, sentence: str, turn: Turn, voice: _Voice, kind: str,
                   remember: bool, *, strength: str | None = None, provenance: str = "user_stated",
                   trust: str = "trusted", turns: list[int] | None = None, extra: tuple[str, ...] = ()) -> Candidate:
        if trust == "untrusted":
            default = R.UNTRUSTED_DEFAULT_CATEGORY
        elif content.startswith(f"{voice.name} wants the assistant"):
            default = R.STANDING_DECISION_CATEGORY if self.config.tier_for(kind) == "permanent" else R.RULE_DEFAULT_CATEGORY
        elif R.FIRST_PERSON.search(clause) or voice.name in content:
            default = R.LIFE_DEFAULT_CATEGORY
        else:
            default = R.OTHER_DEFAULT_CATEGORY
        category, keywords = self._categorizer.best(clause, default, R.NOT_FOR_LIFE_FACTS if trust == "trusted" else ())
        if kind == "preference" and category in (R.LIFE_DEFAULT_CATEGORY, R.OTHER_DEFAULT_CATEGORY):
            category = "preferences" if "preferences" in self.config.categories else category
        named = tuple(n for n in (voice.name, voice.addressee) if n)
        tags = list(dict.fromkeys(keywords + content_words(clause, named)[:4]))[:6]
        speaker = (voice.name,) if voice.name not in ("User", "the assistant") and trust == "trusted" else ()
        return Candidate(
            content=content,
            category=category,
            kind=kind,
            tier=self.config.tier_for(kind, category),
            strength=strength or strength_of(sentence),
            sentiment=sentiment(sentence),
            tags=[t.lower() for t in tags],
            entities=entities_of(clause, speaker + extra, turn.content_at),
            source_turns=turns or [turn.turn],
            source_trust=trust,
            provenance="user_corrected" if kind == "correction" and provenance == "user_stated" else provenance,
            remember=remember,
            action_required=bool(R.ACTION.search(clause)),
            supersedes=supersedes_of(clause) if kind == "correction" or kind == "decision" and R.REPLACES.search(clause) else None,
        )

    # An assistant statement the user confirmed.
    def _confirmed(self, seg: Segment, reply: Turn, untrusted: set[str] = frozenset()) -> list[Candidate]:
        """What the assistant said and the user's reply confirmed. ``untrusted`` holds the
        words of the session's tool output and pasted data so far: an assistant sentence
        made of them restates untrusted content, and a "right" does not make it trusted."""
        user = speaker_name(reply)
        voice = _Voice("the assistant", user)
        sources = sorted({seg.turn.turn, reply.turn})

        def confirmed(content: str, clause: str, sentence: str, kind: str) -> Candidate:
            return self._candidate(content, clause, sentence, seg.turn, _Voice(user, None), kind, False,
                                   strength="implied", provenance="observed", turns=sources)

        said = sentences(seg.text)
        if said and said[-1].rstrip().endswith("?"):
            # "Yes" answers the question the assistant ended on, not what came before it.
            question = R.ASSISTANT_HEDGE.sub("", split_label(said[-1].strip())[1], count=1).strip()
            if offer := R.ASSISTANT_OFFER.match(question):
                body = rewrite_first_person(offer.group(1), voice)
                dated = R.DATE.search(body) or R.WEEKDAY.search(body) or R.TIME_ANCHOR.search(body)
                if len(content_words(body)) < 2 or not (R.STANDING.search(body) or dated):
                    return []  # "Shall I add tests?" "Yes.": a task for now, not a memory
                return [confirmed(_finish(f"{user} wants the assistant to {body}"), question, said[-1], "decision")]
            for pattern, lead in R.ASSISTANT_QUESTIONS:
                if asked := pattern.match(question):
                    content = _finish(rewrite_first_person(lead + asked.group(1), voice))
                    if len(content_words(content, (user,))) < 2:
                        return []
                    return [confirmed(content, question, said[-1], kind_of(content))]
            if is_question(question.rstrip("?")) or not re.search(r"\byou\b", question, re.IGNORECASE):
                return []
            said = [question]  # "So you prefer tabs over spaces?" is a statement awaiting a yes
        firm = R.STRONG_CONFIRM.match(reply.content.strip()) is not None
        picked: list[Candidate] = []
        for sentence in said:
            guess = R.ASSISTANT_HEDGE.sub("", split_label(sentence.strip())[1], count=1).strip().rstrip("?")
            if not firm and not R.ABOUT_YOU.match(guess):
                continue
            if (not guess or R.ASSISTANT_CHATTER.search(guess) or is_chatter(guess) or is_question(guess)
                    or R.ASSISTANT_SELF.search(guess)):
                continue  # chatter, a question, or the assistant talking about itself
            if not has_verb(guess) or len(content_words(guess)) < 2:
                continue
            words = _tokens(guess)
            if untrusted and words and len(words & untrusted) >= 0.75 * len(words):
                continue  # a summary of tool output: the untrusted fact is kept from the source
            content = _finish(rewrite_first_person(guess, voice))
            picked.append(confirmed(content, guess, sentence, kind_of(guess)))
        about_user = [c for c in picked if user in c.content]
        return (about_user or picked)[-2:]

    # Tool output and pasted documents: facts, never instructions.
    def _untrusted(self, seg: Segment, users: tuple[str, ...], later: list[str]) -> list[Candidate]:
        """The labelling policy for untrusted text: a fact worth keeping is kept, tagged
        untrusted; a line that steers the agent, a claim about the user (named, or "you")
        and a claim the user denies later in the session are not facts.

        Args:
            users: the session's user names; untrusted text naming them speaks for them.
            later: what the user says after this turn, where a denial would be.
        """
        found = []
        voice = _Voice(speaker_name(seg.turn), None)
        about_user = re.compile(r"\b(?:" + "|".join(re.escape(u) for u in users) + r")\b") if users else None
        denials = [s for text in later for s in sentences(text) if R.DENIAL.search(s)]
        title = None  # a page's "# pdfkit-plus 1.4.0" names what "Requires Chromium 120" is about
        for line in seg.text.splitlines():
            if heading := R.DOC_TITLE.match(line):
                title = title or heading.group(1)
                continue
            if R.INJECTION.search(line) or steers_agent(line):
                continue  # the rest of the line is the same author steering the model
            line = R.LOG_PREFIX.sub("", line)
            if R.TOOL_NOISE.search(line) or R.DOC_METADATA.match(line) or R.CODE_LINE.search(line):
                continue
            line = R.SOURCE_PREFIX.sub("", line)
            for sentence in sentences(line):
                if _denied(sentence, denials, users):
                    continue  # "…moved to MySQL 5.7, so configure the MySQL backend": all of it
                for clause in clauses(sentence):
                    clause = clause.strip()
                    # First person in a document is its author, not the user: skip rather than misattribute.
                    if (is_question(clause) or R.IMPERATIVE.match(clause) or R.FIRST_PERSON.search(clause)
                            or R.TOOL_NOISE.search(clause) or is_chatter(clause) or not is_specific(clause)
                            or R.ADDRESSES_READER.search(clause) or about_user and about_user.search(clause)
                            or _denied(clause, denials, users)):
                        continue
                    if title and R.DESCRIBES.match(clause):
                        clause = f"{title} {clause[:1].lower()}{clause[1:]}"
                    content = _finish(clause)
                    words = content.split()
                    if len(words) < 4 or sum(w[:1].isalpha() for w in words) < 0.6 * len(words):
                        continue
                    strength = "inferred" if strength_of(sentence) == "inferred" else "implied"
                    found.append(self._candidate(content, clause, sentence, seg.turn, voice, kind_of(clause), False,
                                                 strength=strength, provenance="extracted", trust="untrusted"))
        return found


def _tokens(text: str, names: tuple[str, ...] = ()) -> set[str]:
    """Lower-cased content words and identifiers ("tp6104", "postgres"), names left out."""
    skip = {n.lower() for n in names}
    return {w for w in (t.lower().strip(".-'") for t in re.findall(r"[A-Za-z0-9][\w.+#/-]*", text))
            if (len(w) > 2 or w.isdigit()) and w not in R.STOPWORDS and w not in skip}


def _value(token: str) -> str:
    return re.sub(r"(?<=\d)(?:st|nd|rd|th)$", "", token.lower())


def _settle_reversals(found: list[Candidate], names: tuple[str, ...], reversing: set[int],
                      speakers: dict[int, str]) -> list[Candidate]:
    """Within one session the user's last word stands: a fact the user changes later
    ("I like dark roast" … "actually no, I'm switching to a medium roast"; "April 17"
    … "April 15 now, not the 17th") is dropped, and the change names what it replaces.

    A later trusted statement that reads as a change (``R.REVERSAL``, or any statement
    in a turn that opens with "actually no") replaces an earlier fact from an earlier
    turn of the same speaker (or of a tool) when they share two content words, or when it
    denies one of the earlier fact's values ("not the 17th"). A correction in such a turn
    names what it replaced even when it shares only one word with it.
    """
    def same_voice(earlier: Candidate, later: Candidate) -> bool:
        return earlier.source_trust == "untrusted" or speakers.get(max(earlier.source_turns)) == speakers.get(
            max(later.source_turns))

    def replaced(earlier: Candidate, mine: set[str]) -> str:
        theirs = _tokens(earlier.content, names)
        words = [w for w in re.findall(r"[\w.+#/:'-]*\w", earlier.content) if w.lower() in theirs - mine]
        return " ".join(words[:4]) or earlier.content.rstrip(".")

    dropped: set[int] = set()
    hints: dict[int, str] = {}
    for j, later in enumerate(found):
        says_so = later.kind == "correction" or R.REVERSAL.search(later.content)
        if later.source_trust != "trusted" or not (says_so or reversing & set(later.source_turns)):
            continue
        mine = _tokens(later.content, names)
        denied = {_value(v) for v in R.NEGATED_VALUE.findall(later.content)} - R.STOPWORDS
        for i, earlier in enumerate(found[:j]):
            if max(earlier.source_turns) >= max(later.source_turns) or not same_voice(earlier, later):
                continue
            theirs = _tokens(earlier.content, names)
            if len(mine & theirs) >= 2 or denied & {_value(t) for t in theirs}:
                dropped.add(i)
                if says_so and later.supersedes is None and j not in hints:
                    hints[j] = replaced(earlier, mine)
    for j, later in enumerate(found):
        if j in hints or later.supersedes is not None or later.kind != "correction":
            continue
        mine = _tokens(later.content, names)
        for i in sorted(dropped):
            if max(found[i].source_turns) < max(later.source_turns) and _tokens(found[i].content, names) & mine:
                hints[j] = replaced(found[i], mine)
                break
    return [dataclasses.replace(c, supersedes=hints[k]) if k in hints else c
            for k, c in enumerate(found) if k not in dropped]


def _denial_of(cand: Candidate, claims: list[tuple[int, str]], names: tuple[str, ...],
               config: MemoryConfig) -> Candidate:
    """A user's denial of what the assistant or a page said earlier ("Hannah does not work
    at Mozilla" after the assistant's "you're a senior engineer at Mozilla") is a
    correction, and names the claim it replaces."""
    if (cand.source_trust != "trusted" or cand.supersedes is not None or " wants the assistant " in cand.content
            or not NEGATION.search(cand.content)):
        return cand  # "never disable verification" is a standing rule, not a denial
    mine = _tokens(cand.content, names)
    proper = {w.lower() for w in re.findall(r"(?<!^)\b[A-Z][\w.+-]*\w", cand.content)}  # "Mozilla", "TP6104"
    for turn, claim in reversed(claims):
        theirs = _tokens(claim, names)
        shared = mine & theirs
        if turn < min(cand.source_turns) and (len(shared) >= min(2, len(mine)) or shared & proper):
            # What is denied is what both mention: "not vegetarian" replaces "vegetarian".
            words = list(dict.fromkeys(w for w in re.findall(r"[\w.+#/:'-]*\w", claim) if w.lower() in shared))
            if not words:
                continue
            return dataclasses.replace(cand, supersedes=" ".join(words[:4]), kind="correction",
                                       tier=config.tier_for("correction"), provenance="user_corrected")
    return cand


def _denied(clause: str, denials: list[str], names: tuple[str, ...]) -> bool:
    """A later user sentence that denies something and shares two of the clause's words,
    or one identifier ("TP6104 still leaves at 10:05" against "TP6104 … moved to 06:00")."""
    mine = _tokens(clause, names)
    for sentence in denials:
        shared = mine & _tokens(sentence, names)
        if len(shared) >= 2 or any(re.search(r"\d", w) and re.search(r"[a-z]", w) for w in shared):
            return True
    return False


_WE_AS_I = {"we": "I", "we're": "I'm", "we've": "I've", "we'll": "I'll", "we'd": "I'd", "us": "me", "our": "my",
            "ours": "mine", "ourselves": "myself"}


def _we_as_i(text: str) -> str:
    """"We" in the user's mouth as "I": the user's team or household, attributed to the user
    ("We're switching to Zen" → "I'm switching to Zen" → "Tariq is switching to Zen")."""
    def swap(m: re.Match[str]) -> str:
        word = _WE_AS_I[m.group(0).lower()]
        return word if m.group(0)[:1].islower() or word == "I" or word.startswith("I'") else word.capitalize()
    return re.sub(r"\b(?:we're|we've|we'll|we'd|we|us|ours|our|ourselves)\b", swap, text, flags=re.IGNORECASE)


def _lower_lead(text: str) -> str:
    """"Once a week…" continues a sentence as "once a week…"; "Thursday evenings…" keeps its capital."""
    first = text.split(" ", 1)[0]
    common = first.lower() in R.STOPWORDS or first.lower() in ("once", "twice", "every", "each", "only", "until",
                                                                 "weekly", "daily", "monthly")
    return text[:1].lower() + text[1:] if common else text


def _answer_details(reply: Turn, names: tuple[str, ...]) -> str | None:
    """What a "yes" adds ("Yes, once a week on Wednesdays, but only after the physio
    clears me in June"): a phrase with no subject of its own right after the yes."""
    first = (sentences(reply.content) or [""])[0]
    rest = R.CONFIRM_WORD.sub("", first, count=1).strip(" ,.!")
    if not rest or rest == first.strip(" ,.!") or is_question(rest) or is_chatter(rest):
        return None
    if R.ANSWER_SUBJECT.match(rest) or R.RULE_START.match(rest) or R.REMIND_ME.match(rest) or R.TASK_REQUEST.match(rest):
        return None
    if has_verb(rest) and not R.ANSWER_DETAIL.match(rest):
        return None
    return rest if content_words(rest, names) else None


def _appositive(sentence: str, names: tuple[str, ...]) -> str | None:
    """A verbless, specific phrase ("A used Skutt KM-818, 600 dollars from a retiring
    teacher") that can follow the fact before it; None for anything else."""
    text = strip_filler(sentence.strip(), names).strip().rstrip(".!")
    # "A used Skutt KM-818": an -ed word right after the article is an adjective.
    if (not text or has_verb(re.sub(r"^(an?|the)\s+[a-z]+ed\b", r"\1", text, flags=re.IGNORECASE)) or is_question(text) or is_chatter(text) or not is_specific(text)
            or len(content_words(text, names)) < 2 or R.FIRST_PERSON.search(text)):
        return None
    if not re.match(r"(?:a|an)\b", text, re.IGNORECASE):
        return None  # "minSdk 28 from the 4.12 release on" is a claim of its own
    return text[:1].lower() + text[1:]


def _informative(content: str, clause: str, voice: _Voice, names: tuple[str, ...], kind: str) -> bool:
    """Enough substance to be worth remembering: two concrete words, or one when a liking
    or a choice is stated ("Aaron is into jazz") or the speaker is the subject ("Jon is
    doing kickboxing") — but not a bare verb ("Maria sat with her")."""
    substance = content_words(content, names + (voice.name,))
    if len(content.split()) < 3 or not substance:
        return False
    if len(substance) >= 2 or is_specific(clause) or R.TIME_ANCHOR.search(clause):
        return True
    if kind in ("preference", "negative", "decision", "correction"):
        return True
    solo = substance[0]
    return content.startswith(voice.name + " ") and len(solo) >= 5 and not R.PAST_TENSE.fullmatch(solo)


def _recent(memo: tuple[int, str] | None, index: int, within: int = 4) -> str | None:
    return memo[1] if memo and index - memo[0] <= within else None


def _confirms(reply: Turn) -> bool:
    text = reply.content.strip()
    head = " ".join(text.split()[:6])
    return bool(R.CONFIRM.match(text)) and not R.CONFIRM_BUT.search(head)


def _addressee(ordered: list[Turn], index: int) -> str | None:
    """In a conversation between people, "you" is whoever spoke last (or speaks next)."""
    me = ordered[index].speaker
    for i in [*range(index - 1, -1, -1), *range(index + 1, len(ordered))]:
        other = ordered[i]
        if other.role == "user" and other.speaker and other.speaker != me:
            return other.speaker
    return None
