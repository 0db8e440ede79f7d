"""How the turns of a session bear on each other, for the offline extractor: a later
word that reverses or denies an earlier one, an answer that completes a question, a
reply that confirms what the assistant said, whom a turn addresses."""

from __future__ import annotations

import dataclasses
import re

from memory_assets.lib.extraction import cues as C
from memory_assets.lib.extraction import rules as R
from memory_assets.lib.extraction.clauses import (content_words, has_verb, is_chatter, is_question, is_specific,
                                                  sentences, strip_filler)
from memory_assets.lib.extraction.people import Voice, outside_compounds
from retrieval.config import MemoryConfig
from retrieval.schema import Candidate, Turn
from retrieval.text import NEGATION, tokens


def token_set(text: str, names: tuple[str, ...] = ()) -> set[str]:
    """Lower-cased content words and identifiers ("tp6104", "postgres"), names left out."""
    skip = {n.lower() for n in names}
    return {w for w in (t.lower().strip(".-'") for t in tokens(text))
            if (len(w) > 2 or w.isdigit()) and w not in C.STOPWORDS and w not in skip}


def _value(token: str) -> str:
    return re.sub(r"(?<=\d)(?:st|nd|rd|th)$", "", token.lower())


def settle_reversals(found: list[Candidate], names: tuple[str, ...], reversing: set[int],
                      speakers: dict[int, str]) -> list[Candidate]:
    """Within one session the user's last word stands: a fact the user changes later
    ("I like dark roast" … "actually no, I'm switching to a medium roast"; "April 17"
    … "April 15 now, not the 17th") is dropped, and the change names what it replaces.

    A later trusted statement that reads as a change (``C.REVERSAL``, or any statement
    in a turn that opens with "actually no") replaces an earlier fact from an earlier
    turn of the same speaker (or of a tool) when they share two content words, or when it
    denies one of the earlier fact's values ("not the 17th"). A correction in such a turn
    names what it replaced even when it shares only one word with it.
    """
    def same_voice(earlier: Candidate, later: Candidate) -> bool:
        return earlier.source_trust == "untrusted" or speakers.get(max(earlier.source_turns)) == speakers.get(
            max(later.source_turns))

    def replaced(earlier: Candidate, mine: set[str]) -> str:
        theirs = token_set(earlier.content, names)
        words = [w for w in tokens(earlier.content) if w.lower() in theirs - mine]
        return " ".join(words[:4]) or earlier.content.rstrip(".")

    dropped: set[int] = set()
    hints: dict[int, str] = {}
    for j, later in enumerate(found):
        says_so = later.kind == "correction" or C.REVERSAL.search(later.content)
        if later.source_trust != "trusted" or not (says_so or reversing & set(later.source_turns)):
            continue
        mine = token_set(later.content, names)
        denied = {_value(v) for v in C.NEGATED_VALUE.findall(later.content)} - C.STOPWORDS
        for i, earlier in enumerate(found[:j]):
            if max(earlier.source_turns) >= max(later.source_turns) or not same_voice(earlier, later):
                continue
            theirs = token_set(earlier.content, names)
            if len(mine & theirs) >= 2 or denied & {_value(t) for t in theirs}:
                dropped.add(i)
                if says_so and later.supersedes is None and j not in hints:
                    hints[j] = replaced(earlier, mine)
    for j, later in enumerate(found):
        if j in hints or later.supersedes is not None or later.kind != "correction":
            continue
        mine = token_set(later.content, names)
        for i in sorted(dropped):
            if max(found[i].source_turns) < max(later.source_turns) and token_set(found[i].content, names) & mine:
                hints[j] = replaced(found[i], mine)
                break
    return [dataclasses.replace(c, supersedes=hints[k]) if k in hints else c
            for k, c in enumerate(found) if k not in dropped]


def denial_of(cand: Candidate, claims: list[tuple[int, str]], names: tuple[str, ...],
               config: MemoryConfig) -> Candidate:
    """A user's denial of what the assistant or a page said earlier ("Hannah does not work
    at Mozilla" after the assistant's "you're a senior engineer at Mozilla") is a
    correction, and names the claim it replaces."""
    if (cand.source_trust != "trusted" or cand.supersedes is not None or cand.directive is not None
            or not NEGATION.search(cand.content)):
        return cand  # "never disable verification" is a standing rule, not a denial
    mine = token_set(cand.content, names)
    proper = {w.lower() for w in re.findall(r"(?<!^)\b[A-Z][\w.+-]*\w", cand.content)}  # "Mozilla", "TP6104"
    for turn, claim in reversed(claims):
        theirs = token_set(claim, names)
        shared = mine & theirs
        if turn < min(cand.source_turns) and (len(shared) >= min(2, len(mine)) or shared & proper):
            # What is denied is what both mention: "not vegetarian" replaces "vegetarian".
            words = list(dict.fromkeys(w for w in tokens(claim) if w.lower() in shared))
            if not words:
                continue
            return dataclasses.replace(cand, supersedes=" ".join(words[:4]), kind="correction",
                                       tier=config.tier_for("correction"), provenance="user_corrected")
    return cand


def is_denied(clause: str, denials: list[str], names: tuple[str, ...]) -> bool:
    """A later user sentence that denies something and shares two of the clause's words,
    or one identifier ("TP6104 still leaves at 10:05" against "TP6104 … moved to 06:00")."""
    mine = token_set(clause, names)
    for sentence in denials:
        shared = mine & token_set(sentence, names)
        if len(shared) >= 2 or any(re.search(r"\d", w) and re.search(r"[a-z]", w) for w in shared):
            return True
    return False


_WE_AS_I = {"we": "I", "we're": "I'm", "we've": "I've", "we'll": "I'll", "we'd": "I'd", "us": "me", "our": "my",
            "ours": "mine", "ourselves": "myself"}


# "We're up to 40 paying customers", "we're down to one car": a count the group reached,
# not the speaker's own (who is not 40): it stays the group's.
_GROUP_COUNT = re.compile(r"\bwe(?:'re| are)\s+(?:now\s+)?(?:up to|down to|at|on|over|past|under)\s+\d", re.IGNORECASE)


def we_as_i(text: str) -> str:
    """"We" in the user's mouth as "I": the user's team or household, attributed to the user
    ("We're switching to Zen" → "I'm switching to Zen" → "Tariq is switching to Zen");
    but a count the group reached stays the group's ("we're up to 40 customers")."""
    if _GROUP_COUNT.search(text):
        return text

    def swap(m: re.Match[str]) -> str:
        word = _WE_AS_I[m.group(0).lower()]
        return word if m.group(0)[:1].islower() or word == "I" or word.startswith("I'") else word.capitalize()
    return outside_compounds(text, lambda t: re.sub(r"\b(?:we're|we've|we'll|we'd|we|us|ours|our|ourselves)\b", swap, t,
                                                    flags=re.IGNORECASE))


def lower_lead(text: str) -> str:
    """"Once a week…" continues a sentence as "once a week…"; "Thursday evenings…" keeps its capital."""
    first = text.split(" ", 1)[0]
    common = first.lower() in C.STOPWORDS or first.lower() in ("once", "twice", "every", "each", "only", "until",
                                                                 "weekly", "daily", "monthly")
    return text[:1].lower() + text[1:] if common else text


def answer_details(reply: Turn, names: tuple[str, ...]) -> str | None:
    """What a "yes" adds ("Yes, once a week on Wednesdays, but only after the physio
    clears me in June"): a phrase with no subject of its own right after the yes."""
    first = (sentences(reply.content) or [""])[0]
    rest = C.CONFIRM_WORD.sub("", first, count=1).strip(" ,.!")
    if not rest or rest == first.strip(" ,.!") or is_question(rest) or is_chatter(rest):
        return None
    if C.ANSWER_SUBJECT.match(rest) or C.RULE_START.match(rest) or C.REMIND_ME.match(rest) or C.TASK_REQUEST.match(rest):
        return None
    if has_verb(rest) and not C.ANSWER_DETAIL.match(rest):
        return None
    return rest if content_words(rest, names) else None


def appositive(sentence: str, names: tuple[str, ...]) -> str | None:
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


def informative(content: str, clause: str, voice: Voice, names: tuple[str, ...], kind: str,
                changed: bool = False) -> bool:
    """Enough substance to be worth remembering: two concrete words, or one when a liking
    or a choice is stated ("Aaron is into jazz") or the speaker is the subject ("Jon is
    doing kickboxing") — but not a bare verb ("Maria sat with her"); or, when the sentence
    says a value ``changed``, the one word a preposition points at ("I'm on soy now", not
    "I'm fine now")."""
    substance = content_words(content, names + (voice.name,))
    if len(content.split()) < 3 or not substance:
        return False
    if len(substance) >= 2 or is_specific(clause) or C.TIME_ANCHOR.search(clause):
        return True
    if changed and _VALUE_AFTER.search(clause):
        return True
    if kind in ("preference", "negative", "decision", "correction"):
        return True
    solo = substance[0]
    return content.startswith(voice.name + " ") and len(solo) >= 5 and not C.PAST_TENSE.fullmatch(solo)


# One word of substance after "on", "to", "with"… and before the end or a time word.
_VALUE_AFTER = re.compile(r"\b(?:on|to|with|at|into|for|in)\s+(?:the\s+|a\s+|an\s+)?[\w&.'-]{2,}"
                          r"(?:\s+(?:now|instead|these days|nowadays|anymore))?\s*[.!]*$", re.IGNORECASE)


def recent_memo(memo: tuple[int, str] | None, index: int, within: int = 4) -> str | None:
    return memo[1] if memo and index - memo[0] <= within else None


def confirms(reply: Turn) -> bool:
    text = reply.content.strip()
    head = " ".join(text.split()[:6])
    return bool(C.CONFIRM.match(text)) and not C.CONFIRM_BUT.search(head)


def addressee_of(ordered: list[Turn], index: int) -> str | None:
    """In a conversation between people, "you" is whoever spoke last (or speaks next)."""
    me = ordered[index].speaker
    for i in [*range(index - 1, -1, -1), *range(index + 1, len(ordered))]:
        other = ordered[i]
        if other.role == "user" and other.speaker and other.speaker != me:
            return other.speaker
    return None
