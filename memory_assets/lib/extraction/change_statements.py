"""Every change statement becomes a fact (issue 29): the two shapes the clause rules
miss, as the speaker's first-person words for ``OfflineExtractor`` to render.

- A change told on the way to something else, often a question: "Since switching to
  OUTsurance, how do I…" → "I switched to OUTsurance" (``cues.CHANGE_LEAD``).
- A first-person sentence with a change cue ("gave up", "these days", "now", "went up
  to"; ``cues.CHANGE_DONE`` and ``retrieval.text``'s change adverbs and phrases) that no clause rule read: kept whole, its tail question
  dropped. A question or a wish says no change; the structure step marks a hypothetical
  or considered one tentative, and it retires nothing.
"""

from __future__ import annotations

import re

from memory_assets.lib.extraction import cues as C
from memory_assets.lib.extraction import rules as R
from memory_assets.lib.extraction.clauses import content_words, drop_tail_question, has_verb, is_question, strip_filler
from memory_assets.lib.extraction.people import speakers_own
from retrieval.text import CHANGE_ADVERBS, says_changed, tokens


def lead_change(sentence: str) -> tuple[str | None, str]:
    """The change a sentence opens with, in the first person, and what follows it (for the
    clause rules, which would read the lead again, garbled: "That Aaron has joined…"):
    "Since moving to Galway, …" → "I moved to Galway"; "Since going freelance" → "I went
    freelance"; "Now that my mail lives in Proton, …" → "my mail lives in Proton now";
    "First week at Bosch done!" → "I work at Bosch now". (None, the sentence) without one."""
    return _lead(sentence) or (None, sentence)


def _lead(sentence: str) -> tuple[str, str] | None:
    text = sentence.strip()
    if first := C.FIRST_DAYS_AT.match(text):
        return f"I work at {first['place']} now", text[first.end():].lstrip(" !.,;:-")
    lead = C.CHANGE_LEAD.match(text)
    if lead is not None and (lead["prep"] or (lead["verb"] or "").lower() in C.CHANGE_LEAD_OBJECT) and not (
            (lead["verb"] or "").lower() in C.CHANGE_LEAD_STATE and lead["prep"]):  # "since going to the gym"
        # ("Since the move I'm based at…" names no new value after the move.)
        return f"I {C.CHANGE_LEAD_PAST[(lead['verb'] or lead['noun']).lower()]} {lead['rest'].strip()}", text[lead.end():]
    if (now := C.NOW_THAT_LEAD.match(text)) and R.FIRST_PERSON.search(clause := now["clause"]) and has_verb(clause):
        return f"{clause} now", text[now.end():].strip()
    # "since I'm vegetarian, what…?": a reason told on the way; "is it weird that I still use…?": a fact up for judgement.
    for shape in (C.REASON_LEAD, C.JUDGED_FACT):
        if (told := shape.match(text)) and has_verb(clause := told["clause"]) and not C.ASIDE.match(clause) \
                and ((words := content_words(clause)) and (len(words) > 1 or len(words[0]) >= 5)):  # not "since I have time"
            return clause, text[told.end():].strip()
    return None


def change_statement(sentence: str, names: tuple[str, ...]) -> str | None:
    """The sentence, without its tail question and filler, when it says in the first
    person that a value changed (a change verb it opens with is the speaker's: "Stepped
    down as treasurer"); or says, by a change verb or phrase, that one of the speaker's
    things changed ("From now on the standup is at 9:15": an unnamed thing is the
    speaker's own); None otherwise. A bare "now" says no change of a thing ("the weather
    is nice now")."""
    text = speakers_own(strip_filler(drop_tail_question(sentence), names).strip())
    if _DOING.match(text) and any(w.lower() in CHANGE_ADVERBS for w in tokens(text)) or C.BACK_TO.match(text):
        text = f"I'm {text[:1].lower()}{text[1:]}"  # "Using Notion for all my planning now", "Back to five days a week"
    if not text or is_question(text) and not _UPTALK.match(text) or not has_verb(text) or R.SUBORDINATE_START.match(text) and "," not in text:
        return None
    if not R.FIRST_PERSON.search(text):
        return text if _THING.search(text) and (C.CHANGE_DONE.search(text) or says_changed(text)) else None
    return text if states_change(text) else None


def states_change(text: str) -> bool:
    """A change verb, phrase or adverb: "gave up", "no longer", "these days", "now"."""
    return bool(C.CHANGE_DONE.search(text) or says_changed(text) or any(w.lower() in CHANGE_ADVERBS for w in tokens(text)))


# A statement said with a rising "?": "weirdly I've turned into a morning person?" (the
# speaker's own clause in its statement order, one clause, no modal: "I should switch?" and
# "I'm back to normal now, but anything I can do?" ask).
_UPTALK = re.compile(r"^(?:\w+ly,?\s+|so\s+|guess\s+)?(?:I|I'm|I've|we|we're|we've)\s+(?!should|could|would|can|might|may)\w[^?,;:—–]*\?$",
                     re.IGNORECASE)


# A sentence that opens with what the speaker is doing, and what with: "Using Notion…",
# "Seeing Dr. Patel…", "Taking the 7:10 train…" (not "Morning runs are…").
_DOING = re.compile(r"^[A-Za-z]+ing\s+(?:[A-Z]|the\b|a\b|an\b|my\b|our\b|\d)")
# An unnamed thing as what the sentence is about: "the standup", "the rent".
_THING = re.compile(r"^(?:[\w']+,?\s+){0,3}?the\s+[a-z]", re.IGNORECASE)  # after a lead-in ("From now on the…")
