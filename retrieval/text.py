"""The one lexicon: every list of English words and every rule about words lives here.

Agent-safe (no dagster). Extraction, supersession, ranking, the trust pass, summaries,
forgetting and the evals all read these; a second copy elsewhere is a bug
(``tests/test_one_home.py`` fails on one).

- **Stopwords**, in layers with one job each. ``FUNCTION_WORDS`` are the closed-class
  words of English (articles, pronouns, auxiliaries, prepositions, conjunctions, their
  contractions); ``STOPWORDS`` is that list, for "which words carry content". Two
  documented additions serve one purpose each: ``FILLER`` (what people say around a
  request: "please", "do you remember") and ``COMMON_VERBS`` (light verbs that name no
  topic: "get", "make", "think"); ``QUERY_STOPWORDS`` (search terms) is their union.
  ``PREFERENCE_VERBS`` are the verbs of a stated preference, which are not what a change
  replaced ("wants black" replaces "black"). The offline extractor's lists and the evals'
  matcher's list are kept exactly as they were measured and calibrated (see below).
- **Negation**: ``negated(text)`` — a statement that denies what it states, with contrasts
  (", not npm", "no more than", a leading "No,") set aside; ``CESSATION`` adds the words
  that end a state ("quit", "stopped", "no longer"), for the trust pass's disagreement test.
- **Calendar words**: ``MONTHS``, ``WEEKDAYS`` (from the ``calendar`` module).
- **Sentiment**: ``sentiment(text)`` — one classifier for a fact's sentiment (extraction)
  and the conversation's (ranking's ``sentiment_match``), so the two can agree.
- **Injected blocks**: ``strip_injected(text, header)`` — memory the agent was given is
  never extracted again, whether the block kept its markers or was pasted bare.
"""

from __future__ import annotations

import calendar
import re

from retrieval.schema import INJECTION_END, INJECTION_START

# --- stopwords ------------------------------------------------------------------------

FUNCTION_WORDS = frozenset("""
a about above after again against all am an and another any are aren aren't as at be because been
before being below between both but by can can't cannot could couldn couldn't did didn didn't do
does doesn doesn't doing don don't down during each either even every few for from further had
hadn hadn't has hasn hasn't have haven haven't having he he'd he'll he's her here here's hers
herself him himself his how how's i i'd i'll i'm i've if in into is isn isn't it it's its itself
let's may me might mine more most must mustn't my myself no nor not of off on once only onto or
other others ought our ours ourselves out over own same shall shan't she she'd she'll she's should
shouldn shouldn't so some such than that that's the their theirs them themselves then there
there's these they they'd they'll they're they've this those through to too under until up us
very was wasn wasn't we we'd we'll we're we've were weren weren't what what's when when's where
where's which while who who's whom why why's will with won won't would wouldn wouldn't yet you
you'd you'll you're you've your yours yourself yourselves ain
""".split())
STOPWORDS = FUNCTION_WORDS

# Greetings and politeness: no part of what is asked ("Hey, please remind me…").
POLITE = frozenset("please thanks thank hey hi hello okay ok yeah".split())
# What people say around a request or in passing: no part of a topic.
FILLER = POLITE | frozenset("""
tell know remember recall think said say says mention mentioned yes just really actually also
still already kind sort thing things something anything lot lots stuff pretty quite well gonna
wanna gotta ever much many
""".split())

# Light verbs: they carry a sentence, not its topic.
COMMON_VERBS = frozenset("""
get got getting go going gone went want wants wanted like make made making take took feel felt
know knew think thought see saw
""".split())

# The verbs of a stated preference or habit: "switched from black" replaces "likes black".
PREFERENCE_VERBS = frozenset("""
want wants wanted like likes liked prefer prefers preferred use uses used using love loves longer
anymore switch switched now
""".split())

QUERY_STOPWORDS = STOPWORDS | FILLER | COMMON_VERBS

# The offline extractor's three word lists, kept exactly as the rules were measured
# (rules-v8: gold precision 0.715, LoCoMo recall@10 0.856). Composing them from the layers
# above (their supersets) cost 4 LoCoMo questions of 762, so they stay as measured until
# the spaCy-based extractor replaces them.
# Keywords: words that name no topic of a fact.
EXTRACTION_STOPWORDS = frozenset(
    "a an the and or but so of to in on at for with from by about as into over after before "
    "is are was were be been being am has have had do does did will would can could should "
    "may might must shall it its it's this that these those there here then than too very "
    "really just also still even only not no yes my your our their his her he she they them "
    "we us you i me mine yours what which who whom when where why how all any some much many "
    "more most such own same other another each every both few lot lots thing things stuff "
    "like get got getting go going gone went make made making take took feel felt know knew "
    "think thought want wanted say said see saw way well good great new one two time times "
    "today yesterday tomorrow week weekend month year last next ago now soon pretty so "
    "quite kind sort gonna wanna gotta others is going hasn haven doesn didn isn wasn don won "
    "can couldn wouldn shouldn aren weren ain yet sometime someday soon later lately recently either".split()
)
# Capitalised words that are not names.
NOT_NAMES = frozenset(
    "i i'm i've i'll i'd the a an and but so my we our it it's this that these those they "
    "he she his her you your yes yeah no oh wow hey hi thanks thank okay ok well just also "
    "actually really plus btw lol haha sure great cool awesome nice last next yesterday today "
    "tomorrow gonna what when where who why how totally definitely absolutely can can't should shall "
    "would could want do does did are is was were have has "
    "don't didn't anyway speaking being having there here not after before since because "
    "if as at in on for with from by of to".split()
)
# After "her", a word that ends the noun phrase: "ask her about it" is an object, not "her X".
NOT_AFTER_POSSESSIVE = frozenset(
    "a an the to for and or but if so as at in on of by with from about into that this than then when because "
    "is was are were will would can could should has had have do does did not too again now".split())

# The evals' fact matcher (``evals.scorers.content_words``): its coverage rule was
# calibrated on 200 hand-labelled pairs with exactly these words, so they stay as calibrated.
MATCH_STOPWORDS = frozenset(
    "a an the and or but of to in on at for from by with is are was were be been being it its this that these "
    "those has have had do does did not no than then as so into onto over under about after before now any all "
    "his her their our my your he she they we i you them us me will would wants want can could should also "
    "just still really actually already very".split())

# --- negation -------------------------------------------------------------------------

NEGATION = re.compile(
    r"\b(?:not|no|never|none|nobody|nothing|neither|nor|cannot|no longer)\b|n't\b", re.IGNORECASE)
# ", not npm" / "not only" contrast two things, "no more than 30 km" is a limit, and a
# leading "No," answers the other speaker: none of them denies the statement.
CONTRAST = re.compile(
    r",\s*(?:and\s+|but\s+)?not\s+[^,.;]*|\bnot only\b|\b(?:no|not) (?:more|less|fewer|later|earlier) than\b"
    r"|^\s*(?:no|nope|nah)\b[,.!]*", re.IGNORECASE)
# Words that end a state: "Aaron quit smoking" disagrees with "Aaron smokes".
CESSATION = re.compile(r"\b(?:no longer|stopped|quit|gave up)\b", re.IGNORECASE)


def negated(text: str) -> bool:
    """Whether a text denies what it states ("Maya is not vegetarian"), contrasts aside."""
    return NEGATION.search(CONTRAST.sub(" ", text)) is not None


def denies_or_ends(text: str) -> bool:
    """Negated, or saying a state ended: the polarity the trust pass compares."""
    return negated(text) or CESSATION.search(text) is not None


# --- the calendar ---------------------------------------------------------------------

MONTHS: tuple[str, ...] = tuple(m.lower() for m in calendar.month_name[1:])
WEEKDAYS: tuple[str, ...] = tuple(d.lower() for d in calendar.day_name)
# Month names and their abbreviations ("Sept", "Oct") → 1–12; weekday names → 0 (Monday)–6.
MONTH_NUMBERS: dict[str, int] = {
    **{m: i for i, m in enumerate(MONTHS, start=1)},
    **{m.lower(): i for i, m in enumerate(calendar.month_abbr) if m},
    "sept": 9,
}
WEEKDAY_NUMBERS: dict[str, int] = {d: i for i, d in enumerate(WEEKDAYS)}

# --- sentiment ------------------------------------------------------------------------

_FRUSTRATED = re.compile(
    r"\b(?:annoy(?:ed|ing)|ugh+|frustrat(?:ed|ing)|fed up|sick of|tired of|irritat(?:ed|ing)|angry|"
    r"argh+|stress(?:ed|ful)|ridiculous|hate (?:it )?when|still broken)\b|again\s*\?!|\?!|!\?", re.IGNORECASE)
_UNCERTAIN = re.compile(
    r"\b(?:not sure|unsure|maybe|might|don't know(?: if| whether)?|no idea|wondering|uncertain|perhaps|"
    r"not certain|confused)\b", re.IGNORECASE)
_EXCITED = re.compile(
    r"\b(?:excit(?:ed|ing)|can't wait|cannot wait|love|loving|loved|thrilled|stoked|pumped|"
    r"over the moon|psyched|amazing|awesome)\b|!", re.IGNORECASE)


def sentiment(text: str) -> str:
    """``frustrated``, ``uncertain``, ``excited`` or ``neutral``, checked in that order
    (a frustrated "again?!" outranks its exclamation mark)."""
    if _FRUSTRATED.search(text):
        return "frustrated"
    if _UNCERTAIN.search(text):
        return "uncertain"
    if _EXCITED.search(text):
        return "excited"
    return "neutral"


# --- injected memory ------------------------------------------------------------------

_MARKED_BLOCK = re.compile(re.escape(INJECTION_START) + r".*?(?:" + re.escape(INJECTION_END) + r"|\Z)", re.DOTALL)


def strip_injected(text: str, header: str | None = None) -> str:
    """``text`` without any memory block an agent was given: the marked block
    (``INJECTION_START`` … ``INJECTION_END``, replaced by a line break), or its bare form
    pasted without the markers — the ``header`` line (default ``[injection] header``) and
    the ``~ `` lines under it."""
    if header is None:
        from retrieval.config import load_config

        header = load_config().injection.header
    bare = re.compile(rf"^[ \t]*{re.escape(header.strip())}[ \t]*\n(?:[ \t]*~[^\n]*(?:\n|\Z))*", re.MULTILINE)
    return bare.sub("", _MARKED_BLOCK.sub("\n", text))
