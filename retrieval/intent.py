"""What a turn asks of the memory: the one home for intent cues.

Three readers ask the same questions of a user's words, so the words live here once
(``tests/test_one_home.py`` fails on a second copy):

* the signal scan (``retrieval.agent.signals``): does this turn go to the pipeline now?
* the offline extractor (``memory_assets.lib.extraction``): is this clause a request to
  keep something, a correction of what was said, or a standing rule?
* the query rewrite (``retrieval.agent.rewrite``): which words ask the memory ("do you
  remember…") rather than name what is asked?

The cues, each a regular expression matched case-insensitively:

- **Keep**: ``ASKS_TO_KEEP`` — a request to keep something ("remember that…", "don't
  forget…", "keep in mind…", "note that…", "make a note", "remind me…"), only where a
  request starts: at the start of a sentence or after "please", "and", "so"… "I remembered
  the keys" and "I remember when we met" tell a story, "do you remember…?" asks the memory,
  and "remember when…" reminisces; none of them asks to keep anything. ``KEEP_PREFIX``: the
  asking words at the start of a clause, which are not part of the fact; ``REMIND_ME``:
  "remind me to…", a wish for later.
- **Recall**: ``ASKS_TO_RECALL`` — the words by which a question asks the memory ("do you
  remember", "can you tell me", "remind me of"): no part of what is asked.
- **Correction**: ``CORRECTION`` — the user takes back what was said ("Actually, …" opening
  a sentence, "no, I meant…", "that's wrong", "correction:", "scratch that");
  ``TURN_REVERSAL`` — a turn that opens by taking back the one before; ``REVERSAL`` — a
  statement that changes something said earlier ("switching to", "after all", ", not the
  17th"); ``CORRECTION_KIND`` — the extractor's reading of a clause as a correction.
- **Standing rule**: ``RULE`` — a standing instruction or habit ("always", "never" but not
  "never mind", "from now on", "don't ever"); ``STANDING`` — what makes a request last
  beyond the task at hand (those, "whenever", "every time", "by default", reminders);
  ``HENCEFORTH`` / ``IN_FUTURE`` — the phrases that open one ("from now on, …").

- **About someone**: ``ABOUT_SOMEONE`` — words by which a question asks about a person as a
  whole ("What attributes describe John?", "What is Aaron's personality like?"): the
  ranking reads such a question as about the person, with no topic of its own
  (``retrieval.agent.retrieve.topic_of``).

Changing a cue the offline extractor reads changes what gets extracted: bump
``OfflineExtractor.version`` with it. Agent-safe: this module imports nothing of ours.
"""

from __future__ import annotations

import re

_I = re.IGNORECASE

# --- standing rules ---------------------------------------------------------------------

# From this turn on: "from now on", "going forward", "from here on out".
HENCEFORTH = r"from\s+now\s+on|going\s+forward|from\s+here\s+on(?:\s+out)?"
# "In the future, …" opens a rule only at the start of an instruction; mid-sentence it is
# a plan ("I'd like to visit Japan in the future").
IN_FUTURE = r"in\s+(?:the\s+)?future"

RULE = re.compile(r"\b(?:always|never(?!\s+mind\b)|" + HENCEFORTH + r"|(?:don'?t|do\s+not)\s+ever)\b", _I)
STANDING = re.compile(r"\b(?:always|never|whenever|every(?:\s+\w+)?|each\s+time|" + HENCEFORTH + "|" + IN_FUTURE
                      + r"|remind(?:er)?s?|by\s+default)\b", _I)

# --- asking about someone as a whole -----------------------------------------------------

ABOUT_SOMEONE = frozenset("""
describe described description attributes attribute traits trait personality character qualities quality
characteristics know known tell overview background profile
""".split())

# --- asking the memory to keep something --------------------------------------------------

# Where a request starts: the text's or a sentence's start, or after a softener.
REQUEST_START = r"(?:^|[.!?;:\n]\s*|,\s*|\b(?:please|pls|and|also|just|so|oh|ok(?:ay)?|hey)\s+)"
_FORGET = r"(?:don'?t|do\s+not|never)\s+forget"
ASKS_TO_KEEP = re.compile(
    REQUEST_START + r"(?:remember\b(?!\s+when\b)|" + _FORGET + r"\b|keep\s+in\s+mind\b|"
    r"make\s+a\s+note\b|note\s+(?:that|this)\b|note\s*:|remind\s+me\b)"
    r"|\b(?:want|need)\s+you\s+to\s+remember\b|\b(?:can|could|will|would)\s+you\s+(?:please\s+)?remember\s+(?:that|this|to)\b"
    r"|\bfor\s+future\s+reference\b", _I)
KEEP_PREFIX = re.compile(
    r"^(?:please\s+)?(?:remember|" + _FORGET + r"|keep\s+in\s+mind|note|make\s+a\s+note)"
    r"(?:\s+(?:this|that))?[:,]?\s+(?:that\s+)?", _I)
REMIND_ME = re.compile(r"^(?:please\s+)?remind\s+(?:me|us)\s+", _I)

# --- asking the memory ----------------------------------------------------------------------

ASKS_TO_RECALL = re.compile(
    r"\b(?:do|did|can|could|would)\s+you\s+(?:still\s+)?(?:remember|recall|tell\s+me|remind\s+me)"
    r"(?:\s+of|\s+about|\s+if|\s+whether)?\b|\bremind\s+me(?:\s+of|\s+about)?\b", _I)

# --- corrections ----------------------------------------------------------------------------

# Taking back what was said, in so many words.
_TAKE_BACK = r"scratch\s+that|I\s+was\s+wrong"
CORRECTION = re.compile(
    r"(?:^|[.!?;\n]\s*)(?:(?:no|nope|oh|wait|hmm+|um+|sorry)[,.!]*\s+)*actually\b"
    r"|\b(?:no|sorry|oops|wait)[,.!]*\s+I\s+meant\b|\bwhat\s+I\s+meant\s+(?:was|is)\b|\bI\s+meant\s+to\s+say\b"
    r"|\bthat(?:'s|\s+is|\s+was)\s+(?:wrong|incorrect|not\s+(?:right|correct|true|what\s+I\s+(?:said|meant)))\b"
    r"|\bcorrection\s*:|\b(?:" + _TAKE_BACK + r")\b|\bI\s+misspoke\b", _I)
# A turn that opens by taking back what was just said.
TURN_REVERSAL = re.compile(r"^\W*(?:(?:hmm+|oh|wait|um+|uh)[,.!]*\s+)*(?:actually,?\s+no|no,?\s+actually|"
                           r"scratch\s+that|change\s+of\s+plans?|correction|wait,?\s+no)\b", _I)
# A statement that changes something said earlier in the session ("switching to a medium
# roast", "start on April 15 now, not the 17th", "soccer moved to Field 5").
REVERSAL = re.compile(
    r"\b(?:after all|instead|any ?more|no longer|switch(?:ed|ing)? (?:to|from|over)|changed? (?:my|our) mind|"
    r"changed? (?:it|that|this) to|mov(?:ed|es|ing) to|scratch\s+that)\b|^actually\b|,\s*not (?:the )?\w+|\bnot the \w+", _I)
# The extractor's first reading of a clause's kind: a correction.
CORRECTION_KIND = re.compile(
    r"^(?:no[,.!]?\s+)?actually\b|\b(?:no longer|not anymore|any ?more|changed (?:\w+ )?mind|change of plans?|"
    r"switch(?:ed|ing)? (?:from|to)|" + _TAKE_BACK + r"|correction|now prefer|prefer \w+ now|"
    r"not \w+ but)\b|^no,\s", _I)
