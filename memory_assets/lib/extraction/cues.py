"""The offline extractor's cues for what a clause says, as data: its kind (decision,
correction, preference, procedure…), its strength, requests to the assistant, untrusted
text and assistant confirmations, categories and tags.

``rules.py`` holds how text is split and whom a clause is about; ``offline.py`` and its
helpers hold the procedure. Changing a table here changes what gets extracted, so bump
``OfflineExtractor.version`` with it. Patterns are matched case-insensitively.
"""

from __future__ import annotations

import re

from memory_assets.lib.extraction.rules import IRREGULAR_PAST, phrases as _any
from retrieval.dates import MONTHS, WEEKDAYS
from retrieval.intent import (ASKS_TO_KEEP, CORRECTION_KIND, HENCEFORTH, IN_FUTURE, KEEP_PREFIX,  # noqa: F401
                              REMIND_ME, REVERSAL, STANDING, TURN_REVERSAL)  # (read as C.*: one home for intent cues)
from retrieval.text import EXTRACTION_STOPWORDS, NEGATION, NOT_NAMES, NUMBER

_I = re.IGNORECASE
_WEEKDAYS = "|".join(WEEKDAYS)  # regex alternations of retrieval.text's calendar words
_MONTHS = "|".join(MONTHS)


# --- What kind of fact ---------------------------------------------------------

# Checked in order; the first that matches names the kind.
KIND_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("correction", CORRECTION_KIND),
    ("procedure", re.compile(
        r"\b(?:always (?:run|use|check|do|start|make sure|test|lint|format)|before (?:you |we |merging|"
        r"deploying|committing|pushing|release|each|every)|after (?:merging|deploying|each|every)|"
        r"first,? .* then|step \d|steps?:|workflow|procedure|whenever|make sure (?:to|you))\b", _I)),
    ("negative", re.compile(
        r"\b(?:never|don't|do not|doesn't|does not|avoid|stop|no more|can't stand|won't|will not)\b"
        r"(?!\s+(?:know|think|thought|expected|imagined|realized|believe|mind|worry|get me wrong|forget|wait|"
        r"have|even|really|stop|quit|give up|miss|gets? old|fails?|ceases?))", _I)),
    ("decision", _any(r"decided", r"decide to", r"we'll go with", r"going with", r"go with", r"chose",
                      r"settled on", r"opted", r"made (?:the|a) (?:decision|call)", r"picked", r"agreed to")),
    # Weaker signs of a reversal, checked after a decision ("decided on X instead of Y").
    ("correction", re.compile(r"\b(?:instead of|rather than)\b|\b(?:is|are|was|be)\b[^,]*,\s*not (?:the )?\w+(?: \w+)?[.!]*$", _I)),
    ("commitment", re.compile(
        r"\b(?:will|gonna|wanna|going to(?!\s+(?:the|a|an|my|our|his|her|their|this|that|these|those|school|work|church|bed|"
        r"be\s+(?:in|at|on|out|away|off))\b)|plan(?:s|ning)? to|need(?:s)? to|have to|has to|intend(?:s)? to|"
        r"promised?|about to|next (?:week|month|year|weekend|time)|tomorrow|this (?:weekend|summer|fall|winter|spring)|"
        r"must|should|hoping to|hope to|wants? to)\b|'ll\b", _I)),
    ("preference", _any(r"prefer(?:s|red)?", r"likes?", r"loves?", r"hates?", r"favou?rite", r"enjoys?",
                        r"dislikes?", r"rather", r"(?:big |huge )?fan of", r"(?:i'm|i am|really|so|super|totally|kind of|kinda|sort of|been|getting) into",
                        r"passionate about", r"can't stand", r"obsessed with", r"adores?", r"always wants?",
                        r"wants? (?:a|an|the|some)", r"(?:i|we) use")),
]
# The value a reversal says no longer holds: "not the 17th", "not 500".
NEGATED_VALUE = re.compile(r"\bnot (?:the |at |on |in )?(\w+)", _I)

# Where a correction names what it replaces: "switch from X to Y", "X instead of Y", "no longer X".
SUPERSEDES = [re.compile(p, _I) for p in (
    r"\bfrom (.+?) to\b", r"\binstead of (.+?)(?:[,.;!]|$)", r"\brather than (.+?)(?:[,.;!]|$)",
    r"\bno longer (?:want|use|like|drink|eat|need|prefer|do|have|go to|work (?:on|at|with)|play|take)?\s*(.+?)(?:[,.;!]|$)",
    r"\bnot (.+?) any ?more\b", r",\s*not (.+?)(?:[,.;!]|$)", r"\bchanged (?:my|our) mind (?:about|on) (.+?)(?:[,.;!]|$)",
    r"\bnot (\w+(?: \w+)?),? but\b",
)]
# A reversal with no old value named: the thing being changed ("my favourite colour is…").
SUPERSEDES_TOPIC = [re.compile(p, _I) for p in (
    r"\b(?:my|our|the) ((?:\w+ ){0,2}\w+) (?:is|are|was|will be|should be)\b",
    r"\bprefer(?:s)? (?:\w+ )?(\w+)\b",
)]
# A decision that names what it replaces ("Postgres instead of MySQL") also supersedes.
REPLACES = _any(r"instead of", r"rather than")
# A change told as the lead-in to something else, often a question: "Since switching to
# OUTsurance, how do I…", "Since the move to Galway I have no idea…", "Now that I've joined
# the platform team…". It still says the value changed: the extractor keeps it as a fact.
CHANGE_LEAD = re.compile(
    r"^(?:ever\s+|so\s+|and\s+)?(?:since|after|now\s+that)\s+(?:(?:i|we)(?:'ve|\s+have)?\s+)?"
    r"(?:(?P<verb>switch|mov|relocat|chang|join|start|transferr?|upgrad|sign|leav|quit|go)(?:ed|ing|e|ped|ting)?"
    r"|(?:the|my|our)\s+(?P<noun>move|switch|change|transfer|relocation|upgrade))\s+"
    r"(?P<rest>(?:(?:over|up)\s+)?(?P<prep>(?:to|from|with|at|for)\s+)?(?!(?:i|i'm|we|you|he|she|they|it)\b)"
    r"[^,?;.!]+?)\s*(?:[,?;.!]|$|(?=\s(?:i|i'm|i've|we|we're|you|he|she|they)\b))", _I)
# The lead-ins whose verb takes its new value as an object ("since joining Acme"); the
# others name it after a preposition ("since moving to Galway", not "since the move I'm…").
CHANGE_LEAD_OBJECT = frozenset({"join", "start", "leav", "quit", "go"})
# "Going" takes a state, not a place: "since going freelance" (not "since going to the gym").
CHANGE_LEAD_STATE = frozenset({"go"})
# A state told on the way to a question, "now that" it holds: "Now that my mail lives in
# Proton, how do I…", "Now that we're on Linear, …".
NOW_THAT_LEAD = re.compile(r"^(?:so\s+|and\s+|but\s+)?now\s+that\s+(?P<clause>[^,?;.!]+?)\s*(?:[,?;.!]|$)", _I)
# A first-person reason on the way to a question or a request: "since I'm vegetarian, what
# should I cook?", "as we're on Postgres 16, …" (the clause is a fact of its own).
REASON_LEAD = re.compile(r"^(?:so\s+|and\s+|but\s+)?(?:since|as|because|cause|cuz|given\s+that|seeing\s+as)\s+"
                         r"(?P<clause>(?:I|I'm|Im|I've|I'd|we|we're|we've|my|our)\b[^,?;.!]+?)\s*,\s*(?=\S)", _I)
# A fact put up for judgement: "is it weird that I still use an iPhone SE?", "do you think
# it's bad that we deploy on Fridays?" (the fact holds either way).
JUDGED_FACT = re.compile(r"^(?:so\s+|and\s+|but\s+)?(?:is\s+it|isn'?t\s+it|would\s+it\s+be|do\s+you\s+think\s+it'?s|"
                         r"it'?s)\s+(?:\w+\s+){0,2}?(?:weird|odd|strange|normal|ok|okay|bad|fine|crazy|silly|dumb|wrong|"
                         r"unusual|common|lame|embarrassing)\s+that\s+(?P<clause>(?:I|I'm|I've|we|we're|my|our)\b[^?]+?)\s*[?!.]*$", _I)
# What the speaker says of their own words, not a fact: "as I said", "since I mentioned it".
ASIDE = re.compile(r"^(?:I|we)\s+(?:said|say|mentioned|told|think|thought|guess|know|knew|see|saw|mean|meant|"
                   r"understand|recall|remember|wrote|asked|promised)\b", _I)
# The first days of a job told in passing: "First week at Bosch done!", "my first day with
# the Halden team": the speaker works there now.
FIRST_DAYS_AT = re.compile(
    r"^(?i:(?:(?:my|the)\s+)?(?:first|second|1st|2nd)\s+(?:full\s+)?(?:day|week|month|shift|sprint)\s+(?:at|with)\s+)"
    r"(?P<place>(?:the\s+)?[A-Z][\w&.'-]*(?:\s+[A-Z][\w&.'-]*)*(?:\s+team)?)", re.UNICODE)
# A fragment that says where a value went, with no verb: "Back to five days a week as of
# this month", "Down to two coffees a day".
BACK_TO = re.compile(r"^(?:back|down)\s+to\s+\S", _I)
# A change told as done, by the verbs issue 29 lists and their kin (the adverbs and
# phrases, "now", "these days", "no longer", are ``retrieval.text``'s): such a sentence
# said in the first person always yields a fact, even when no clause rule reads its
# shape (``change_statements``).
CHANGE_DONE = re.compile(
    r"\b(?:switched|moved|left|joined|started|stopped|dropped|upgraded|downgraded|relocated|closed|"
    r"cancel(?:l)?ed|quit|stepped down|gave up|given up|went (?:up|down|with)|signed up|traded|replaced|swapped|"
    r"ditched|migrated|transferred|retired|resigned|turned into|became|got into)\b", _I)
# The past tense of each lead-in's stem or noun: "switching" → "switched", "the move" → "moved".
CHANGE_LEAD_PAST = {"switch": "switched", "mov": "moved", "relocat": "relocated", "chang": "changed", "join": "joined",
                    "start": "started", "transfer": "transferred", "transferr": "transferred", "upgrad": "upgraded",
                    "sign": "signed", "leav": "left", "quit": "quit", "move": "moved", "change": "changed",
                    "relocation": "relocated", "upgrade": "upgraded", "go": "went"}
# Trailing words that are not part of the replaced thing ("MySQL for the billing service").
SUPERSEDES_TRIM = re.compile(r"\s+(?:for|in|on|at|because|since|to|with|from|when|as|so)\b.*$", _I)

# Past-tense happenings with a time anchor (or an unmistakable event verb) are events.
TIME_ANCHOR = _any(
    r"yesterday", r"last (?:week|weekend|month|year|night|time|summer|fall|winter|spring|" + _WEEKDAYS + ")",
    r"this (?:morning|afternoon|evening|past week)",
    r"(?:a|one|two|three|few|couple of|\d+) (?:days?|weeks?|months?|years?) ago", r"ago", r"recently",
    r"the other day", r"earlier (?:today|this week)", r"on (?:" + _WEEKDAYS + ")",
    r"in (?:19|20)\d\d", r"today", r"tonight", r"just", r"(?:this|next) (?:week|month|year|weekend)",
    r"(?:in|last|this) (?:" + _MONTHS + ")",
)
EVENT_VERB = _any(
    r"went", r"attended", r"visited", r"joined", r"signed", r"started", r"finished", r"met", r"moved",
    r"took", r"traveled", r"travelled", r"got (?:married|engaged|promoted|back|a|an|my|some|into|to)", r"had (?:a|an|my|our|the)",
    r"won", r"launched", r"adopted", r"graduated", r"bought", r"ran", r"hosted", r"organized", r"played",
    r"performed", r"celebrated", r"completed", r"received", r"volunteered", r"competed", r"scored",
    r"painted", r"wrote", r"published", r"watched", r"saw", r"made", r"tried", r"spent", r"lost",
    r"found", r"returned", r"came back", r"flew", r"drove", r"hiked", r"camped", r"baked", r"cooked",
    r"built", r"created", r"released", r"gave", r"taught", r"learned", r"quit", r"left", r"passed",
)
PAST_TENSE = re.compile(r"\b(?:was|were|had|did|[a-z]{3,}ed|" + "|".join(sorted(IRREGULAR_PAST)) + r")\b", _I)

# --- Strength, sentiment and flags -----------------------------------------------

INFERRED = _any(r"probably", r"maybe", r"perhaps", r"possibly", r"i think", r"i guess", r"i suppose",
                r"might", r"may be", r"not sure", r"i believe", r"i reckon", r"could be")
IMPLIED = _any(r"kind of", r"kinda", r"sort of", r"sorta", r"seems?", r"somewhat", r"pretty sure",
               r"i feel like", r"apparently", r"supposedly", r"mostly", r"more or less")
# Sentiment is ``retrieval.text.sentiment``: one classifier for facts and for the conversation.

ACTION = re.compile(
    r"\b(?:due|overdue|need(?:s)? to|must|deadline|to-?do|by (?:" + _WEEKDAYS + r"|tomorrow|tonight|end of)|"
    r"expires?|expiring|remind me)\b|\bhaven'?t\b.*\byet\b", _I)
# --- Talking to an assistant ------------------------------------------------------

# A standing instruction to the assistant ("always run…", "never push…") is a rule to keep.
RULE_LEAD = re.compile(r"^(?:(?:" + HENCEFORTH + "|" + IN_FUTURE + r"),?\s+)?(?:actually,?\s+)?"
                       r"(?:(?:please|pls|plz|just|also|then)[\s,]+)*", _I)
RULE_START = re.compile(
    RULE_LEAD.pattern + r"(?:always|never|don't|do not|avoid|make sure|stop|keep(?=[^,.;]*\d)|"
    r"switch (?:from|to)|(?:use|prefer|stick (?:with|to)|go with)\b.*\b(?:instead of|rather than|over|not)\b)\b", _I)
NEGATIVE_RULE = re.compile(r"^(?:never|don't|do not|avoid|stop|not to|to never)\b", _I)
# A one-off request ("book it", "add the index", "send me three options") is a task for
# this session, not something to remember.
TASK_REQUEST = re.compile(
    r"^(?:(?:please|just|also|and|then|now|ok|okay)[\s,]+)*(?:hold|send|book|keep|put|take|make|add|set|find|check|look|"
    r"show|tell|give|get|create|write|fix|run|open|delete|update|schedule|cancel|move|pull|push|rebase|dig|"
    r"draft|read|call|email|text|buy|order|reserve|change|remove|rename|install|deploy|merge|commit|review|tag|"
    r"ping|ask|help|start|finish|do|print|list|search|fetch|compare|summarize|explain|translate|plan|pick|"
    r"choose|sort|organize|clean|implement|refactor|document|retry|try|go|bump|revert|rotate|copy|paste|"
    r"upload|download|share|post|reply|respond|message|invite|assign|close|mark|block|re-?run|return|drop|leave|"
    r"cap|opt|route|wrap|link|log|convert|flag|skip|raise|lower|bump|split|rerun|unblock|pin|unpin)\b", _I)
# An instruction under a condition ("if it rains, just move the run to the next day",
# "before you push anything, run go vet") holds every time the condition does: a rule.
CONDITIONAL_RULE = re.compile(
    r"^(?:(?:and|so|but|also)\s+)?"
    # "if you can, book the 9am slot", "when you get a chance": politeness, not a condition.
    r"(?!(?:if|when|whenever) (?:you (?:can|could|don't mind|get a (?:chance|minute|sec)|have (?:time|a (?:sec|minute)))|"
    r"possible|that's (?:ok|okay|fine)|it's not too much)\b)"
    r"(?P<cond>(?:if|when|whenever|before|after|once|every time)\b[^,]{3,80}),\s*(?P<rest>.+)$", _I)
# A convention handed to the assistant ("use anyhow with .context()", "default to
# prefers-color-scheme"): how the work is done from now on, not a one-off task.
# A convention, or how every answer should look: "keep answers in bullet points", "make
# your replies short" (plural: the answers in general; "make the reply shorter" is this one).
CONVENTION = re.compile(r"^(?:(?:just|please|pls|plz|also)\s+)*(?:use|default to|prefer|stick (?:with|to)|"
                        r"(?:keep|make|write|give|format|put)\s+(?:your\s+|the\s+|all\s+|my\s+)?"
                        r"(?:answers|replies|responses|explanations|summaries|examples|messages)\b)", _I)
# "…for this one", "…this time": a choice for the task at hand.
ONE_OFF = re.compile(r"\b(?:this one|this time|for now|for this|right now|today|tonight|here)\b", _I)
# A confirmed offer ("Should I add tests?" "Yes.") is a one-off task unless it sets a
# standing rule or a reminder.
# (A confirmed offer with a date or a day is a commitment, kept too.)
# "Here's what I set in the runner env:", "this is what you told me, pasted from the chat":
# material handed to the assistant, not a statement about anything.
PASTE_INTRO = re.compile(r"^(?:here's|here is|here are)\b|\bpasted\b|^(?:this|that) is what\b", _I)
# "Let me talk to support first": the speaker's own next step in the chat.
LET_ME = re.compile(r"^(?:ok(?:ay)?,?\s+|hmm+,?\s+)?let me\b", _I)
# "I want a training plan", "I need a hotel too": a wish addressed to the assistant.
BARE_WANT = re.compile(r"^(?:i|we)\s+(?:(?:really|just|also|still)\s+)?(?:want|need|would like|'d like)\b", _I)
# An object pronoun with nothing it refers to in the clause ("I'll rotate it", "re-run it
# after lunch"): the fact needs its neighbour to mean anything.
PRONOUN_OBJECT = re.compile(r"\b(?!(?:is|was|are|were|be|been|that|if|when|because|and|but|so|in|on|at|for|with|"
                            r"about|from|of|to|into|by|without)\b)[a-z]+\s+(?:it|them)\b", _I)
WEEKDAY = re.compile(r"(?:" + _WEEKDAYS + r")\b", _I)
# "let's use WeasyPrint instead": a choice, kept as a decision; "let's check if pushes work
# first" is the chat's next step.
CHOICE = re.compile(r"^(?:use|go with|switch|keep|stick|stay|move|pick|choose|drop|cancel|adopt|migrate|standardi[sz]e|"
                    r"call|build|put|store|run|deploy|ship|target|require|avoid|never|always)\b", _I)
# "let's just call the API directly": in a chat with an assistant, a decision.
LETS = re.compile(r"^(?:so\s+)?let'?s\s+(?:just\s+)?", _I)
# "I'm Priya, tech lead on ledgerline": the name is the speaker's own.
SELF_INTRO = re.compile(r"^(?i:i'm|i am|my name is|this is)\s+([A-Z][a-z]+)\b,?\s*")

# --- Untrusted text and assistant confirmations --------------------------------

# Text in a tool result or a pasted page that tries to steer the model. A segment that
# contains one of these yields nothing at all: a poisoned source is not a fact source.
INJECTION = re.compile(
    r"\b(?:ignore|disregard|forget|override) (?:all |any |the |your )?(?:previous|prior|above|earlier|"
    r"system|other)?\s*(?:instructions|prompts?|rules|messages|context)\b|"
    r"\b(?:system prompt|you are now|new instructions|developer mode|jailbreak|"
    r"(?:record|remember|store|save|note|memorize|add to memory) (?:that )?(?:the )?user|"
    r"the user (?:wants|prefers|likes|is|has|asked|said|requested|needs)|"
    r"as an ai|assistant:|\bai:)", _I)
# Tool chatter that is not a fact about the world: shell prompts, test and linter
# summaries ("3 passed in 0.41s", "14 files would be left unchanged"), debug lines.
TOOL_NOISE = re.compile(
    r"^\s*[$>#]\s|\|\s*(?:grep|head|tail|sort|wc)\b|\b(?:DEBUG|TRACE)\b|\b\d+ (?:passed|failed|skipped|errors?|warnings?)\b|"
    r"\b(?:would be left unchanged|already formatted|checks? passed|files? (?:changed|reformatted)|all done)\b|"
    r"\[\s*\d+%\]|^\s*(?:GET|POST|PUT|DELETE|PATCH) https?://", _I)
# A log line's timestamp, level and logger name; what follows may still be a fact
# ("too many connections for role billing").
LOG_PREFIX = re.compile(
    r"^\s*(?:\d{4}-\d{2}-\d{2}[T ][\d:.,]+Z?\s+)?(?:\[?(?:INFO|ERROR|WARN(?:ING)?|CRITICAL|FATAL)\]?\s+)"
    r"(?:\[[\w.:-]+\]\s+)?")
# Document and message metadata ("From: …", "Subject: …", "Reporter: support-bot"): who
# sent or filed something, not a fact about the world.
DOC_METADATA = re.compile(
    r"^\s*(?:from|to|cc|bcc|reply-to|subject|date|sent|reporter|assignee|author|labels?|status|priority)\s*:", _I)
# A chat log's or search result's source label ("[10:05] ravi: …", "Result 2 (forum.example): …",
# "Comment from user 'quickfix99': …"): who said it, stripped so the statement stands alone.
SOURCE_PREFIX = re.compile(
    r"^\s*(?:\[\d{1,2}:\d{2}(?::\d{2})?\]\s*[\w.@-]+:|result\s+\d+\s*\([^)]*\):|"
    r"comment\s+(?:from|by)\s+(?:user\s+)?\S+:)\s*", _I)
# Code, data and machine output rather than prose: JSON, assignments, calls with keyword
# arguments, compiler locations ("server.go:88:2:"), SQL statements, exit codes, plan summaries.
CODE_LINE = re.compile(
    r"^\s*[{\[](?!\d{1,2}:\d{2})|\w=\S|\w\([^)]*=|^\s*[\w./-]*\.[A-Za-z]{1,5}:\d+(?::\d+)?:|"
    r"^\s*(?-i:DROP|CREATE|ALTER|SELECT|INSERT|UPDATE|DELETE|GRANT)\s|\bexit code \d+|"
    r"\b\d+ to (?:add|change|destroy)\b|"
    # Python imports, a bare call, an install command: a README's code block.
    r"^\s*(?-i:from\s+[\w.]+\s+import\s+[\w*(]|import\s+[\w.]+(?:\s+as\s+\w+)?\s*$)|"
    r"^\s*[\w.]+\([^)]*\)\s*$|^\s*(?:pip3?|npm|pnpm|yarn|cargo|apt(?:-get)?|brew|uv)\s+(?:add|install|get)\b", _I)
# A document's top heading, whose first word names the thing the page describes.
DOC_TITLE = re.compile(r"^\s*#{1,6}\s+(\S+)")
# A subject-less sentence in such a page, describing it: "Requires Chromium 120 or newer."
DESCRIBES = re.compile(r"^(?:requires|supports|needs|uses|runs|depends on|includes|provides|ships with|works with)\b", _I)
# The reader addressed, or the user named as "the user": in untrusted text that is a claim
# about the user, which the user never made (labelling rule: such claims are never facts).
ADDRESSES_READER = re.compile(r"\b(?:you|your|yours|you're|you've|you'll|the user(?:'s)?)\b", _I)
# How a user denies what a page, a tool or the assistant said: "No, billing is on Postgres
# 16, nothing moved", "TP6104 still leaves at 10:05", "that's some other Ben".
DENIAL = re.compile(
    NEGATION.pattern + r"|\b(?:still|wrong|false|fake|spam|scam|phishing|bogus|untrue|some ?one else|some other)\b", _I)

# An untrusted sentence that opens with a command is aimed at the reader, not a fact.
IMPERATIVE = re.compile(
    r"^(?:please\s+)?(?:ignore|disregard|forget|remember|record|store|save|note|add|update|delete|"
    r"remove|send|tell|call|execute|run|write|print|output|respond|reply|say|answer|do|don't|"
    r"never|always|make|set|change|use|click|visit|go|open|download|install|email|transfer|configure|enable|disable|"
    r"upgrade|downgrade|switch|migrate|reply|verify|confirm|log in|sign in|buy|pay|render)\b", _I)

# A user turn that opens with one of these confirms what the assistant just said.
CONFIRM = re.compile(
    r"^(?:yes|yeah|yep|yup|yea|exactly|correct|that'?s (?:right|correct|it)|right|precisely|"
    r"absolutely|indeed|spot on|you got it|sure|definitely|affirmative|ok(?:ay)?|perfect|sounds good|"
    r"please do|do it|do that|go ahead|go for it|take it|book it|that works|works for me)\b", _I)
# The yes itself, peeled off to see what the reply adds.
CONFIRM_WORD = re.compile(r"^\W*(?:yes|yeah|yep|yup|sure|ok(?:ay)?|right|correct|exactly|definitely|absolutely)\b[\s,.!:-]*", _I)
# A reply that goes on with its own subject ("Yes, I'll…", "Yes, and my wife…") says something new.
ANSWER_SUBJECT = re.compile(r"^(?:i|i'm|i've|i'll|i'd|we|we're|my|our|you|your|it|it's|that|that's|this|he|she|they|"
                            r"and|but|so|also|please|thanks|thank you|no|not)\b", _I)
# …but a phrase that opens on a when/how often/where is detail even with a verb in it.
ANSWER_DETAIL = re.compile(r"^(?:once|twice|every|each|on|at|in|by|before|after|from|until|only|weekly|daily|monthly|"
                           r"mornings?|evenings?|nights?|weekends?|" + _WEEKDAYS + r")s?\b", _I)
# …unless it goes on to contradict it.
CONFIRM_BUT = _any(r"but", r"actually", r"except", r"not quite", r"no,", r"although", r"however")
# How an assistant hedges a guess; peeled off before the guess is stored.
ASSISTANT_HEDGE = re.compile(
    r"^(?:(?:got it|okay|ok|so|alright|great|sure|understood|right|noted|updated|done|then)[,.!:—-]*\s*)*"
    r"(?:(?:it )?sounds like|it seems(?: like)?|i (?:think|guess|assume|take it|understand)(?: that)?|"
    r"my guess is(?: that)?|if i understand (?:correctly|right),?|just to confirm,?|to confirm,?|"
    r"in other words,?|so basically,?|basically,?|so,?)?\s*",
    _I,
)
# "Should I …?" / "Want me to …?": a confirmed offer is the user's decision.
ASSISTANT_OFFER = re.compile(
    r"^(?:(?:so|okay|ok)[,]?\s+)?(?:should i|shall i|do you want me to|want me to|would you like me to|"
    r"should we|shall we)\s+(.+?)\??$", _I)
# "Want a reminder?" / "Do you prefer mornings?": a yes turns the question into the user's
# wish or trait. Each pattern maps to the statement the yes makes, still saying "you".
ASSISTANT_QUESTIONS = [
    (re.compile(r"^(?:do you want|would you like|want|you want)\s+(?!me\b)(.+?)\??$", _I), "you want "),
    (re.compile(r"^do you\s+(.+?)\??$", _I), "you "),
    (re.compile(r"^are you\s+(.+?)\??$", _I), "you are "),
    (re.compile(r"^have you\s+(.+?)\??$", _I), "you have "),
]
# Only a firm yes ("exactly", "that's right") confirms a statement that is not about the
# user; a plain "yes"/"perfect" after a summary or an answer just moves the chat on.
STRONG_CONFIRM = re.compile(r"^(?:(?:yes|yeah|yep),?\s+)?(?:exactly|correct|that'?s (?:right|correct|it)|precisely|"
                            r"spot on|you got it|right)\b", _I)
# A statement about the user: its subject is "you"/"your".
ABOUT_YOU = re.compile(r"^(?:so,?\s+|and\s+)?(?:you|your|you're|you've)\b", _I)
# The assistant talking about itself ("I'll add it", "let me check"): not a fact about the user.
ASSISTANT_SELF = _any(r"i", r"i'm", r"i'll", r"i've", r"me", r"my", r"let me")
ASSISTANT_CHATTER = _any(r"happy to help", r"let me know", r"hope (?:this|that) helps", r"great question",
                         r"feel free", r"i can help", r"i'?m (?:an? )?(?:ai|assistant|language model)", r"glad")

# --- Categories and tags ---------------------------------------------------------

# "like" as a comparison ("it's like a second family") is not a preference; only count
# it as one after a subject or a verb helper.
LIKE_AS_VERB = re.compile(r"\b(?:i|we|they|you|really|also|would|'d|to|do|don't|didn't|still|kinda)\s+like\b", _I)
LIFE_DEFAULT_CATEGORY = "personal"  # first-person facts about one's life
OTHER_DEFAULT_CATEGORY = "casual"
UNTRUSTED_DEFAULT_CATEGORY = "operational"
# Categories about systems, not people: a first-person life fact ("I've been running
# longer") never lands there on a keyword alone.
NOT_FOR_LIFE_FACTS = ("operational",)
RULE_DEFAULT_CATEGORY = "process"  # a standing instruction to the assistant
PERSONAL_RULE_CATEGORY = "preferences"  # the same outside a session about code and systems
# …unless it is a permanent one ("never force-push to main"): a standing decision.
STANDING_DECISION_CATEGORY = "decision"

STOPWORDS = EXTRACTION_STOPWORDS  # the offline extractor's keywords skip these (retrieval.text)

UNITS = (r"miles?|mi|km|kilometers?|kg|lbs?|pounds?|%|percent|years?|months?|weeks?|days?|hours?|"
         r"hrs?|minutes?|mins?|points?|dollars?|usd|euros?|gb|mb|tb|ms|seconds?|feet|ft|meters?|m|"
         r"inches|cm|mph|kph|degrees|k|people|times|books?|games?|kids|children|dogs?|cats?")
QUANTITY = re.compile(
    r"(?:[$€£]\s?" + NUMBER.pattern + r"(?:\s?(?:k|m|million|billion)\b)?)|"
    r"\b" + NUMBER.pattern + r"\s?(?:" + UNITS + r")\b",
    _I,
)
# A relative day used as an adverb, written into the fact as its date ("got the bike out
# of winter storage today" → "… on March 1"): a fact outlives the day it was said on.
# Not a subject or a possessive ("today is my birthday", "today's standup"). Group 1: a
# preposition that stays ("by tomorrow" → "by March 2"); group 2: the relative day.
RELATIVE_DAY_ADVERB = re.compile(
    r"(?<=\w)(?:,)?\s+(?:(by|until|till|since|before|after|from)\s+)?(yesterday|today|tomorrow|tonight|last night|"
    r"this morning)\b(?!'s|\s+(?:is|was|will|'s)\b)", _I)
DAY_PART = {"tonight": "the night of ", "last night": "the night of ", "this morning": "the morning of "}

# Capitalised words that are not names.
NOT_ENTITIES = NOT_NAMES

# Image captions appended by the LoCoMo ingester; kept out of the fact text.
CAPTION = re.compile(r"\s*\[shared image:\s*(.*?)\]\s*", _I | re.DOTALL)
# The text points at the shared picture, so the picture is part of what was said.
REFERS_TO_IMAGE = _any(r"photo", r"pic", r"pics", r"picture", r"snap", r"shot", r"look at",
                       r"check (?:it|this|them) out", r"check out", r"here'?s", r"this is", r"take a look",
                       r"see this", r"this one", r"these", r"made this", r"painted this", r"look")
CAPTION_LEAD = re.compile(r"^(?:a |an )?(?:photo|photograph|photography|picture|image|close up|closeup|"
                          r"close-up|drawing|painting|screenshot)\s+of\s+", _I)
