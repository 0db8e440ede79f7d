"""The extractor used when no LLM is configured: rules over sentences, no model, no network.

What it produces, per informative clause a user says, is one literal fact in the third
person: "I went to a support group yesterday" said by Caroline becomes "Caroline went
to a support group yesterday." Questions, greetings, thanks and filler yield nothing.
An assistant's statement becomes a fact only when the user's next turn confirms it;
tool output and [UNTRUSTED DATA] yield untrusted facts and never instructions. The
word lists and cue patterns live in ``rules.py``; this module is the procedure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

from memory_assets.lib.extraction import rules as R
from memory_assets.lib.extraction.base import ExtractionResult
from memory_assets.lib.extraction.preprocess import Segment, segments
from retrieval.config import MemoryConfig
from retrieval.schema import Candidate, Turn

_ABBREV = re.compile(r"\b(" + "|".join(re.escape(a) for a in R.ABBREVIATIONS) + r")\.", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n+|(?<=[.!?])(?=[A-Z][a-z])")
# Spaced dashes and semicolons join two statements; so do "and/but/so" before a new subject.
_CLAUSE_BREAK = re.compile(r"\s+[-–—]+\s+|(?<=[a-z])[-–—]+\s+|\s*;\s+|\s*…\s*|\.{3,}\s*")
_JOIN = re.compile(
    r",?\s+(?:and|but|so|plus|because|cause|cuz)\s+(?=(?:i|i'm|i've|i'll|i'd|we|we're|we've|my|our)\b)|"
    r",\s+(?:and|but|so)\s+(?=(?:you|you're|he|she|they|it|it's|that|that's|this)\b)", re.IGNORECASE)
# ", I think it was…" is a hedge on the same statement, not a new one.
_COMMA_SUBJECT = re.compile(
    r",\s+(?=(?:i|i'm|i've|i'll|i'd|we're|we've)\s)(?!i (?:think|guess|believe|mean|suppose|reckon|hope|bet)\b)",
    re.IGNORECASE)
_CONTINUATION = re.compile(
    r"^(?:which|who|for|to|with|like|especially|including|from|as|by|about|at|in|on|into|plus|not|"
    r"[a-z]+ing,|[a-z]+ing (?:and|or) )\b", re.IGNORECASE)
_HAS_SUBJECT = re.compile(r"(?-i:^[A-Z])|\b(?:i|i'm|i've|i'll|i'd|we|we're|he|she|they|it|it's|you|this|that|there|my|our)\b",
                          re.IGNORECASE)
# A subject followed later by more words: the left side of "and I" is a clause of its own.
_LEFT_HAS_CLAUSE = re.compile(r"\b(?:i|i'm|i've|we|we're|he|she|they|it|it's|you|there)\b\s+\S|"
                              r"\b(?:is|are|was|were|has|have|had|does|did|[a-z]{3,}ed)\b", re.IGNORECASE)
_EMOJI = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F\u200d]+")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_EVALUATIVE = frozenset(
    "happy glad proud excited thrilled stoked amazing awesome great cool fun special nice good "
    "lovely wonderful fantastic incredible beautiful sweet best better tough hard rough crazy "
    "wild cute perfect huge blessed grateful thankful lucky super totally so really such feel feels "
    "curious pumped psyched fine ok okay annoyed frustrated tired exhausted bored stressed nervous worried scared upset angry sick "
    "felt feeling love loved lovin grateful inspiring inspired excited exciting busy sad "
    "emotional touched moved hectic funny nuts blast".split()
)
# ", let me know what you think!" / ", thanks!" closing a statement.
_CHATTER_TAIL = re.compile(r",\s*(?:let me know|lmk|thanks|thank you|lol|haha|hope (?:you|that)|what do you think|"
                           r"if you want|if you'd like|you know)\b[^,]*$", re.IGNORECASE)
_INTENSIFIERS = r"(?:so|really|pretty|super|very|such|a|an|totally|just|truly|absolutely|quite|kinda|incredibly)"
# ", which is pretty exciting!" / "and it was so powerful": a verdict tacked onto a fact.
_EVALUATIVE_TAIL = re.compile(
    r",\s+(?:sounds|looks|seems)\b.*$|"
    r",?\s+(?:which|and (?:it|that)|it|that)(?:'s| is| was| has been| feels| felt| looks| looked)\s+"
    r"(?:" + _INTENSIFIERS + r"\s+)*(?:" + "|".join(sorted(_EVALUATIVE - {"so", "really", "such", "super", "totally", "feel", "feels", "felt", "feeling"})) + r")"
    r"(?:\s+(?:feeling|experience|time|day|thing|moment|one|ride))?(?:\s+(?:too|as well|though|tbh))?[.!]*$",
    re.IGNORECASE,
)


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
    text = _EMOJI.sub(" ", text.replace("’", "'"))
    text = re.sub(r"^\s*(?:[-*•]|\d+[.)])\s+", "", text, flags=re.MULTILINE)  # list bullets
    protected = _ABBREV.sub(lambda m: m.group(1) + "<DOT>", text)
    out = []
    for piece in _SENTENCE_END.split(protected):
        piece = piece.replace("<DOT>", ".").strip()
        if piece:
            out.append(piece)
    return out


def clauses(sentence: str) -> list[str]:
    """Split a sentence where a new statement starts, so each fact stays atomic."""
    pieces: list[str] = []
    for piece in _CLAUSE_BREAK.split(sentence):
        piece = piece.strip(" ,")
        # "…adopting a rescue dog - for love and to teach our kids…": a phrase, not a statement.
        if pieces and piece and (_CONTINUATION.match(piece) or not _HAS_SUBJECT.search(piece)):
            pieces[-1] = f"{pieces[-1]}, {piece}"
        elif piece:
            pieces.append(piece)
    parts = []
    for piece in pieces:
        for sub in _split_joins(piece):
            parts.extend(_COMMA_SUBJECT.split(sub))
    return [p.strip(" ,") for p in parts if p and p.strip(" ,")]


def _split_joins(piece: str) -> list[str]:
    """Split at "and I…"/"but we…", except inside a plural subject ("My wife and I were…")."""
    out, start = [], 0
    for m in _JOIN.finditer(piece):
        left = piece[start:m.start()]
        if "," not in m.group(0) and not _LEFT_HAS_CLAUSE.search(left):
            continue
        out.append(left)
        start = m.end()
    out.append(piece[start:])
    return out


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


_TAIL_QUESTION = re.compile(
    r"^(.*?\w.*?),\s+(?:(?:so |and |but )?(?:what|how|who|where|when|why|which|do|did|does|have|has|are|is|was|were|"
    r"can|could|would|will|wanna|want|ever|any|you|what about|how about)\b[^,]*\?)$", re.IGNORECASE)


def drop_tail_question(clause: str) -> str:
    """"I went hiking yesterday, have you been?" keeps the statement, drops the question."""
    text = R.QUESTION_TAG.sub("", clause.strip()).strip()
    found = _TAIL_QUESTION.match(text)
    return found.group(1) if found else text


def is_chatter(clause: str) -> bool:
    return R.CHATTER.search(clause) is not None


def _content_words(text: str, names: tuple[str, ...]) -> list[str]:
    lowered_names = {n.lower() for n in names}
    words = []
    for word in _WORD.findall(text):
        w = word.lower().strip("'-").split("'")[0]
        if len(w) > 2 and w not in R.STOPWORDS and w not in _EVALUATIVE and w not in R.VAGUE and w not in lowered_names:
            words.append(w)
    return words


def _finish(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip(" ,;:-")
    text = re.sub(r"[.!?]*$", "", text).rstrip(" ,;:-")
    return (text[:1].upper() + text[1:] + ".") if text else ""


# --- Pronouns ------------------------------------------------------------------------

def _third_person(verb: str) -> str:
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


_SUBJECT_I = re.compile(
    r"\bi\b((?:\s+(?:" + "|".join(sorted(R.ADVERBS)) + r"|(?!(?:fly|rely|reply|apply|supply|multiply|bully)\b)[a-z]+ly))*)\s+([a-z']+)(\s+and\s+([a-z]+)\b)?", re.IGNORECASE
)


# "you" as a subject (sentence start or after a conjunction) takes a third-person verb.
_SUBJECT_YOU = re.compile(
    r"((?:^|\b(?:that|and|but|because|if|when|whenever|so|as|since|how|what|like|until|unless)\s+|,\s*))you\b((?:\s+(?:"
    + "|".join(sorted(R.ADVERBS)) + r"|[a-z]+ly))*)\s+(?!(?:are|were|have|don't|do|'re|'ve)\b)([a-z']+)",
    re.IGNORECASE,
)


def rewrite_first_person(text: str, voice: _Voice) -> str:
    """Replace I/me/my/we/you… with names, keeping the rest of the wording literal."""
    for pattern, plain in R.CASUAL:
        text = pattern.sub(plain, text)
    n = voice.name
    group = f"{n} and {n}'s {voice.companion}" if voice.companion else f"{n} and others"
    contractions: list[tuple[str, str]] = [
        (r"\bi'?m\b|\bi am\b", f"{n} is"),
        (r"\bi've\b|\bi have\b", f"{n} has"),
        (r"\bi'll\b|\bi will\b", f"{n} will"),
        (r"\bi don't\b|\bi do not\b", f"{n} does not"),
        (r"\bi haven't\b", f"{n} hasn't"),
    ]
    others: list[tuple[str, str]] = [
        (r"\bwe're\b|\bwe are\b", f"{group} are"),
        (r"\bwe've\b", f"{group} have"),
        (r"\bwe'll\b", f"{group} will"),
        (r"\bwe'd\b", f"{group} would"),
        (r"\bourselves\b", "themselves"),
        (r"\bmine\b", f"{n}'s"),
        (r"\bmy\b", f"{n}'s"),
        (r"\bours\b", f"{n}'s"),
        (r"\bour\b", f"{n}'s"),
        (r"\bus\b", group),
        (r"\bwe\b", group),
        (r"\bme\b", n),
    ]
    def _plural(before: str) -> bool:
        # "My wife and I" is a plural subject; "I have a dog and I walk him" is two clauses.
        return re.search(r"\w\s+(?:and|or)\s+$", before) is not None and re.search(
            r"\b(?:i|" + re.escape(n) + r")\b", before, re.IGNORECASE) is None

    text = re.sub(r"(\w\s+(?:and|or)\s+)i\b(?!')",
                  lambda m: m.group(1) + n if _plural(m.string[:m.start(1) + len(m.group(1))]) else m.group(0),
                  text, flags=re.IGNORECASE)
    text = re.sub(r"\bi'd\b", lambda m: f"{n} had" if R.PARTICIPLE_AFTER_D.match(text[m.end():]) else f"{n} would",
                  text, flags=re.IGNORECASE)
    for pattern, repl in contractions:
        text = re.sub(pattern, repl, text, flags=re.IGNORECASE)

    def _subject(m: re.Match[str]) -> str:
        plural = _plural(text[:m.start()])
        verb, second = m.group(2), m.group(4)
        if plural:
            return f"{n}{m.group(0)[1:]}"
        # "I practice and train" → "practices and trains"; "I love cooking and baking" keeps the gerund.
        tail = ""
        if m.group(3):
            both = second.lower() not in R.STOPWORDS and not second.lower().endswith("ing") and _third_person(verb) != verb
            tail = f" and {_third_person(second) if both else second}"
        return f"{n}{m.group(1)} {_third_person(verb)}{tail}"

    text = _SUBJECT_I.sub(_subject, text)
    text = re.sub(r"\bi\b", n, text, flags=re.IGNORECASE)
    for pattern, repl in others:
        text = re.sub(pattern, repl, text, flags=re.IGNORECASE)
    # "myself" names the speaker unless the clause already does ("Caroline taught themself").
    text = re.sub(r"\bmyself\b", "themself" if re.search(r"\b" + re.escape(n) + r"\b", text) else n, text,
                  flags=re.IGNORECASE)
    if voice.addressee:
        a = voice.addressee
        text = _SUBJECT_YOU.sub(lambda m: f"{m.group(1)}{a}{m.group(2)} {_third_person(m.group(3))}", text)
        for pattern, repl in ((r"\byou're\b|\byou are\b", f"{a} is"), (r"\byou've\b|\byou have\b", f"{a} has"),
                              (r"\byou were\b", f"{a} was"), (r"\byou don't\b|\byou do not\b", f"{a} does not"),
                              (r"\byou'll\b", f"{a} will"), (r"\byou'd\b", f"{a} would"),
                              (r"\byourself\b", "themself"), (r"\byours\b", f"{a}'s"),
                              (r"\byour\b", f"{a}'s"), (r"\byou\b", a)):
            text = re.sub(pattern, repl, text, flags=re.IGNORECASE)
    return text


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


def _supersedes(clause: str) -> str | None:
    """What a correction replaces, as a short phrase the supersession step can match."""
    for pattern in (r"\bfrom (.+?) to\b", r"\binstead of (.+?)(?:[,.;!]|$)", r"\brather than (.+?)(?:[,.;!]|$)",
                    r"\bno longer (.+?)(?:[,.;!]|$)", r"\bnot (.+?) any ?more\b", r",\s*not (.+?)(?:[,.;!]|$)",
                    r"\bchanged (?:my|our) mind (?:about|on) (.+?)(?:[,.;!]|$)", r"\bnot (\w+(?: \w+)?),? but\b"):
        found = re.search(pattern, clause, re.IGNORECASE)
        if found:
            words = found.group(1).strip().split()
            return " ".join(words[:6]) or None
    found = re.search(r"\b(?:my|our|the) ((?:\w+ ){0,2}\w+) (?:is|are|was|will be|should be)\b", clause, re.IGNORECASE)
    return found.group(1) if found else None


def strength_of(text: str) -> str:
    if R.INFERRED.search(text):
        return "inferred"
    if R.IMPLIED.search(text):
        return "implied"
    return "explicit"


def sentiment_of(text: str) -> str:
    if R.FRUSTRATED.search(text):
        return "frustrated"
    if R.UNCERTAIN.search(text):
        return "uncertain"
    if R.EXCITED.search(text):
        return "excited"
    return "neutral"


def entities_of(clause: str, names: tuple[str, ...], when) -> list[str]:
    found: list[str] = [n for n in names if n and n not in ("User", "the assistant")]
    for m in re.finditer(r"`([^`]+)`", clause):
        found.append(m.group(1))
    for m in R.QUANTITY.finditer(clause):
        found.append(m.group(0).strip())
    for m in R.DATE.finditer(clause):
        found.append(m.group(0).strip())
    for m in re.finditer(r"\b[A-Z][A-Za-z0-9&'-]*(?:\s+(?:of\s+|the\s+|&\s+)?[A-Z][A-Za-z0-9&'-]*)*", clause):
        phrase = re.sub(r"'s$", "", m.group(0))
        first = phrase.split()[0].lower()
        if first in R.NOT_ENTITIES or phrase.lower() in R.NOT_ENTITIES:
            continue
        at_start = m.start() == 0 or re.match(r"^[\s\"'(]*$", clause[:m.start()]) is not None
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
    """Best keyword match against the configured categories."""

    def __init__(self, config: MemoryConfig):
        self.owners: dict[str, list[str]] = {}
        for name, category in config.categories.items():
            for keyword in category.keywords:
                self.owners.setdefault(keyword, []).append(name)
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

    def best(self, text: str, default: str, order: dict[str, int], skip: tuple[str, ...] = ()) -> tuple[str, list[str]]:
        hits = [h for h in self.hits(text) if h[0] not in skip]
        if not hits:
            return default, []
        scores: dict[str, float] = {}
        for name, keyword in dict.fromkeys(hits):
            scores[name] = scores.get(name, 0.0) + 1.0
        best = min(scores, key=lambda c: (-scores[c], order[c]))
        return best, [k for _, k in dict.fromkeys(hits)]


# --- The extractor ----------------------------------------------------------------

class OfflineExtractor:
    """Rule-based extraction: deterministic, offline, fast.

    Args:
        config: the memory config; categories and their keywords pick each fact's
            category, ``tiers`` pick its tier.
    """

    name = "offline"
    version = "rules-v1"

    def __init__(self, config: MemoryConfig):
        self.config = config
        self._categorizer = _Categorizer(config)
        self._order = {name: i for i, name in enumerate(config.categories)}

    def extract(self, turns: list[Turn]) -> ExtractionResult:
        """Candidate facts from one session's turns, in order."""
        segs = segments(turns)
        by_turn: dict[int, list[Segment]] = {}
        for seg in segs:
            by_turn.setdefault(seg.turn.turn, []).append(seg)
        ordered = [t for t in turns if t.role != "system"]
        agent_session = any(t.role == "assistant" for t in turns)
        names = tuple(dict.fromkeys(speaker_name(t) for t in turns if t.role == "user"))
        companions: dict[str, tuple[int, str]] = {}
        out: list[Candidate] = []
        seen: set[str] = set()

        def add(cand: Candidate | None) -> None:
            if cand is not None and cand.content.lower() not in seen:
                seen.add(cand.content.lower())
                out.append(cand)

        for index, turn in enumerate(ordered):
            for seg in by_turn.get(turn.turn, []):
                if not seg.trusted:
                    for cand in self._untrusted(seg):
                        add(cand)
                    continue
                if turn.role == "assistant":
                    reply = next((t for t in ordered[index + 1:] if t.role != "tool"), None)
                    if reply is not None and reply.role == "user" and _confirms(reply):
                        for cand in self._confirmed(seg, reply):
                            add(cand)
                    continue
                if turn.role != "user":
                    continue
                name = speaker_name(turn)
                addressee = "the assistant" if agent_session else _addressee(ordered, index)
                found = R.COMPANION.search(seg.text)
                if found:
                    companions[name] = (index, found.group(1).lower())
                companion = companions.get(name)
                voice = _Voice(name, addressee, companion[1] if companion and index - companion[0] <= 4 else None)
                for cand in self._stated(seg, voice, names, agent_session):
                    add(cand)
        return ExtractionResult(candidates=out)

    # A user's own words.
    def _stated(self, seg: Segment, voice: _Voice, names: tuple[str, ...], agent_session: bool) -> list[Candidate]:
        text, caption = split_caption(seg.text)
        found: list[Candidate] = []
        all_names = tuple(dict.fromkeys(names + ((voice.addressee,) if voice.addressee else ())))
        antecedent: str | None = None
        for sentence in sentences(text):
            for raw in clauses(sentence):
                cand = self._clause(raw, sentence, seg.turn, voice, all_names, agent_session, antecedent)
                if cand is not None:
                    found.append(cand)
            antecedent = _antecedent(sentence, all_names)
        if caption and R.REFERS_TO_IMAGE.search(text):
            cand = self._caption(caption, seg.turn, voice)
            if cand is not None:
                found.append(cand)
        return found

    def _clause(self, raw: str, sentence: str, turn: Turn, voice: _Voice, names: tuple[str, ...],
                agent_session: bool, antecedent: str | None = None) -> Candidate | None:
        remember = bool(R.REMEMBER.search(raw))
        raw = _CHATTER_TAIL.sub("", raw.strip())
        if is_chatter(raw):
            return None
        clause = strip_filler(drop_tail_question(raw), names)
        clause = R.ANNOUNCEMENT.sub("", R.REMEMBER_PREFIX.sub("", clause)).strip()
        if "," not in clause:
            clause = R.FACTUAL_SUBORDINATOR.sub("", clause)
        if (not clause or is_question(clause) or is_chatter(clause) or R.GENERIC_WE.search(clause)
                or R.SUBORDINATE_START.match(clause) and "," not in clause
                or R.PREPOSITION_START.match(clause) and not R.SUBJECT_PRONOUN.search(clause)):
            return None
        if not agent_session and (R.SECOND_PERSON_SUBJECT.match(clause) or R.SOCIAL_IMPERATIVE.match(clause)):
            return None
        clause = _EVALUATIVE_TAIL.sub("", clause).strip()
        if antecedent:
            clause = _resolve(clause, antecedent)
        text = clause
        rule = agent_session and _RULE_START.match(clause)
        if rule:
            body = _RULE_LEAD.sub("", clause)
            body = re.sub(r"^(?:don't|do not)\b", "not to", body, flags=re.IGNORECASE)
            if not body.lower().startswith("not to"):
                body = "to " + body[:1].lower() + body[1:]
            text = f"{voice.name} wants the assistant {rewrite_first_person(body, voice)}"
        else:
            for pattern, lead, unless in R.PRO_DROP:
                if pattern.match(clause) and not (unless and unless.search(clause)):
                    text = pattern.sub(lead, clause[:1].lower() + clause[1:], count=1)
                    break
            if not R.FIRST_PERSON.search(text) and not (agent_session and (_specific(text) or self._domain_fact(text, names))):
                return None
            if not R.SINGULAR_FIRST_PERSON.search(text) and R.GENERIC_WE_CLAIM.search(text) and not R.WE_DID.search(text):
                return None
            if (R.MAXIM.match(text) or R.OPINION_OPENER.match(text)) and not R.SINGULAR_FIRST_PERSON.search(text):
                return None
            if R.DEICTIC_SUBJECT.match(text) and len(_content_words(text, names)) < 3 or not _has_verb(text):
                return None
            text = rewrite_first_person(text, voice)
        content = _finish(text)
        substance = _content_words(content, names + (voice.name,))
        # One concrete word is enough when the speaker is the subject ("Jon is doing kickboxing"),
        # but not a bare verb ("Maria sat with her").
        enough = len(substance) >= 2 or bool(substance) and (_specific(clause) or R.TIME_ANCHOR.search(clause)
                                                              or content.startswith(voice.name + " ")
                                                              and len(substance[0]) >= 5 and not R.PAST_TENSE.fullmatch(substance[0]))
        if len(content.split()) < 3 or not enough:
            return None
        kind = "procedure" if rule and R.KIND_RULES[1][1].search(clause) else kind_of(clause)
        if rule and kind not in ("procedure", "correction"):
            kind = "negative" if re.match(r"^(?:please\s+)?(?:never|don't|do not|avoid|stop)\b", body, re.IGNORECASE) \
                or body.lower().startswith("not to") or body.lower().startswith("to never") else "procedure"
        return self._candidate(content, clause, sentence, turn, voice, kind, remember)

    def _domain_fact(self, text: str, names: tuple[str, ...]) -> bool:
        """In a chat with an assistant, "the deploy failed again" is a fact without an I."""
        hits = [c for c, _ in self._categorizer.hits(text) if c != R.OTHER_DEFAULT_CATEGORY]
        return bool(hits) and len(_content_words(text, names)) >= 2 and not R.DEICTIC_SUBJECT.match(text)

    def _candidate(self, content: str, clause: str, sentence: str, turn: Turn, voice: _Voice, kind: str,
                   remember: bool, *, strength: str | None = None, provenance: str = "user_stated",
                   trust: str = "trusted", turns: list[int] | None = None) -> Candidate:
        default = R.LIFE_DEFAULT_CATEGORY if R.FIRST_PERSON.search(clause) or voice.name in content else R.OTHER_DEFAULT_CATEGORY
        if trust == "untrusted":
            default = R.UNTRUSTED_DEFAULT_CATEGORY
        elif content.startswith(f"{voice.name} wants the assistant"):
            default = R.RULE_DEFAULT_CATEGORY
        category, keywords = self._categorizer.best(clause, default, self._order,
                                                    skip=R.NOT_FOR_LIFE_FACTS if trust == "trusted" else ())
        if kind == "preference" and category in (R.LIFE_DEFAULT_CATEGORY, R.OTHER_DEFAULT_CATEGORY):
            category = "preferences" if "preferences" in self.config.categories else category
        names = tuple(n for n in (voice.name, voice.addressee) if n)
        tags = list(dict.fromkeys([k for k in keywords] + _content_words(clause, names)[:4]))[:6]
        return Candidate(
            content=content,
            category=category,
            kind=kind,
            tier=self.config.tier_for(kind),
            strength=strength or strength_of(sentence),
            sentiment=sentiment_of(sentence),
            tags=[t.lower() for t in tags],
            entities=entities_of(clause, (voice.name,) if voice.name not in ("User", "the assistant") and trust == "trusted" else (),
                                 turn.content_at),
            source_turns=turns or [turn.turn],
            source_trust=trust,
            provenance="user_corrected" if kind == "correction" and provenance == "user_stated" else provenance,
            remember=remember,
            action_required=bool(R.ACTION.search(clause)),
            supersedes=_supersedes(clause) if kind == "correction" else None,
        )

    def _caption(self, caption: str, turn: Turn, voice: _Voice) -> Candidate | None:
        what = R.CAPTION_LEAD.sub("", caption.strip().rstrip("."))
        if len(_content_words(what, ())) < 2:
            return None
        content = _finish(f"{voice.name} shared a photo of {what}")
        return self._candidate(content, what, what, turn, voice, "fact", False)

    # An assistant statement the user confirmed.
    def _confirmed(self, seg: Segment, reply: Turn) -> list[Candidate]:
        user = speaker_name(reply)
        voice = _Voice("the assistant", user)
        picked: list[Candidate] = []
        for sentence in sentences(seg.text):
            offer = R.ASSISTANT_OFFER.match(sentence.strip())
            if offer:
                body = rewrite_first_person(offer.group(1), _Voice("the assistant", user))
                content = _finish(f"{user} wants the assistant to {body}")
                picked.append(self._candidate(content, sentence, sentence, seg.turn, _Voice(user, None), "decision",
                                              False, strength="implied", provenance="observed",
                                              turns=sorted({seg.turn.turn, reply.turn})))
                continue
            if R.ASSISTANT_CHATTER.search(sentence) or is_chatter(sentence):
                continue
            guess = R.ASSISTANT_HEDGE.sub("", sentence.strip(), count=1).strip()
            if not guess or (guess.endswith("?") and R.QUESTION_START.match(guess)) or R.QUESTION_INVERSION.match(guess):
                continue
            if re.search(r"\b(?:i|i'm|i'll|i've|me|my|let me)\b", guess, re.IGNORECASE):
                continue  # the assistant talking about itself
            content = _finish(rewrite_first_person(guess, voice))
            if len(content.split()) < 4:
                continue
            picked.append(self._candidate(content, guess, sentence, seg.turn, _Voice(user, None), kind_of(guess),
                                          False, strength="implied", provenance="observed",
                                          turns=sorted({seg.turn.turn, reply.turn})))
        about_user = [c for c in picked if user in c.content]
        return (about_user or picked)[-2:]

    # Tool output and pasted documents: facts, never instructions.
    def _untrusted(self, seg: Segment) -> list[Candidate]:
        if R.INJECTION.search(seg.text):
            return []
        found = []
        voice = _Voice(speaker_name(seg.turn), None)
        for sentence in sentences(seg.text):
            for clause in clauses(sentence):
                clause = clause.strip()
                if (is_question(clause) or R.IMPERATIVE.match(clause) or R.FIRST_PERSON.search(clause)
                        or is_chatter(clause) or not _specific(clause)):
                    continue
                content = _finish(clause)
                if len(content.split()) < 4:
                    continue
                strength = "inferred" if strength_of(sentence) == "inferred" else "implied"
                found.append(self._candidate(content, clause, sentence, seg.turn, voice, kind_of(clause), False,
                                             strength=strength, provenance="extracted", trust="untrusted"))
        return found


_RULE_LEAD = re.compile(r"^(?:from now on,?\s+|going forward,?\s+|in the future,?\s+)?(?:please\s+)?", re.IGNORECASE)
# A standing instruction to the assistant ("always run…", "never push…") is a rule to keep.
_RULE_START = re.compile(_RULE_LEAD.pattern + r"(?:always|never|don't|do not|avoid|make sure|stop|"
                         r"(?:use|prefer|stick (?:with|to)|switch to|go with)\b.*\b(?:instead of|rather than|over|not)\b)\b",
                         re.IGNORECASE)
_NAME_START = re.compile(r"^([A-Z][a-zA-Z]+(?:\s+[A-Z][a-zA-Z]+)*)(?='s\b|\s+(?:is|was|has|had|loves|likes)\b|[\s!.]*$)")


def _antecedent(sentence: str, names: tuple[str, ...]) -> str | None:
    """The name a following "he/she/it" most likely means: a name opening the sentence."""
    text = strip_filler(sentence, names).rstrip(" .!?")
    found = _NAME_START.match(text)
    if not found or found.group(1) in names or found.group(1).lower() in R.NOT_ENTITIES:
        return None
    if found.end() == len(text) and len(text.split()) > 4:
        return None
    return found.group(1)


def _resolve(clause: str, antecedent: str) -> str:
    """Put the antecedent in place of an opening he/she (or it, after a bare name)."""
    clause = re.sub(r"^(?:he|she|it)'s\b", antecedent + " is", clause, count=1, flags=re.IGNORECASE)
    return re.sub(r"^(?:he|she|it)\b", antecedent, clause, count=1, flags=re.IGNORECASE)


_VERB = re.compile(
    r"\b(?:i|i'm|i've|i'll|i'd|we|we're|we've|he|she|they|you|it)\s+\w|"
    r"\b(?:am|is|are|was|were|be|been|being|'m|'s|'re|'ve|'ll|'d|have|has|had|do|does|did|will|would|can|could|"
    r"should|may|might|must|gonna|wanna|[a-z]{2,}ed|[a-z]{3,}(?:s|es)\s+(?:me|my|us|our|him|her|them|it|to|a|an|the))\b|"
    r"\b(?!(?:for|to|with|at|of|from|about|like|than|by|on|in|behind|around|without|near|and|or|but)\b)[a-z]{3,}\s+(?:me|us)\b|"
    r"\b(?:" + "|".join(sorted(R.IRREGULAR_PAST)) + r")\b",
    re.IGNORECASE,
)


def _has_verb(text: str) -> bool:
    """A finite verb somewhere: "Expression of myself and a way to relax" has none."""
    return _VERB.search(text) is not None


def _confirms(reply: Turn) -> bool:
    text = reply.content.strip()
    head = " ".join(text.split()[:6])
    return bool(R.CONFIRM.match(text)) and not R.CONFIRM_BUT.search(head)


def _addressee(ordered: list[Turn], index: int) -> str | None:
    """In a conversation between people, "you" is whoever spoke last (or speaks next)."""
    me = ordered[index].speaker
    for other in list(reversed(ordered[:index])) + ordered[index + 1:]:
        if other.role == "user" and other.speaker and other.speaker != me:
            return other.speaker
    return None


def _specific(text: str) -> bool:
    """Concrete enough to be a fact without a speaker: a number, a date, a name, a key term."""
    if R.QUANTITY.search(text) or R.DATE.search(text) or re.search(r"`[^`]+`|\d", text):
        return True
    return re.search(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-zA-Z0-9]+", text.strip()) is not None
