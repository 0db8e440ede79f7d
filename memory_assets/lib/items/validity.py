"""Validity in time: a later fact that gives a subject's relation a new value retires the
earlier one (the bi-temporal model of getzep/graphiti, arXiv 2501.13956).

Every item has ``valid_from`` (the day it became true) and, once replaced, ``invalid_at``
(when the later fact became true). Nothing is deleted: the old item is ``superseded``,
points at its successor, and ``search(..., as_of=day)`` still finds it for a day it held.

An older item is retired by a newer one of the same user and subject when:

- the relation holds one value at a time (``[graph] single_valued``, or "X's Y is Z" with
  ``possessed_is_single``) and the values differ: "Aaron lives in Austin" → "Aaron lives
  in Denver", with or without "moved";
- or the newer one says it changed ("switched to", "now", "no longer", "instead of") and
  the two are about the same thing: the same relation, or alike at
  ``[graph] change_min_similarity`` or more ("uses dark mode" → "switched to light mode");
  then only the most alike earlier item (of the same relation when one is alike enough)
  is retired, since a relation like ``uses`` holds many values at once, and only once: a
  change that already replaced a fact (in an earlier run) replaces nothing more. Both must be about
  the same person: an unnamed thing ("it", "school pickup") is the user's own (the person
  most of the user's facts are about), so "Kwame's brother switched to Android" retires
  nothing of Kwame's. When the most alike earlier item was already retired by another
  fact of the same session, the change is a restatement and retires nothing more;
- or the newer one says the old value ended ("doesn't drink coffee anymore"), or ends
  what it names ("quit Blokhaus", "closed my Monzo account": ``retrieval.text.ENDING_CUES``),
  which retires the same person's fact holding that value, whatever its relation.

- or, when none of these settles a stated change, its slot (the fact's words without the
  people's names) is the same as an earlier fact's of that person: alike at
  ``[graph] slot_retire_similarity`` or more retires it ("walks the dog at 7" → "does the
  dog walk at 6 now"); alike at ``slot_min_similarity`` or more is a conflict (``_slot_change``).

When the newer one gives the same slot (subject and relation) another value and no rule
is sure enough to retire the older (a stated change that reads less alike than the bar,
or a one-value relation on one side only), the pair is a conflict: both stay active,
linked by ``contradicts``, and are served marked ``[conflict]``, newest first; the
nightly check ``conflicts_resolved`` lists them until one side is settled.

Never when the newer one is tentative (considered, asked, conditional or temporary:
"thinking about switching", "this week only"), when one value only refines the other
("Denver" → "Denver, Colorado") without a change word, or across users.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Collection
from typing import NamedTuple

import numpy as np
import polars as pl

from memory_assets.lib.extraction.structure import key_parts
from memory_assets.lib.items import change_model, value_kinds
from retrieval.config import MemoryConfig
from retrieval.schema import AGENT_STATED
from retrieval.spans import spanned
from retrieval.text import BEGINNING_CUES, ENDING_CUES, PEOPLE_NOUNS, value_words

# Subject heads that are things, not someone ("it", "that"): never a person of their own.
_THINGS = frozenset("it this that there they we you i".split())

_FIELDS = ("id", "namespace", "project", "provenance", "entities", "subject_key", "subject_name", "relation", "value", "states_change", "tentative", "change_cue", "slot", "numbers", "denies", "words", "status",
           "valid_from", "created_at", "content", "session_id", "supersedes_hint", "supersedes")


def user_of(namespace: str | None) -> str:
    """The user a namespace belongs to: ``aaron/coding`` and ``aaron/personal`` are Aaron's."""
    return (namespace or "").split("/", 1)[0]


def single_valued(row: dict, config: MemoryConfig) -> bool:
    relation = row["relation"]
    if relation in config.graph.single_valued:
        return True
    # "Aaron's budget is $3,000": one attribute of Aaron, one value at a time.
    key = row.get("said_key") or row["subject_key"] or ""  # "Kenji's sister" is one attribute, though she is Aiko
    return bool(config.graph.possessed_is_single and relation == "is" and len(key.split()) > 1)


def _differ(old: dict, new: dict) -> bool | None:
    """True: different values; False: the same; None: one refines the other. The same
    value with other numbers around it ("goes to bed at 11:30" → "at 10:15") differs."""
    a, b = value_words(old["value"]), value_words(new["value"])
    if not a or not b:
        return None
    if a == b:
        na, nb = frozenset(old.get("numbers") or ()), frozenset(new.get("numbers") or ())
        return True if na and nb and not (na & nb) else False
    if a <= b or b <= a:
        return None
    return True


_SUFFIX = re.compile(r"(?:ing|er|or)$")


def stem(head: str) -> str:
    """A head noun without the ending that makes it a doer or a doing: "editor" and
    "editing" → "edit", "browser" and "browsing" → "brows"; short words stay whole."""
    cut = _SUFFIX.sub("", head)
    return cut if len(cut) >= 4 else head


def same_subject(old: dict, new: dict) -> bool:
    """The same thing: owners agree (or one has none), the same head noun (or the same
    activity: "Bea's editor" ~ "Bea's editing"), and one's qualifiers include the other's
    ("Chloe's standup" ~ "standup" ~ "Chloe's daily standup")."""
    (oa, ha, ca), (ob, hb, cb) = key_parts(old["subject_key"]), key_parts(new["subject_key"])
    return stem(ha) == stem(hb) and (oa is None or ob is None or oa == ob) and (ca <= cb or cb <= ca)


def _ended(old: dict, new: dict) -> bool:
    """The newer states that the older's value no longer holds: same value, now denied."""
    return _differ(old, new) is False and bool(new.get("denies")) and not old.get("denies")


def person_of(key: str | None) -> str:
    """Whose the subject is: the owner of "aaron's phone", or "aaron" itself; someone
    else for "aaron's brother" (a person noun: ``retrieval.text.PEOPLE_NOUNS``)."""
    owner, head, _ = key_parts(key)
    return owner if owner and head not in PEOPLE_NOUNS else (key or "")


def names_in(entities) -> frozenset[str]:
    """The names among facts' ``entities`` (the field extraction wrote), lower case: the
    ones written with a capital ("Kwame", "Sublime Text"), whole and word by word."""
    return frozenset(w.lower() for found in entities for e in found or () if e[:1].isupper() for w in (e, *e.split()))


def named(key: str | None, names: frozenset[str] | None = None) -> bool:
    """A subject that is someone: a name, or someone's relative ("aaron", "aaron's sister").
    With ``names`` (the user's texts' names), a bare noun that is no name ("piano") is not."""
    owner, head, _ = key_parts(key)
    if owner:
        return True
    return head not in _THINGS and head.isalpha() and head not in PEOPLE_NOUNS and (
        names is None or head in names or key in names)


def whose(key: str | None, me: str | None, names: frozenset[str] | None = None) -> str | None:
    """The person a subject belongs to: ``person_of`` a named one; the user (``me``, the
    person most of the user's facts are about) for an unnamed thing ("it", "the rent")."""
    return person_of(key) if named(key, names) else me


class Retirement(NamedTuple):
    """The newer row ``new`` retires the older row ``old`` by ``rule``: "one value" (one
    value at a time), "ended" (the newer says the value no longer holds), "change" (a
    stated change of the same slot), "slot" (one alike without the people's names:
    ``_slot_change``) or "hint" (the newer names what it replaces: ``supersession``); or, by "conflict", gives the same slot another value with no rule
    sure enough to retire the older (``_conflicting``): both stay, marked."""
    new: int
    old: int
    rule: str


_RULES = {"one value": "one value at a time", "ended": "the later fact says it ended",
          "change": "a stated change of the same thing", "hint": "the later fact names what it replaces",
          "slot": "a stated change of the same slot (alike without the people's names)",
          "kind": "a stated change to a value of the same kind",
          "learned": "a stated change the learned judge ties to this fact (items.change_model)"}


def why(old: dict, new: dict, rule: str) -> str:
    """What ``memory show`` tells of a retirement: the rule, the slot (whose, which
    relation) and the cue that said it changed, from the two rows' fields."""
    slot = " · ".join(x for x in (new.get("subject_key") or old.get("subject_key"),
                                  new.get("relation") or old.get("relation")) if x)
    values = f"{old.get('value')!r} → {new.get('value')!r}" if old.get("value") or new.get("value") else ""
    cue = new.get("change_cue")
    said = _RULES[rule] + (f" ({new['supersedes_hint']!r})" if rule == "hint" and new.get("supersedes_hint") else "")
    return "; ".join(x for x in (said, f"slot: {slot}" if slot else "", values, f"cue: {cue!r}" if cue else "") if x)


@spanned("consolidate: validity")
def retire_replaced(items: pl.DataFrame, vectors: np.ndarray, config: MemoryConfig, embed=None,
                    known: Collection[str] = ()) -> list[Retirement]:
    """The (new, old, rule) row pairs where the newer item retires the older one (see the
    module doc). ``embed`` (texts → unit vectors) compares slots; without it a stated change
    that no rule retires with is no conflict either. ``known``: the ids an earlier run
    already had; they are not compared by slot again, since what that run found (a
    retirement, a ``contradicts`` link) is carried: the embedding is paid once per change."""
    if items.is_empty() or "relation" not in items.columns or "subject_key" not in items.columns:
        return []
    # Only the rows that can take part become dicts (position → row): a million items
    # as dicts would be gigabytes, and most state no relation.
    held = items.select([c for c in _FIELDS if c in items.columns]).with_row_index("_row").filter(
        pl.col("status").is_in(["active", "candidate"]) & (pl.col("relation").fill_null("") != "")
        & (pl.col("subject_key").fill_null("") != ""))
    rows = dict(zip(held["_row"].to_list(), held.drop("_row").to_dicts()))
    live = list(rows)
    # A user's facts, one project at a time: two projects' deploy windows never retire each other.
    by_user: dict[tuple[str, str | None], list[int]] = defaultdict(list)
    for i in live:
        by_user[(user_of(rows[i]["namespace"]), rows[i].get("project"))].append(i)
    pairs: list[Retirement] = []
    retired: set[int] = set()
    floor = config.graph.change_min_similarity

    def when(i: int):
        return (rows[i]["valid_from"] or rows[i]["created_at"], rows[i]["created_at"], rows[i]["id"])

    for members in by_user.values():
        if len(members) < 2:
            continue
        members.sort(key=when)
        # The names the user's facts hold: "Bea" is someone, "school" is no one.
        names = names_in(rows[i].get("entities") for i in members)
        # "Siobhan's partner Niamh is a librarian" and "Niamh started a new job": one person.
        aliases = {rows[i]["subject_key"]: rows[i]["subject_name"] for i in members if rows[i].get("subject_name")}
        for i in members:
            if (key := rows[i]["subject_key"]) in aliases:
                rows[i] = {**rows[i], "subject_key": aliases[key], "said_key": key}
        people = Counter(person_of(rows[i]["subject_key"]) for i in members if named(rows[i]["subject_key"], names))
        me = people.most_common(1)[0][0] if people else None
        # Whom the user's facts are about, by name (``me`` among them): never what changed (``value_kinds``).
        who = {w for p in people for w in re.split(r"'s |\s", p) if w and w not in PEOPLE_NOUNS} | set(aliases.values())
        retired_by: dict[int, int] = {}
        retirers: set[int] = set()  # the items that retired one (``retired_by``'s values)

        def retire(new_i: int, old_i: int, rule: str) -> None:
            pairs.append(Retirement(new_i, old_i, rule))
            retired.add(old_i)
            retired_by[old_i] = new_i
            retirers.add(new_i)
        heads: dict[str, list[int]] = defaultdict(list)
        for k, n in enumerate(members):
            new = rows[n]
            head = stem(key_parts(new["subject_key"])[1])
            if new["status"] == "active" and not new["tentative"]:
                # 1. One value at a time: the same subject and relation, another value;
                # 2. "no longer": a stated change that denies the same value.
                one_value, change = single_valued(new, config), new["states_change"]
                for o in heads.get(head, ()) if one_value or change else ():
                    old = rows[o]
                    if not (o not in retired and old["created_at"] < new["created_at"]
                            and old["relation"] == new["relation"] and same_subject(old, new)):
                        continue
                    other_value = one_value and single_valued(old, config) and _differ(old, new)
                    if other_value or (change and _ended(old, new)):
                        retire(n, o, "one value" if other_value else "ended")
                if change and (new.get("change_cue") or "") in ENDING_CUES and n not in retirers:
                    # 2b. A change that ends what it names ("quit Blokhaus", "closed my Monzo
                    # account") retires the earlier fact of the same person holding that value,
                    # whatever its relation ("boulders at Blokhaus", "banks with Monzo").
                    ended = [o for o in members if o not in retired and o != n and rows[o]["created_at"] < new["created_at"]
                             and not rows[o]["tentative"] and _holds(rows[o], new, me, names)]
                    if ended:
                        o = max(ended, key=lambda o: float(vectors[o] @ vectors[n]))
                        retire(n, o, "ended")
                if change:
                    # 3. A stated change with a new value retires the one most alike earlier
                    # fact of the same person (an unnamed thing, "rent", is the user's own).
                    # A fact that names what it replaces ("from black") is paired by its hint
                    # (``supersession``); within a session the extractor settles reversals.
                    # Earlier means said earlier (a fact may date its change before an older
                    # one was said: "retired at the end of December"). When the most alike
                    # earlier fact was already retired by another fact of this session
                    # ("Piano is Saturdays now" after "the teacher swapped Bram to
                    # Saturdays"), this one restates that change and retires nothing more.
                    # A change replaces one fact, once: an item that already retired one
                    # (by rule 1 or 2 above, or in an earlier run) retires nothing more, or
                    # every night would retire the next most alike fact around it.
                    # Once, in the run it arrives (as by slot, below): a later run that finds
                    # its old value already gone would retire the next most alike fact instead.
                    if (new["value"] and not new.get("supersedes_hint") and not new.get("supersedes")
                            and n not in retirers and new["id"] not in known):
                        older = [o for o in members if o != n and (o not in retired or _same_session(rows[retired_by.get(o, o)], new))
                                 and not rows[o]["tentative"] and rows[o].get("session_id") != new.get("session_id")
                                 and rows[o]["created_at"] < new["created_at"] and _comparable(rows[o], new, me, names)]
                        # The same relation first ("swapped Bea to Fridays" replaces a schedule,
                        # not the most alike exam), any relation when none of it is alike enough.
                        # (A relation as general as "is" or "has" names no slot: "has a Kindle now"
                        # is not about "has a coffee around 4pm".)
                        # A change that begins something ("started pottery", "joined a club")
                        # replaces only a value of a one-value relation ("joined Stripe" as an employer).
                        beginning = (new.get("change_cue") or "") in BEGINNING_CUES
                        # What kind of thing the new value is ("fraud detection team" → "team").
                        slot = value_kinds.head(new["value"])
                        same = [o for o in older if rows[o]["relation"] == new["relation"]] \
                            if new["relation"] not in GENERAL_RELATIONS and (not beginning or one_value) else []
                        if any(o in retired for o in same):
                            # Another fact of this session already ended this slot's value
                            # ("cancelled PureGym", then "goes to the leisure centre now"):
                            # this one restates that change, as above.
                            older = []
                        elif same and float(np.max(vectors[same] @ vectors[n])) >= floor:
                            older = same
                        else:
                            # Another relation is replaced only when the fact names the thing
                            # that changed, by its subject or the kind of value ("School pickup
                            # shifted" ~ "picks up from school", "new phone" ~ "iPhone", "light
                            # mode" ~ "dark mode"), or reads as the same fact: "moved the
                            # billing cron to 02:30" does not retire "the team deploys billing
                            # on Thursdays", however alike the two are otherwise.
                            # The user's name anchors only a value of the same kind: "is at the
                            # PureGym now" may replace "goes to the Anytime Fitness" (a name for a
                            # name), not "keeps waking up groggy" or "is at 12 km".
                            # (A bare name, that is: every fact of that person's names them; a
                            # relative, "Bea's mum", anchors her facts alone.)
                            key = new["subject_key"]
                            person = " " not in key and key not in _THINGS and key in names
                            subject_anchor = key_parts(key)[1][:_ANCHOR]

                            def anchored(o: int) -> bool:
                                if beginning:  # a second club, a new hobby: beside the others
                                    return False
                                words = rows[o].get("words") or ()
                                if slot and any(slot[:_ANCHOR] in w.lower() for w in words):
                                    return True
                                if subject_anchor and any(subject_anchor in w.lower() for w in words):
                                    return not person or value_kinds.coarse(rows[o]["value"]) == value_kinds.coarse(new["value"]) is not None
                                return float(vectors[o] @ vectors[n]) >= _SAME_FACT

                            older = [o for o in older if anchored(o)]
                        if older:
                            sims = vectors[older] @ vectors[n]
                            # The fact that names the same kind of thing as the new value
                            # ("moved to the fraud team" → "…on the payments team") first.
                            naming = np.array([bool(slot) and slot in {w.lower() for w in rows[o].get("words") or ()} for o in older])
                            # (A fact that names the slot may read less alike: a lower bar for it.)
                            best = int(np.argmax(np.where(naming & (sims >= floor - _NAMED_SLACK), sims + 1.0, sims)))
                            if sims[best] >= floor - (_NAMED_SLACK if naming[best] else 0.0) and older[best] not in retired:
                                retire(n, older[best], "change")
                if n not in retirers:
                    o, rule = _conflicting(n, heads.get(head, ()), rows, vectors, retired, config), "conflict"
                    if (o is None and new["states_change"] and not new["tentative"]
                            and new["id"] not in known):
                        # 4. A stated change no rule above settled: by its slot; 5. else by the learned judge.
                        o, rule = _slot_change(n, members[:k], rows, retired, config, me, names, embed, vectors, who)
                        if (o is None or rule == "conflict") and embed is not None:
                            o, rule = judged(n, members[:k], rows, retired, config, names, embed, vectors, who, o, rule)
                    if rule != "conflict" and o is not None:
                        retire(n, o, rule)
                    elif o is not None:
                        pairs.append(Retirement(n, o, rule))
            heads[head].append(n)
    return pairs


def _conflicting(n: int, earlier, rows: dict[int, dict], vectors: np.ndarray, retired: set[int],
                 config: MemoryConfig) -> int | None:
    """The earlier fact a newer one contradicts without retiring it: the same subject and
    relation (one that names a slot), another value, said in another session and alike at
    ``[graph] conflict_min_similarity`` or more (the most alike one), where the newer says
    it changed or one of them holds one value at a time (a value of the same kind), and
    no rule was sure enough to retire the older. Both are then served, marked
    ``[conflict]``, newest first: unsure, show both. (Two values of a relation that holds
    many, "likes jazz" and "likes opera", are no conflict.)"""
    new = rows[n]
    one_value = single_valued(new, config)
    if (new.get("change_cue") or "") in BEGINNING_CUES and not one_value:
        return None  # a second club, a new hobby: beside the others
    if not new["value"] or new["relation"] in GENERAL_RELATIONS or new.get("supersedes_hint"):
        return None
    kind = value_kinds.coarse(new["value"])
    found = [o for o in earlier if o not in retired and not rows[o]["tentative"] and rows[o]["status"] == "active"
             and rows[o]["relation"] == new["relation"] and rows[o].get("session_id") != new.get("session_id")
             and rows[o]["created_at"] < new["created_at"] and same_subject(rows[o], new)
             and (new["states_change"] or value_kinds.coarse(rows[o]["value"]) == kind and (one_value or single_valued(rows[o], config)))
             and _differ(rows[o], new)]
    if not found:
        return None
    sims = vectors[found] @ vectors[n]
    best = int(np.argmax(sims))
    return found[best] if float(sims[best]) >= float(config.graph.conflict_min_similarity) else None


def _slot_change(n: int, earlier, rows: dict[int, dict], retired: set[int], config: MemoryConfig,
                 me: str | None, names: frozenset[str], embed, vectors: np.ndarray,
                 who: Collection[str] = ()) -> tuple[int | None, str]:
    """(the earlier fact, "slot" or "conflict") a stated change that no rule above settled
    is about, by its slot: the same person's fact (``_comparable``) of any relation, said in
    another session, whose ``slot`` (its words without the people's names) is the most
    alike to the change's. Whole sentences about one person read alike for the name alone
    ("Lars's budget is around 150 euros" ~ "Lars moved to Utrecht"); their slots do not,
    while "is vegan" ~ "is vegetarian now" do. Alike at ``[graph] slot_retire_similarity``
    or more: retired ("slot"); at ``slot_min_similarity`` or more: unsure, so both are
    served marked ``[conflict]``, newest first; less: (None, "")."""
    new = rows[n]
    # A change that names what it replaced by words no earlier fact holds ("traded her car
    # in for a Kia EV6" after "Ola's Skoda Octavia has an engine light on") is compared by
    # what it names, not by its new value: the hint is the old value's phrase.
    hint = new.get("supersedes_hint") if not new.get("supersedes") else None
    if (embed is None or not (new.get("slot") or hint) or (new.get("supersedes_hint") and not hint)
            or (new.get("change_cue") or "") in BEGINNING_CUES):
        return None, ""
    # A change of a thing ("the billing cron moved to 02:30") is about that thing or about
    # what its owner said of herself ("Bea runs the billing job at 1"), never about another
    # thing of hers that reads alike ("Bea's team deploys billing on Thursdays").
    someone = named(new["subject_key"], names)

    def herself(o: int) -> bool:
        return key_parts(rows[o]["subject_key"])[0] is None and named(rows[o]["subject_key"], names)
    found = [o for o in earlier if o not in retired and not rows[o]["tentative"] and rows[o]["status"] == "active"
             and rows[o].get("slot") and rows[o].get("session_id") != new.get("session_id")
             and rows[o]["created_at"] < new["created_at"] and _comparable(rows[o], new, me, names)
             and (someone or herself(o) or same_subject(rows[o], new))]
    if not found:
        return None, ""
    # The most alike few by the whole fact, then by their slots (embedded here: a handful per change).
    found = [found[i] for i in np.argsort(-(vectors[found] @ vectors[n]))[:_SLOT_CANDIDATES]]
    graph = config.graph
    sims = None
    if not hint:
        slots = np.asarray(embed([new["slot"], *(rows[o]["slot"] for o in found)]), dtype=np.float32)
        sims = slots[1:] @ slots[0]
        best = int(np.argmax(sims))
        if float(sims[best]) >= float(graph.slot_retire_similarity):
            return found[best], "slot"
    # The same kind of value ("moved to Galway" after "a running club in Dublin"): the
    # values' meaning where the slots read apart; for a hint, what it names (``value_kinds``).
    kinds = value_kinds.most_alike({"value": hint} if hint else new, [rows[o] for o in found], who, embed)
    pick = int(np.argmax(kinds))
    if float(kinds[pick]) >= float(graph.kind_retire_similarity) and (
            sims is None or float(sims[pick]) >= float(graph.kind_slot_floor)):
        return found[pick], "kind"
    if sims is not None and float(sims[best]) >= float(graph.slot_min_similarity):
        return found[best], "conflict"
    return (found[pick], "conflict") if float(kinds[pick]) >= float(graph.kind_min_similarity) else (None, "")


def judged(n: int, earlier, rows: dict[int, dict], retired: set[int], config: MemoryConfig, names: frozenset[str],
            embed, vectors: np.ndarray, who: Collection[str], o: int | None, rule: str) -> tuple[int | None, str]:
    """Rule 5 (``change_model``): the person's earlier facts of other sessions, the most alike few, judged together;
    the likeliest at ``[graph] change_model_retire`` is retired ("learned"), at ``change_model_conflict`` a conflict."""
    new = rows[n]  # (a change that begins something, "started pottery", sits beside the others; a guess never takes an agent's claim)
    found = [] if new.get("provenance") == AGENT_STATED else [e for e in earlier if e not in retired and rows[e]["status"] == "active" and not rows[e]["tentative"]
             and rows[e].get("session_id") != new.get("session_id") and rows[e]["created_at"] < new["created_at"]
             and ((new.get("change_cue") or "") not in BEGINNING_CUES or single_valued(new, config))]
    found = [found[i] for i in np.argsort(-(vectors[found] @ vectors[n]))[:_SLOT_CANDIDATES]] if found else []
    judged = change_model.judge(new, [rows[e] for e in found], vectors[found] @ vectors[n], embed, who, lambda old: dict(
        same_relation=old["relation"] == new["relation"], general=new["relation"] in GENERAL_RELATIONS,
        same_subject=same_subject(old, new), old_named=named(old["subject_key"], names),
        new_named=named(new["subject_key"], names), ending=(new.get("change_cue") or "") in ENDING_CUES,
        one_value=single_valued(new, config), names=names)) if found else None
    if judged is None:
        return o, rule
    best = int(np.argmax(judged))
    if float(judged[best]) >= float(config.graph.change_model_retire):
        return found[best], "learned"
    return (found[best], "conflict") if o is None and float(judged[best]) >= float(config.graph.change_model_conflict) else (o, rule)


# How many of a person's facts a stated change compares by slot (the most alike by the whole fact).
_SLOT_CANDIDATES = 8
# Relations too general to name a slot by themselves ("is", "has", "does", "goes").
GENERAL_RELATIONS = frozenset("is have do go get keep take make give put be_at be_on be_in be_with".split())
# A change of another relation must name what changed: the first letters of its subject's
# head noun or of its value's kind found in the older fact ("pickup" in "picks up"), or be
# this alike to it.
_ANCHOR = 4
_SAME_FACT = 0.7
# How much less alike a fact that names the slot may read (the lower bar for it).
_NAMED_SLACK = 0.1


def _holds(old: dict, new: dict, me: str | None, names: frozenset[str] | None) -> bool:
    """``old`` holds the value an ending change names, for the same person: the same
    value, or one naming the other ("Monzo" ~ "Monzo account"), not a mere shared word."""
    a, b = value_words(old["value"]), value_words(new["value"])
    if not a or not b or not (a <= b or b <= a):
        return False
    return whose(old["subject_key"], me, names) == whose(new["subject_key"], me, names)


def _same_session(a: dict, b: dict) -> bool:
    return a is not b and bool(a.get("session_id")) and a.get("session_id") == b.get("session_id")


def _comparable(old: dict, new: dict, me: str | None = None, names: frozenset[str] | None = None) -> bool:
    """Whether a stated change of ``new`` may replace ``old``: about the same person (an
    unnamed thing, "it" or "the rent", is the user's own: ``whose``), and not the same
    value again. "Kwame's brother switched to Android" is not about Kwame's "it"."""
    if _differ(old, new) is False:
        return False
    a, b = whose(old["subject_key"], me, names), whose(new["subject_key"], me, names)
    return same_subject(old, new) or a == b or (me is None and (a is None or b is None))


def stamp_invalid(items: pl.DataFrame) -> pl.DataFrame:
    """Every superseded item has ``invalid_at``: when its successor became true (or, with
    the successor gone, when it was superseded). A later fact never makes an earlier one
    invalid before it was valid."""
    if items.is_empty():
        return items
    successors = (items.select(pl.col("id").alias("superseded_by"), pl.col("valid_from").alias("_successor_from"))
                  .unique("superseded_by", keep="last", maintain_order=True))
    successor_from = (items.select("superseded_by").join(successors, on="superseded_by", how="left",
                                                         maintain_order="left")["_successor_from"])
    since = pl.coalesce(pl.col("_successor_from"), pl.col("updated_at"))
    # Never before the item itself was valid.
    since = pl.when(pl.col("valid_from").is_not_null() & since.is_not_null() & (since < pl.col("valid_from"))) \
        .then(pl.col("valid_from")).otherwise(since)
    stamped = (pl.when(pl.col("status") == "superseded").then(pl.coalesce(pl.col("invalid_at"), since))
               .when(pl.col("status") == "active").then(None)
               .otherwise(pl.col("invalid_at")))
    return (items.with_columns(successor_from.alias("_successor_from"))
            .with_columns(stamped.cast(items.schema["invalid_at"]).alias("invalid_at")).drop("_successor_from"))
