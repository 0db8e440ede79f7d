"""Whether a parsed sentence says a value changed, and by which words (its cue).

Read on spaCy's dependency parse by ``structure.read``: a change verb ("switched",
"joined", "gave up", "went up to"), a change adverb in the main clause ("now", not
"right now"), a change phrase ("these days", "no longer", "from now on"), a named old
value ("instead of", "from A"), or "new" on the subject. A change said with "also", "too"
or "as well" adds a value beside the old one and changes nothing.
"""

from __future__ import annotations

import re

from retrieval.text import CHANGE_ADVERBS, CHANGE_PHRASAL, CHANGE_PHRASES, CHANGE_VERBS, DONE_CHANGE_VERBS

# Words that add a value beside the old one: "also started using Obsidian" changes nothing.
ADDITIVE = frozenset("also too additionally".split())
_ADDITIVE_PHRASE = re.compile(r"\b(?:as well|in addition|on top of|alongside|besides)\b", re.IGNORECASE)
# Dependencies that open a clause of their own: what hangs below one is that clause's.
CLAUSE_DEPS = frozenset("advcl relcl ccomp acl csubj xcomp conj parataxis".split())
# "right now", "just now" (a moment), "for now" (temporary), "until now": no new state.
_NOT_NOW = frozenset("right just for until till by".split())


def changes(verb) -> bool:
    """The verb says a value changed: a change verb ("switched"), one told as done
    ("joined", "has stopped"), or a phrasal one by its particle or preposition ("gave
    up", "went with", "went up to")."""
    lemma = verb.lemma_.lower()
    return lemma in CHANGE_VERBS or (lemma in DONE_CHANGE_VERBS and verb.tag_ in ("VBD", "VBN")) or _particle(verb) is not None \
        or _became(verb)


def _became(verb) -> bool:
    """"Went vegan", "has gone freelance", "went remote", "went part-time": "go" told as done
    with a state right after it (not "went home", "went badly", "went to Lisbon", "went
    yesterday": a date is when, not a state)."""
    return verb.lemma_.lower() == "go" and verb.tag_ in ("VBD", "VBN") and any(
        c.dep_ in ("dobj", "acomp", "oprd", "attr", "npadvmod") and c.left_edge.i == verb.i + 1
        and c.pos_ in ("NOUN", "ADJ") and not c.ent_type_ for c in verb.children)


def _particle(verb) -> str | None:
    """The particle that makes a phrasal change verb: a particle anywhere ("gave it up"), a
    preposition or adverb right after the verb ("went with Postgres", "went up to $49",
    where the parser may hang "up" on the amount), not one further on ("went on a trip
    with workmates" is no choice of workmates)."""
    lemma = verb.lemma_.lower()
    after = [verb.nbor(1)] if verb.i + 1 < len(verb.doc) else []
    # ("put the rent up to $1,500": the parser may hang "up" on the amount, past the object.)
    amounts = [g for c in verb.children if c.dep_ == "dobj" for g in c.children if g.dep_ == "quantmod"]
    found = next((c for c in (*verb.children, *after, *amounts) if (lemma, c.lower_) in CHANGE_PHRASAL and (
        c.dep_ == "prt" or c.dep_ in ("prep", "advmod", "quantmod") and (c.i == verb.i + 1 or c in amounts))), None)
    if found is None or lemma == "put" and found.i + 1 < len(verb.doc) and verb.doc[found.i + 1].lower_ == "with":
        return None  # "put up with the noise" bears it and changes nothing
    return found.lower_


def verb_words(verb) -> str:
    """A change verb's lemma with its particle: "give up", "go with", "switch"."""
    lemma, particle = verb.lemma_.lower(), _particle(verb)
    return f"{lemma} {particle}" if particle else lemma


def clause_of(token):
    """The clause a token belongs to (its head verb): "now" at the end of "is at the gym
    round the corner from the flat now" is the sentence's, however deep the parser puts
    it (here under "round", read as a verb), but "now" inside "…, which is now closed" is
    the relative clause's."""
    head = token.head
    while head.head.i != head.i and head.dep_ not in CLAUSE_DEPS:
        head = head.head
    return head


def cue(doc, root, pred, subj, replaced: str | None) -> str | None:
    """The words by which the sentence says its value changed, None when it does not
    (or only adds a value beside the old one)."""
    text = doc.text
    main = (root, pred)
    if any(t.lower_ in ADDITIVE and clause_of(t) in main for t in doc) or _ADDITIVE_PHRASE.search(text):
        return None
    verb = next((v for v in main if changes(v)), None)
    if verb is not None:
        return verb_words(verb)
    adverb = next((t.text for t in doc if t.lower_ in CHANGE_ADVERBS and t.dep_ in ("advmod", "npadvmod")
                   and clause_of(t) in main and not (t.i > 0 and doc[t.i - 1].lower_ in _NOT_NOW)), None)
    if adverb:
        return adverb.lower()
    if phrase := CHANGE_PHRASES.search(text):
        return phrase.group(0).lower()
    if replaced is not None:
        return "instead of" if "instead" in text.lower() else f"from {replaced}"
    if subj is not None and any(c.dep_ == "amod" and c.lower_ == "new" for c in subj.children):
        return "new"
    return None
