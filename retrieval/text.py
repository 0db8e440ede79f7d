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
  that end a state ("quit", "stopped", "no longer"); ``opposed(a, b)`` — two facts of one
  subject whose ``numbers`` or ``denies`` fields (read once at extraction) differ (the trust
  pass, dedup and the nightly contradiction pass all ask it).
- **Words and numbers**: ``tokens(text)`` — the one tokenizer (a word or a number as
  written: "9:30", "1,200", "us-east-1", "node.js", "c++", "O'Brien"); ``numbers(text)``
  and ``NUMBER_WORDS``. Everyone who splits text into words calls it and filters the result.
- **Calendar words and dates** live beside this module in ``retrieval.dates``.
- **Verb agreement**: ``third_person(verb)`` — "prefer" → "prefers", "don't" → "doesn't",
  from lemminflect's English lexicon, not a suffix table of our own. ``lexicon()`` is
  that library, imported without the spaCy hook its package adds (everyone asks it).
- **Sentiment**: ``sentiment(text)`` — one classifier for a fact's sentiment (extraction)
  and the conversation's (ranking's ``sentiment_match``), so the two can agree.
- **Injected blocks**: ``strip_injected(text, header)`` — memory the agent was given is
  never extracted again, whether the block kept its markers or was pasted bare.
"""

from __future__ import annotations

import importlib
import importlib.abc
import re
import sys
import threading
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from retrieval.intent import HENCEFORTH
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
# The English stop words of LanceDB's full-text index (its tokenizer's list, NLTK's: "when",
# "did", "just" and "s" are stop words there, "could" and "would" are not): the in-process
# BM25 index drops the same words, so both find the same rows (``retrieval.read_index.analyze``).
FULL_TEXT_STOPWORDS = frozenset("""
i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he
him his himself she she's her hers herself it it's its itself they them their theirs themselves what
which who whom this that that'll these those am is are was were be been being have has had having do
does did doing a an the and but if or because as until while of at by for with about against between
into through during before after above below to from up down in out on off over under again further
then once here there when where why how all any both each few more most other some such no nor not
only own same so than too very s t can will just don don't should should've now d ll m o re ve y ain
aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't
ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren
weren't won won't wouldn wouldn't
""".split())

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


def opposed(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Two facts of one subject that differ in a number or in polarity, by their fields
    (``numbers``, ``denies``: read once at extraction), not their wording. A row without
    them (a summary line) opposes nothing."""
    if a.get("denies") is None or b.get("denies") is None:
        return False
    numbers_a, numbers_b = (frozenset(() if x.get("numbers") is None else x["numbers"]) for x in (a, b))
    if numbers_a and numbers_b and numbers_a != numbers_b:
        return True
    return bool(a["denies"]) != bool(b["denies"])


# --- change ---------------------------------------------------------------------------
#
# Words by which a statement says a value changed, as lemmas the parse gives (the
# structure step, ``lib/extraction/structure.py``, reads them on the dependency tree):
# "switched to", "moved from A to B", "now", "no longer", "from now on", "instead of".

# Verbs whose meaning is a change of value: "Aaron switched to Neovim", "the standup got moved to 9:30".
CHANGE_VERBS = frozenset("""
switch move change migrate transition ditch drop replace swap convert upgrade downgrade relocate
promote transfer reschedule shift trade bump raise lower increase decrease reduce retire resign quit
""".split())
# Verbs that say a value changed when told as done: "joined the data team", "has stopped
# drinking coffee"; in the present they tell a plan or a habit ("school starts next week").
DONE_CHANGE_VERBS = frozenset("join leave start stop close cancel sell register enrol enroll".split())
# A verb with a particle or preposition that says a value changed: "gave up milk", "went
# with Postgres", "it went up to $49", "stepped down as lead", "signed up with Mint".
CHANGE_PHRASAL = frozenset({
    ("give", "up"), ("go", "with"), ("go", "up"), ("go", "down"), ("step", "down"), ("step", "up"),
    ("sign", "up"), ("switch", "over"), ("move", "over"), ("trade", "in"), ("settle", "on"), ("opt", "for"),
    ("take", "over"), ("take", "up"),
    # Someone else set the value: "the landlord put the rent up to R10,200", "they brought
    # the deadline forward", "cut back to two coffees".
    ("put", "up"), ("put", "down"), ("bring", "forward"), ("bring", "down"), ("cut", "back"), ("cut", "down"),
    ("push", "up"),
})
# Verbs that give something a value and leave it so: "set the limit to 2 hours" (said in
# the past, still the current value; unlike "lived in Porto", not history).
SETTING_VERBS = frozenset("set put turn".split())
# Adverbs and words that mark the statement as the new state: "Aaron now works at Stripe",
# "doesn't drink coffee anymore", "these days", "nowadays", "instead".
CHANGE_ADVERBS = frozenset("now anymore nowadays instead".split())
# Changes that begin something ("started pottery", "joined a club", "signed up for a
# class"): a new value beside the others unless it names the slot it fills, or the
# relation holds one value at a time. (The structure step's cues are lemmas.)
BEGINNING_CUES = frozenset({"start", "join", "sign up", "take up", "begin", "enrol", "enroll", "register"})
# Changes that end something ("quit Blokhaus", "closed my Monzo account", "gave up
# coffee"): their value is the old one, and they retire the fact that holds it.
ENDING_CUES = frozenset({"quit", "leave", "stop", "close", "cancel", "sell", "drop", "ditch", "give up",
                         "retire", "resign", "step down", "trade in"})
CHANGE_PHRASES = re.compile(
    r"\b(?:no longer|any more|" + HENCEFORTH + r"|these days|starting (?:today|now|this|next|on|from)|"
    r"(?:is|are|am|'s|'m|'re) (?:now )?(?:down|up|back) to|(?:go|goes|going|gone|went) over to|"
    r"from (?:today|this \w+|next \w+) on|not \w+ (?:anymore|any longer)|as of (?:today|now|(?:this|next|last|the) \w+|\d[\w/.-]*))\b",
    re.IGNORECASE)
# Nouns for people: "Kwame's brother" is someone else, where "Kwame's phone" is Kwame's.
PEOPLE_NOUNS = frozenset("""
wife husband partner spouse friend mom mum mother dad father parent sister brother sibling kid child son
daughter grandma grandmother grandpa grandfather aunt uncle cousin niece nephew neighbor neighbour mentor
manager boss colleague coworker teammate client teacher doctor landlord roommate girlfriend boyfriend fiance
fiancee baby family lead pm intern flatmate housemate coach trainer therapist dentist tutor nanny babysitter
supervisor advisor mentee ceo cto cofounder
""".split())
# A verb whose object is a change only thought about: "thinking about switching to Neovim",
# "we might move to Berlin", "planning to switch". Such a statement never retires anything.
CONSIDERING_VERBS = frozenset("""
think consider plan want hope wonder debate weigh contemplate mull dream intend
""".split())
MODAL_AUXILIARIES = frozenset("might may could would should must".split())
# A change that is not meant to last: "this week only", "just for today", "temporarily".
TEMPORARY = re.compile(
    r"\b(?:temporarily|for now|for the time being|just (?:for )?(?:this|today|tonight)|this (?:week|time|once) only|"
    r"only (?:this|for this|for today|today|tonight)|for (?:this|one) (?:week|day|time|session) only)\b", re.IGNORECASE)


# A question about what held before a change: "what did I use before Neovim?", "where did
# I live previously?". Such a query also searches the superseded items.
ASKS_ABOUT_BEFORE = re.compile(
    r"\b(?:before|used to|previous(?:ly)?|formerly|former|originally|at first|earlier|back then|"
    r"no longer|any ?more|old|prior to|until|instead of|switch(?:ed)? from|mov(?:e|ed) from|changed from)\b",
    re.IGNORECASE)


def asks_about_before(text: str) -> bool:
    return ASKS_ABOUT_BEFORE.search(text) is not None


def says_changed(text: str) -> bool:
    """The wording marks a new state ("from now on", "no longer", "these days") without a
    change verb; the structure step reads the verbs and adverbs on the parse."""
    return CHANGE_PHRASES.search(text) is not None


def temporary(text: str) -> bool:
    return TEMPORARY.search(text) is not None


# --- names and values -------------------------------------------------------------------

# --- words and numbers -------------------------------------------------------------------
#
# The one tokenizer. A token is a run of letters and digits, joined inside by an apostrophe,
# a hyphen, a dot, "&" or "_" ("O'Brien", "us-east-1", "node.js", "AT&T"), between digits also
# by ",", ":" or "/" ("1,200", "9:30", "10/12/2026"), and may end in "+" or "#" ("c++", "c#").
# Punctuation at either end is not part of it ("done." → "done"), and a slash between words
# separates them ("and/or"). Everyone who splits text into words calls ``tokens`` (or
# ``TOKEN.finditer`` for the spans) and filters what it needs: lower case, letters only…
_ALNUM = r"[^\W_]"
TOKEN = re.compile(rf"{_ALNUM}+(?:(?:['’.&_-]|(?<=\d)[,:/](?=\d)){_ALNUM}+)*[+#]*")


def tokens(text: str | None) -> list[str]:
    """The words and numbers of ``text`` as written, in order (see ``TOKEN``)."""
    return TOKEN.findall(text or "")


# A number as written: digits, with their inner separators ("3.5", "1,200", "9:30").
NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3,
}


def numbers(text: str | None) -> frozenset[str]:
    """The numbers written in digits in ``text`` ("$1,200 by 9:30" → {"1,200", "9:30"}),
    those inside a name too ("TP6104"): what two statements of one value compare."""
    return frozenset(NUMBER.findall(text or ""))



def normal_phrase(text: str | None) -> str:
    """A name, value or query phrase in the one form they are compared and looked up in:
    lower case, words in order, no article, possessive or trailing punctuation
    ("the Subaru's 9:30 slot" → "subaru 9:30 slot"). The graph keys entities by it and
    dual search looks a query's words up by it, so the two always agree."""
    words = (w.lower().removesuffix("'s").removesuffix("’s").strip(".'’:") for w in tokens(text))
    return " ".join(w for w in words if w and w not in ("a", "an", "the"))


def value_words(value: str | None) -> frozenset[str]:
    """A value's content words, in their compared form ("the 9:30 slot" → {"9:30", "slot"})."""
    return frozenset(w for w in normal_phrase(value).split() if w not in STOPWORDS)


def written_words(text: str | None) -> list[str]:
    """``text``'s content words in their compared form (``value_words``), where a word
    written with a capital inside a sentence (a name: "a bag from Black Diamond") keeps it,
    so that a reader can tell "black" the colour from "Black" the brand without the text."""
    found: set[str] = set()
    before = None  # where the previous token ended: a sentence starts where ".", "!" or "?" lies between
    for m in TOKEN.finditer(text or ""):
        token, gap = m.group(), "." if before is None else text[before:m.start()]
        before = m.end()
        word = token.removesuffix("'s").removesuffix("’s").strip(".'’:")
        if not word or word.lower() in STOPWORDS or word.lower() in ("a", "an", "the"):
            continue
        # Capitalized mid-sentence (and not the pronoun I) reads as a proper noun.
        found.add(word if word[:1].isupper() and not any(c in ".!?" for c in gap) else word.lower())
    return sorted(found)


def different_values(a: str | None, b: str | None) -> bool:
    """Two values that are not one: each has a word the other lacks ("Sundays" and
    "Saturdays"), where "Denver" and "Denver, Colorado" only refine one another."""
    wa, wb = value_words(a), value_words(b)
    return bool(wa and wb) and not (wa <= wb or wb <= wa)


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


def strip_injected(text: str, header: str) -> str:
    """``text`` without any memory block an agent was given: the marked block
    (``INJECTION_START`` … ``INJECTION_END``, replaced by a line break), or its bare form
    pasted without the markers — the ``header`` line (``[injection] header``) and the
    ``~ `` lines under it."""
    bare = re.compile(rf"^[ \t]*{re.escape(header.strip())}[ \t]*\n(?:[ \t]*~[^\n]*(?:\n|\Z))*", re.MULTILINE)
    return bare.sub("", _MARKED_BLOCK.sub("\n", text))


# --- verb agreement ---------------------------------------------------------------------

# "be" is the one verb whose non-base forms still agree with their subject ("I am" →
# "she is", "we were" → "she was"); every other form that is not the base stays.
_BE = {"am": "is", "are": "is", "were": "was", "aren't": "isn't", "weren't": "wasn't"}


class _Refusing(importlib.abc.MetaPathFinder):
    """Refuses to import ``names`` (and their submodules) in the one thread that is
    importing something else."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.thread = threading.get_ident()
        self.names = names

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.split(".")[0] in self.names and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"{name} is refused while another module is imported", name=name)
        return None


def import_refusing(module: str, *refused: str) -> ModuleType:
    """``module``, imported (once per process) while ``refused`` cannot be: for a package
    whose own ``except ImportError`` path does without an optional import that costs
    seconds and is not used here. A refused package imported later, on its own, is
    unaffected; one already imported stays."""
    found = sys.modules.get(module)
    if found is None:
        guard = _Refusing(tuple(name for name in refused if name not in sys.modules))
        sys.meta_path.insert(0, guard)
        try:
            found = importlib.import_module(module)
        finally:
            sys.meta_path.remove(guard)
    return found


def lexicon() -> ModuleType:
    """lemminflect (its ``getAllLemmas``, ``getLemma``, ``getInflection``,
    ``getAllInflections``, ``getAllInflectionsOOV``), imported when first asked.

    Its package ``__init__`` imports spaCy, if installed, only to add ``Token._.lemma`` and
    ``Token._.inflect``, which nothing here uses; spaCy brings thinc and thinc brings torch:
    4 s in a process that only wanted a dictionary lookup (an agent's ``inject``, a hook).
    So the import runs with spaCy refused (lemminflect's own ``except ImportError`` path);
    a process that loads spaCy for extraction still has it, unaffected."""
    return import_refusing("lemminflect", "spacy")


def literal_pattern(pattern: str) -> bool:
    """A rule's trigger pattern matched as written (".env", "/etc/hosts", "-f", "~/.ssh"),
    not as a word with its inflections."""
    return pattern[:1] in ".-/~" or "." in pattern or "/" in pattern


def trigger_word(pattern: str) -> str:
    """The word a (non-literal) trigger pattern is matched as: its normal phrase, lower case."""
    low = pattern.lower()
    return normal_phrase(low) or low


def inflections(word: str) -> set[str]:
    """``word`` and its inflections from lemminflect's lexicon (commit → commits,
    committed, committing; a word it does not know, "repo", by its rules for nouns and
    verbs)."""
    words = lexicon()
    found = words.getAllInflections(word) or {**words.getAllInflectionsOOV(word, "NOUN"),
                                              **words.getAllInflectionsOOV(word, "VERB")}
    return {word, *(form.lower() for forms_ in found.values() for form in forms_)}


def third_person(verb: str) -> str:
    """``verb`` as it reads after "she" or a name: "prefer" → "prefers", "try" → "tries",
    "do" → "does", "don't" → "doesn't", "am" → "is". A form that is not the base ("went",
    "used", "rebased") is returned as it is: it already agrees. Unknown verbs ("rebase",
    "ssh") are inflected by lemminflect's rules for words outside its lexicon."""
    words = lexicon()
    getAllLemmas, getInflection, getLemma = words.getAllLemmas, words.getInflection, words.getLemma

    low = verb.lower()
    if low in _BE:
        return _cased(verb, _BE[low])
    stem, negation = (low[:-3], "n't") if low.endswith("n't") else (low, "")
    if not stem.isalpha():  # "should've", "o'clock"
        return verb
    known = getAllLemmas(stem, "VERB").get("VERB", ())
    # A word lemminflect does not know as a verb is inflected by its rules ("rebase"),
    # unless it is a function word ("to", "who"): those are never verbs.
    guessed = () if negation or stem in FUNCTION_WORDS else getLemma(stem, "VERB")
    if stem not in (known or guessed):
        return verb
    return _cased(verb, getInflection(stem, "VBZ")[0] + negation)


def _cased(original: str, form: str) -> str:
    """``form`` with ``original``'s capitals where the two spell the same."""
    shared = len(original) if form.startswith(original.lower()) else 0
    if shared:
        return original + form[shared:]
    return form[:1].upper() + form[1:] if original[:1].isupper() else form


# --- the same words -------------------------------------------------------------------------

_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = re.compile(r"^[\s\"'`.,;:!?-]+|[\s\"'`.,;:!?-]+$")


def normalize(content: str) -> str:
    """Lower case, one space, no punctuation at either end: what makes two wordings the
    same text (dedup's content hash, lessons' duplicates)."""
    return _EDGE_PUNCT.sub("", _SPACE.sub(" ", content.lower())).strip()
