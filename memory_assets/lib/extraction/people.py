"""Who a clause is about, for the offline extractor: "I" rewritten to the speaker's
name with the verb agreeing, "you" to the addressee, and he/she/they resolved to the
people named earlier in the session."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from memory_assets.lib.extraction import cues as C
from memory_assets.lib.extraction import rules as R
from memory_assets.lib.extraction.clauses import absolute_dates, entities_of, finish, strip_filler
from retrieval.schema import Turn
from retrieval.text import PEOPLE_NOUNS, third_person


_SUBJECT_I = re.compile(
    r"\bi\b((?:\s+(?:" + "|".join(sorted(R.ADVERBS)) + r"|(?!(?:fly|rely|reply|apply|supply|multiply|bully)\b)[a-z]+ly))*)"
    r"\s+([a-z']+(?:-[a-z]+)?)(\s+and\s+([a-z]+)\b)?", re.IGNORECASE)
# "you" as a subject (sentence start or after a conjunction) takes a third-person verb.
_SUBJECT_YOU = re.compile(
    r"((?:^|\b(?:that|and|but|because|if|when|whenever|so|as|since|how|what|like|until|unless|before|after|once)\s+|,\s*))you\b((?:\s+(?:"
    + "|".join(sorted(R.ADVERBS)) + r"|[a-z]+ly))*)\s+(?!(?:are|were|have|don't|do|'re|'ve)\b)([a-z']+)",
    re.IGNORECASE)


@dataclass(frozen=True)
class Voice:
    """Who is speaking and to whom, for rewriting pronouns."""

    name: str
    addressee: str | None
    companion: str | None = None


# --- Pronouns ------------------------------------------------------------------------

def as_said(text: str, voice: Voice, turn: Turn) -> str:
    """A clause as a fact: in the third person, relative days as dates, finished."""
    return finish(absolute_dates(rewrite_first_person(speakers_own(text), voice), turn.content_at))


def speakers_own(text: str) -> str:
    """``text`` with "I" before a change verb it opens with (``cues.CHANGE_DONE``): a change
    told as done with no subject is the speaker's ("Stepped down as treasurer" → "I stepped
    down as treasurer"); any other text as it is."""
    stripped = text.lstrip()
    if not C.CHANGE_DONE.match(stripped):
        return text
    return f"I {stripped[:1].lower()}{stripped[1:]}"


def _third_person(verb: str) -> str:
    if "-" in verb:  # "force-push" → "force-pushes"
        head, _, last = verb.rpartition("-")
        return f"{head}-{_third_person(last)}"
    low = verb.lower()
    # A modal, or a form that reads as past and present alike ("I read", "I put"): as said.
    if low in R.INVARIANT_AFTER_I or low in R.IRREGULAR_PAST:
        return verb
    return third_person(verb)


# A word joined to others by a hyphen, dot, slash, @ or underscore, or with a digit in it, is
# a name of its own ("us-east-1", "my-app", "I-95", "me@work.com"): no pronoun inside it is one.
_COMPOUND = re.compile(r"[\w'’]*[A-Za-z\d](?:[-./@_][\w'’]+)+|\b\w*\d\w*\b")
_PRONOUN_PART = re.compile(r"(?:^|[-./@_])(?:i|me|my|mine|we|us|our|ours|you|your|yours)(?:$|[-./@_])", re.IGNORECASE)
# Stands in for such a word while the pronouns are rewritten; no pattern below reads it as a word.
_HELD = "\u27e6{}\u27e7"


def rewrite_first_person(text: str, voice: Voice) -> str:
    """Replace I/me/my/we (and "you", when the listener is known) with names, keeping
    the rest of the wording literal and the verbs in agreement. A pronoun inside another
    word ("us-east-1") is left as it is."""
    return outside_compounds(text, lambda t: _rewrite(t, voice))


def outside_compounds(text: str, rewrite) -> str:
    """``rewrite(text)`` with every word that has a pronoun inside it ("us-east-1",
    "my-app") held out of its reach and put back as it was."""
    held: list[str] = []

    def hold(m: re.Match[str]) -> str:
        if not _PRONOUN_PART.search(m.group(0)):
            return m.group(0)
        held.append(m.group(0))
        return _HELD.format(len(held) - 1)
    text = rewrite(_COMPOUND.sub(hold, text))
    for k, word in enumerate(held):
        text = text.replace(_HELD.format(k), word)
    return text


def _rewrite(text: str, voice: Voice) -> str:
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
            both = second.lower() not in C.STOPWORDS and not second.lower().endswith("ing") and _third_person(verb) != verb
            tail = f" and {_third_person(second) if both else second}"
        return f"{n}{m.group(1)} {_third_person(verb)}{tail}"

    text = _SUBJECT_I.sub(subject, text)
    text = re.sub(r"\bi\b", n, text, flags=re.IGNORECASE)

    def my(m: re.Match[str]) -> str:
        # "Farid takes my levothyroxine" is "Farid takes their levothyroxine", not "Farid takes
        # Farid's levothyroxine": the clause already names whose. A relative keeps the name
        # ("Farid visited Farid's brother Tom": who the brother is reads from it).
        clause = re.split(r"[,;:.!?]|\b(?:and|but|so|because)\b", text[:m.start()])[-1]
        after = text[m.end():].lstrip().split(" ", 1)[0].lower().strip(",.;:!?")
        said = re.search(r"\b" + re.escape(n) + r"\b(?!'s)", clause) is not None
        return "their" if said and after not in PEOPLE_NOUNS else f"{n}'s"
    text = re.sub(r"\bmy\b", my, text, flags=re.IGNORECASE)
    for pattern, repl in ((r"\bwe're\b|\bwe are\b", f"{group} are"), (r"\bwe've\b", f"{group} have"),
                          (r"\bwe'll\b", f"{group} will"), (r"\bwe'd\b", f"{group} would"),
                          (r"\bourselves\b", "themselves"), (r"\bmine\b|\bours\b|\bour\b", f"{n}'s"),
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


def resolve_pronoun(clause: str, antecedent: str, things: bool) -> str:
    """Put the antecedent in place of an opening he/she ("She just got into ceramics"),
    or "it" when the antecedent was named in the sentence before ("Star Wars! It's…")."""
    pronoun = r"(?:he|she|it)" if things else r"(?:he|she)"
    clause = re.sub(r"^" + pronoun + r"'s(?=\s+(?:been|got|gotten|[a-z]+ed)\b)", antecedent + " has", clause,
                    count=1, flags=re.IGNORECASE)
    clause = re.sub(r"^" + pronoun + r"'s\b", antecedent + " is", clause, count=1, flags=re.IGNORECASE)
    return re.sub(r"^" + pronoun + r"\b", antecedent, clause, count=1, flags=re.IGNORECASE)


@dataclass(frozen=True)
class Mention:
    """A named third person the session talked about: who, in which turn, and "f"/"m"
    when a relation word or a pronoun in the same sentence says so (None: either)."""

    index: int
    name: str
    gender: str | None


def _gender(word: str) -> str | None:
    low = word.lower()
    return "f" if low in R.FEMININE else "m" if low in R.MASCULINE else None


def note_people(sentence: str, named: str | None, index: int, mentions: list[Mention]) -> None:
    """Add the people a sentence names ("my daughter Zoe", "Dr. Alvarez", a name opening
    it) to ``mentions``, most recent last; a "she"/"he" in the same sentence gives an
    unmarked name its gender ("Mochi is my Shiba Inu, she's 4")."""
    found = [(m.start(), m.group(1) or m.group(2), _gender(m.group(0).split()[-2].strip(",")) if m.group(1) else None)
             for m in R.PERSON.finditer(sentence)]
    if named and named.split()[0].lower() not in C.NOT_ENTITIES and " " not in named:
        found.append((-1, named, None))
    pronouns = {m.group(1).lower() for m in R.PERSON_PRONOUN.finditer(sentence)}
    heard = "f" if pronouns & {"she", "her"} and not pronouns & {"he", "his", "him"} else \
        "m" if pronouns & {"he", "his", "him"} and not pronouns & {"she", "her"} else None
    for _, name, gender in sorted(found):
        mentions.append(Mention(index, name, gender or (heard if len(found) == 1 else None)))


def referent(mentions: list[Mention], pronoun: str, index: int, within: int = 6) -> str | None:
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


def resolve_people(clause: str, mentions: list[Mention], index: int) -> tuple[str, tuple[str, ...]]:
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


def antecedent_in(sentence: str, names: tuple[str, ...]) -> str | None:
    """A name opening a sentence ("Oliver's hilarious!") is who the next "he/she" is."""
    found = R.NAME_START.match(strip_filler(sentence, names).rstrip(" .!?")) or R.LABEL_NAME.match(sentence)
    if not found or found.group(1) in names or found.group(1).split()[0].lower() in C.NOT_ENTITIES:
        return None
    return found.group(1)


# "It's my main email", "It is our default cloud": "it" names the thing the sentence before
# named, when it named one ("How do I add a signature in Gmail? It's my main email…"); a
# role the thing plays for the speaker, not "It's my first time in Berlin" (no thing).
_IT_IS_MINE = re.compile(r"^it(?P<verb>'s|\s+is|\s+was)\s+(?=(?:my|our)\s+(?:main|primary|default|favou?rite|go-to|"
                         r"usual|only|daily|everyday|work|personal|current|new)\b)", re.IGNORECASE)


def it_named(sentence: str, before: str | None, names: tuple[str, ...]) -> str:
    """``sentence`` with an opening "It's my …" given the one thing ``before`` named
    (``clauses.entities_of``: a name, not a sentence start or a common word, and not a
    person the session names); as it is when ``before`` named none, or more than one."""
    opening = _IT_IS_MINE.match(sentence.strip())
    if opening is None or not before:
        return sentence
    people = {n.lower() for n in names if n}
    # (The day only turns "yesterday" into a date, which is no thing: any day will do.)
    things = [e for e in entities_of(before, (), datetime(2000, 1, 1)) if e[:1].isupper() and e.lower() not in people]
    if len(things) != 1:
        return sentence
    verb = " is" if opening["verb"] == "'s" else opening["verb"]
    return f"{things[0]}{verb} {sentence.strip()[opening.end():]}"
