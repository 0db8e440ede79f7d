"""The offline extractor's rules, as data: word lists and cue patterns.

``offline.py`` holds the procedure; this module holds how it splits text and finds whom a
clause is about, and ``cues.py`` what a clause says. Changing a
table here changes what gets extracted, so bump ``OfflineExtractor.version`` with it.
Patterns are matched case-insensitively against one sentence or clause.
"""

from __future__ import annotations

import re

from retrieval.intent import HENCEFORTH, IN_FUTURE
from retrieval.text import NOT_AFTER_POSSESSIVE  # noqa: F401  (read as R.NOT_AFTER_POSSESSIVE)

_I = re.IGNORECASE


def phrases(*alternatives: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")\b", _I)

# --- Splitting -------------------------------------------------------------------

# Spaced dashes and semicolons join two statements ("I'm keen on counseling - I'd love to…").
CLAUSE_BREAK = re.compile(r"\s+[-–—]+\s+|(?<=[a-z])[-–—]+\s+|\s*;\s+|\s*…\s*|\.{3,}\s*")
# "and/but/so" before a new subject starts a new statement ("…yesterday and I loved it").
JOIN = re.compile(
    r",?\s+(?:and|but|so|plus|because|cause|cuz)\s+(?=(?:i|i'm|i've|i'll|i'd|we|we're|we've|my|our)\b)|"
    r",\s+(?:and|but|so)\s+(?=(?:you|you're|he|she|they|it|it's|that|that's|this)\b)|"
    r",\s+so\s+(?!(?:that|much|many|far|yes|no|long|what|i|we|you)\b)(?=[a-z])|"
    r",\s+(?:so\s+)?(?=(?:please\s+)?(?:keep|always|never|don't|do not|make sure|let's)\b)", _I)
# ", I think it was…" is a hedge on the same statement, not a new one.
COMMA_SUBJECT = re.compile(
    r",\s+(?=(?:i|i'm|i've|i'll|i'd|we're|we've)\s)(?!i (?:think|guess|believe|mean|suppose|reckon|hope|bet)\b)", _I)
# A dash-piece that continues the phrase before it rather than starting a statement.
CONTINUATION = re.compile(
    r"^(?:which|who|for|to|with|like|especially|including|from|as|by|about|at|in|on|into|plus|not|"
    r"[a-z]+ing,|[a-z]+ing (?:and|or) )\b", _I)
HAS_SUBJECT = re.compile(r"(?-i:^[A-Z])|\b(?:i|i'm|i've|i'll|i'd|we|we're|he|she|they|it|it's|you|this|that|there|my|our)\b", _I)
# The left side of "and I" is a clause of its own when it has a subject or a verb;
# "My wife and I" has neither, so it stays one plural subject.
LEFT_HAS_CLAUSE = re.compile(
    r"\b(?:i|i'm|i've|we|we're|he|she|they|it|it's|you|there)\b\s+\S|"
    r"\b(?:is|are|was|were|has|have|had|does|did|[a-z]{3,}ed)\b|"
    r"\b[a-z]{3,}s\s+(?:anything|everything|the|a|an|my|it|that|this|them)\b", _I)
# "For context on the climbing: …", "Change of plan: …": a heading, not part of the fact.
LABEL = re.compile(r"^((?:[^:\d\s]\S*\s+){0,5}[^:\d\s]+):\s+(?=\S+\s+\S+\s+\S+)")
EMOJI = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F\u200d]+")

# Periods that do not end a sentence ("No." only before a number: "No. 5", not "Actually no.").
ABBREVIATIONS = ("mr", "mrs", "ms", "dr", "st", "jr", "sr", "vs", "etc", "e.g", "i.e", "a.m", "p.m", "approx", "no(?=\\.\\s*\\d)")

# Words that open an interjection or discourse marker at the start of a sentence;
# they carry no fact and are peeled off before the clause is judged.
LEADING_FILLER = re.compile(
    r"^(?:(?:oh|ah|aw+|ooh|ugh+|argh+|oof|ouch|yikes|phew|hey|hi|hello|wow|whoa|yeah|yea|yep|yup|yes|ya|sure|okay|ok|"
    r"well|so|anyway|anyways|also|plus|and|but|btw|by the way|oh man|oh wow|oh yeah|"
    r"honestly|haha+|hah|lol|hmm+|um+|uh|totally|definitely|absolutely|exactly|indeed|"
    r"true|right|of course|cool|awesome|great|nice|sweet|congrats|congratulations|"
    r"omg|gosh|man|dude|alright|all right|good news|guess what|"
    r"you know what|speaking of which|speaking of that|funny you should mention it|"
    r"as for me|for me|same here|me too|in fact|now)\b[\s,!.:;-]*)+",
    _I,
)

# A clause that is only social glue: greeting, thanks, acknowledgement, sympathy,
# praise for the other person, or "let me try that" filler.
# Checked on the clause as said, before interjections are peeled off.
CHATTER_OPENERS = re.compile(r"^(?:hi|hey|hello|yo|good (?:morning|evening|afternoon|night)|long time no see|"
                             r"bye|goodbye|see (?:ya|you)|talk (?:to you )?(?:soon|later)|take care|catch you later|"
                             r"ttyl|cheers|thanks|thank you|thx|ty|much appreciated|appreciate it|congrats|"
                             r"congratulations)\b", _I)
CHATTER = re.compile("|".join(f"(?:{p})" for p in (
        r"^(?:hi|hey|hello|good (?:morning|evening|afternoon|night)|long time no see)\b",
        r"^(?:bye|goodbye|see (?:ya|you)|talk (?:to you )?(?:soon|later)|take care|catch you later|ttyl|cheers)\b",
        r"\b(?:good|great|nice|awesome|lovely|fun) (?:to (?:see|hear from|chat|talk|catch up|meet|be back)|catching up|chatting|talking)\b",
        r"\bsince (?:we|you and i) (?:last )?(?:talked|spoke|chatted|caught up|met)\b",
        r"\b(?:couldn'?t|could not) agree more\b",
        r"^i(?:'m| am) (?:doing )?(?:ok|okay|good|great|well|fine|alright|all right)\b",
        r"\bi (?:can|could) (?:share|send|show|give|lend|teach|help)\b.*\byou\b",
        r"^(?:thanks|thank you|thx|ty|much appreciated|appreciate it)\b",
        r"^(?:ok(?:ay)?|sure|got it|sounds good|will do|noted|cool|nice|great|perfect|yes|yeah|yep|no|nope|right|exactly|correct|agreed|true)[\s.!]*$",
        r"\blet me (?:try|check|see|think|know|look)\b",
        r"^(?:i'?ll|i will|going to|gonna) (?:try|give) (?:that|it|this)\b",
        r"^(?:good luck|best of luck|keep (?:it up|going|at it|up the good work)|you got this|hang in there|well done)\b",
        r"\b(?:sorry to hear|that sucks|so sorry|my condolences)\b",
        r"^(?:congrats|congratulations)\b",
        r"^(?:i'm |i am )?(?:so |really )?(?:glad|happy|good|great|nice|relieved) (?:to hear|you|that you|it)\b",
        r"\bi(?:'m| am) (?:so |really |very |super |truly )*(?:happy|glad|proud|thrilled|excited|sorry|stoked|pleased|grateful|thankful) (?:for you|of you|to hear|you|that you|for your)\b",
        r"\bi(?:'m| am) (?:always )?here (?:for you|if you|to (?:support|help|listen|cheer))\b",
        r"\bbelieves? in (?:you|ya)\b",
        r"\b(?:be|been|is|am|'m|are) (?:always |right )?(?:there for|by) (?:you|ya|your side)\b",
        r"^(?:sounds|looks|seems) (?:like|so|really|great|amazing|awesome|fun|cool|good|lovely|interesting)\b",
        r"\b(?:keen|eager|excited|dying|curious) to (?:hear|see|know|learn more)\b",
        r"\bthere for each other\b",
        r"\b(?:had|have|got|wanted) to share (?:something|this|some)\b|\bshare something\b",
        r"^i (?:gotta|have to|got to|must) (?:say|admit)\b",
        r"\bunderstands? (?:why|how|what)\b",
        r"\b(?:happy|glad|here|always ready) to help\b",
        r"\b(?:love|like|admire|enjoy)\b.*\bhow (?:you|your)\b",
        r"\bmeans? (?:a lot|so much|the world|everything)\b",
        r"\bnot (?:worry|bother|stress) about\b",
        r"\b(?:love|loves|would love|'d love) to hear\b",
        r"\bi (?:can(?:'t| not)?|could) (?:only |totally |definitely |just |really |so )*(?:imagine|relate|see why|tell|understand)\b",
        r"\bi (?:totally |really |completely )?(?:get|understand|know|see) (?:how|why|what) (?:that|it|you|this)\b",
        r"\b(?:fingers crossed|crossing (?:my |\w+'s )?fingers)\b",
        r"\bcould use (?:some|a|any) (?:\w+ )?(?:recommendations|recs|advice|tips|help|suggestions|ideas|pointers)\b",
        # reactions to the listener: "I'm impressed with your…", "rooting for you", "fill you in"
        r"^(?=.*\b(?:you|your|you're|ya)\b).*\b(?:impressed|respect|rooting|admire|inspired by|happy for|excited for|"
        r"thrilled for|fill (?:you|ya) in|tell (?:you|ya)|show (?:you|ya)|let (?:you|ya) know|update (?:you|ya)|proud)\b",
        r"\bi (?:bet|agree|understand|hear you|feel you|know (?:what you mean|how you feel|right|you|that you|how you))\b",
        r"\bi knew you\b",
        r"\bi(?:'m| am) (?:sure|certain|confident) (?:you|it|that'?s|they)\b",
        r"\bi (?:hope|wish) (?:you|it|that|things|everything|your)\b",
        r"\bi(?:'d| would) love to (?:hear|see|know|check|read|join|meet|try|give)\b",
        r"\b(?:can'?t|cannot) wait to (?:see|hear|read|meet|check)\b",
        r"\bi (?:think|feel|believe) (?:so|that'?s|it'?s|you|you'?re|this is)\b",
        r"\bwhat (?:a|an) \w+",
        r"\bthat'?s (?:so |really |very |pretty )?(?:cool|great|awesome|amazing|wonderful|nice|sweet|lovely|fantastic|incredible|impressive|good|fun|true|right|exciting|inspiring|tough|hard|rough|understandable)\b",
        r"\b(?:lucky|blessed|grateful|thankful) to have you\b",
        r"\b(?:you(?:'re| are)|your \w+ (?:is|are|was|were)) (?:so |really |very |such )?(?:a |an )?(?:great|amazing|awesome|inspiring|incredible|wonderful|kind|sweet|talented|strong|brave|right|lucky)\b",
        r"\b(?:means|meant) (?:a lot|so much|the world) to me\b",
        r"\bkeep me (?:posted|updated)\b",
        r"\bi (?:really |truly |so )?(?:love|like|admire|appreciate|respect) (?:that|how|the way|it when) you\b",
        r"\b(?:i |really |so )(?:appreciate|value) (?:your|you|it|that|this|our)\b",
        r"^(?:appreciate|love) (?:your|you|it|that|this)\b",
        r"\blet'?s (?:catch up|talk|chat|hang)\b",
        r"\b(?:add|adding|put|putting) (?:it|that|this|them|those|these)(?: \w+)? (?:on|to) (?:my|the|our) (?:\w+ )?(?:list|queue)\b",
        r"\b(?:give|giving) (?:it|that|this|them) a (?:try|shot|go|look|read|listen|whirl)\b",
        r"\bcheck (?:it|that|this|them|those) out\b",
        r"^i (?:totally |completely |definitely |really |fully )?agree(?:d)?\b",
        r"\b(?:hope|think) so\b",
        r"\bgot (?:your|ya|you) back\b",
        r"\bsorry (?:i|for|about|that|to)\b",
        r"\b(?:news|something|anything|stuff) to (?:share|tell)\b|\bshare (?:some|the|my) (?:good |great |exciting |big )?news\b",
        r"\bi'?m sure (?:it|its|it's|that|you|your|they|he|she|with)\b",
        r"\b(?:glad|happy|lucky|blessed|grateful|thankful) to have (?:you|ya|such|a friend)\b",
        r"\b(?:happy|glad|thrilled) to see (?:you|your|my words|it)\b",
        r"\bmake sure to have a (?:safe|great|good|fun)\b",
        r"\bhope (?:they|you|she|he) (?:love|like|enjoy)s? (?:it|them)\b",
        r"\bhelp in any way\b",
        r"^i mean\b",
        r"\b(?:will|'ll|gonna|going to) (?:definitely |totally |for sure )?(?:do that|try that|look into it|think about it|keep that in mind)\b",
        # praise for the listener: "your life path can be quite inspirational"
        r"\b(?:you|your|you're|you've)\b.*\b(?:inspirational|inspiring|amazing|awesome|impressive|incredible|"
        r"proud|talented|brave|strong|great job|well done|so cool|rock|rocks|killing it|crushing it)\b",
    )), _I)

# Sentences that open like a question even without a question mark: a wh-word
# followed by an auxiliary, or an auxiliary followed by "you".
QUESTION_START = re.compile(
    r"^(?:what|who|where|when|why|how|which)(?:'s|'re|'d|\s+(?:is|are|was|were|do|does|did|have|has|"
    r"can|could|would|will|should|about|else|kind|sort|made|happened|got))\b",
    _I,
)
QUESTION_INVERSION = re.compile(
    r"^(?:\w+\s+){0,2}(?:do|does|did|are|is|were|have|has|can|could|would|will)\s+(?:you|ya|u)\b", _I
)
# Tag questions on a statement ("…pretty cool, huh?") do not make it a question.
QUESTION_TAG = re.compile(r",?\s*(?:huh|right|eh|you know|isn'?t it|don'?t you think|no|yeah|ya know|"
                          r"pretty (?:cool|neat|awesome)(?:,? huh)?)\s*\?+$", _I)

# "We can make a difference", "having people who support us is vital": a motto about
# everyone, not something that happened to the speaker. Only applies when the clause
# has no I/me/my and is not in the past tense.
SINGULAR_FIRST_PERSON = re.compile(r"\b(?:i|i'm|im|i've|i'll|i'd|me|my|mine|myself)\b", _I)
GENERIC_WE_CLAIM = phrases(r"can", r"could", r"should", r"must", r"need(?:s)? to", r"have to", r"always",
                        r"important", r"vital", r"key", r"essential", r"matters?", r"together", r"anything",
                        r"everyone", r"everybody", r"people", r"life", r"lives", r"world",
                        r"(?:helps?|helping|keeps?|keeping|makes?|making|brings?|bringing|reminds?|reminding|gives?|giving|"
                        r"lets?|allows?|teaches?|teaching|shows?|showing) us", r"has a way")
# What a clause says after one of these is a condition or a time, not its claim: "Our repo
# needs two approvals before anything can merge" is no motto for its "anything can".
SUBORDINATE_TAIL = re.compile(r"\s(?:before|after|when|whenever|because|if|unless|until|since|while|once|so that)\b.*$", _I)
# "It's awesome how…", "It's great to see…": an opinion wrapped around a clause. Dropped
# unless the speaker says something about themselves (I/me/my) inside it.
OPINION_OPENER = re.compile(
    r"^(?:it's|it is|its|that's|that is|this is|it was|it feels|it felt)\s+(?:so |really |pretty |just |super |truly |always |also )*"
    r"(?:awesome|amazing|great|cool|nice|good|wonderful|incredible|impressive|interesting|crazy|funny|inspiring|"
    r"sweet|lovely|fantastic|fascinating|beautiful|heartwarming|important|key|vital|essential|true|rewarding)\s+"
    r"(?:how|that|to|when|seeing|knowing|having|being|what)\b", _I)
# A gerund or abstract subject judged good or bad ("Taking time for ourselves is vital").
MAXIM = re.compile(
    r"^(?:[a-z]+ing|having|being|life|family|friends|nature|balance|support|love|people)\b.*\b(?:is|are|can be|was)\s+"
    r"(?:so |really |very |super |pretty |truly |just |always )*(?:key|vital|important|essential|crucial|great|"
    r"amazing|awesome|the best|everything|huge|special|powerful|priceless|necessary|worth it)\b", _I)

# Friendly imperatives between people ("check out this piece", "trust me", "keep it up")
# ask something of the listener; they state nothing about the speaker.
_SOCIAL_IMPERATIVES = (
    r"check (?:it |this |that |these |them )?out|check|look|take a look|see|let'?s|come|tell|try|keep|"
    r"trust|don'?t (?:worry|forget|give up|be)|go|guess|imagine|enjoy|have (?:fun|a)|stay|hang|remember|"
    r"thank|hope|say|give|send|show|wish|feel free|make sure|never (?:give|stop)|be ")
SOCIAL_IMPERATIVE = re.compile(r"^(?:" + _SOCIAL_IMPERATIVES + r")\b", _I)
# Advice between people with no subject ("Push through and it'll be worth it", "just do
# your research"), after an adverb too: the social imperatives and more. Not a statement
# of what is, so not reported as one.
BARE_IMPERATIVE = re.compile(
    r"^(?:(?:just|so|now|then|always|never|please|definitely|really)\s+)*(?:" + _SOCIAL_IMPERATIVES + "|"
    r"do|don'?t|push|let|take|make|get|be|have|give|believe|follow|find|focus|think|treat|stick|hold|dream|"
    r"embrace|cherish|put|use|start|stop|feel|cheers|hats off|kudos|congrats|congratulations|good luck|"
    r"way to go|well done|can'?t wait|can'?t agree|couldn'?t agree|glad|happy|sounds|looks|love|loving)\b", _I)
# A dependent clause cut off from its main clause says nothing on its own.
# A prepositional phrase with no subject of its own: "with support at home and my own grit".
PREPOSITION_START = re.compile(r"^(?:with|without|for|after|before|during|at|by|from|to|through|despite|thanks to)\b", _I)
SUBJECT_PRONOUN = re.compile(r"\b(?:i|i'm|i've|i'll|i'd|we|we're|we've|he|she|they|it|you)\b", _I)
# A clause opening on a factual subordinator ("especially after I failed the test") still
# states a fact once the subordinator is dropped; a hypothetical one ("if I…") does not.
FACTUAL_SUBORDINATOR = re.compile(r"^(?:(?:especially|even|just|right|ever|only)\s+)?(?:after|when|because|"
                                  r"cause|'cause|before|once|while|although|though|as soon as)\s+(?=(?:i|i'm|i've|i'd|we|my)\b)", _I)
SUBORDINATE_START = re.compile(r"^(?:even though|although|though|because|since|while|if|unless|whenever|which|who|"
                               r"especially|just like|like when|such as|"
                               r"as long as|so that|until|whether)\b", _I)
# "Since the reorg I'm based at…", "After the move we…": a short time phrase (no verb,
# no comma) before the speaker's own clause.
LEADING_TIME_PHRASE = re.compile(
    r"^(?:since|after|until|before|from)\s+(?:(?:the|my|our|this|next|last|a)\s+)?[\w'-]+(?:\s+[\w'-]+)?,?\s+"
    r"(?=(?:I|I'm|I've|I'll|we|we're|we've|my|our)\b)", _I)
# "From now on, window seats for me": a standing choice without a verb.
STANDING_FOR_ME = re.compile(
    r"^(?P<when>(?:" + HENCEFORTH + "|" + IN_FUTURE + r"),?)\s+"
    r"(?P<what>(?!I\b)[\w'-]+(?:\s+[\w'-]+){0,4}?)\s+(?:for me|please)\s*(?:[.!]|[,;]\s.*)?$", _I)
# Words too vague to make a clause informative on their own.
VAGUE = frozenset(
    "check definitely try trying tried sure totally absolutely probably maybe actually know mean "
    "guess bet something anything everything someone anyone everyone somebody life busy gets "
    "thing way much little bit lot day days doing done happen happened happening stuff out "
    "keep kept keeps things agree agreed hope hoping wait waiting excited glad happy remember "
    "remembers hear heard sounds looks part planning thinking trying staying themself themselves "
    "hopeful positive optimistic motivated strong loving enjoying forget forgot think thinks like "
    "likes love loves highly recommend recommends reach sure want wants wanted".split()
)

# Verdict and feeling words: they make a clause sound like a fact without adding one.
EVALUATIVE = frozenset(
    "happy glad proud excited thrilled stoked amazing awesome great cool fun special nice good "
    "lovely wonderful fantastic incredible beautiful sweet best better tough hard rough crazy "
    "wild cute perfect huge blessed grateful thankful lucky super totally so really such feel feels "
    "curious pumped psyched fine ok okay clear annoyed frustrated tired exhausted bored stressed "
    "nervous worried scared upset angry sick felt feeling love loved lovin inspiring inspired "
    "exciting busy sad emotional touched moved hectic funny nuts blast powerful fulfilling "
    "rewarding meaningful satisfying relaxing peaceful intense surreal magical unreal validating "
    "empowering therapeutic freeing calming refreshing inspirational".split()
)
# ", let me know what you think!" / ", thanks!" closing a statement.
CHATTER_TAIL = re.compile(r",\s*(?:let me know|lmk|thanks|thank you|lol|haha|hope (?:you|that)|what do you think|"
                          r"if you want|if you'd like|you know)\b[^,]*$", _I)
_INTENSIFIERS = r"(?:so|really|pretty|super|very|such|a|an|totally|just|truly|absolutely|quite|kinda|incredibly)"
_TAIL_WORDS = sorted(EVALUATIVE - {"so", "really", "such", "super", "totally", "feel", "feels", "felt", "feeling"})
# ", which is pretty exciting!" / "and it was so powerful": a verdict tacked onto a fact.
EVALUATIVE_TAIL = re.compile(
    r",\s+(?:sounds|looks|seems)\b.*$|"
    r"(?:,\s+(?:which|and (?:it|that)|it|that)|\s+(?:which|and (?:it|that)))(?:'s been|'s| is| was| has been| feels| felt| looks| looked)\s+"
    r"(?:" + _INTENSIFIERS + r"\s+)*(?:" + "|".join(_TAIL_WORDS) + r")"
    r"(?:\s+(?:feeling|experience|time|day|thing|moment|one|ride))?(?:\s+(?:too|as well|though|tbh))?[.!]*$",
    _I,
)
# What a removed verdict can leave dangling: "…, but overall", "…painted it because".
DANGLING_END = re.compile(r"(?:,?\s+(?:but|and|so|because|though|although|overall|but overall|which))+\s*$", _I)
# "I went hiking yesterday, have you been?" keeps the statement and drops the question.
TAIL_QUESTION = re.compile(
    r"^(.*?\w.*?),\s+(?:(?:so |and |but )?(?:what|how|who|where|when|why|which|do|did|does|have|has|are|is|was|were|"
    r"can|could|would|will|wanna|want|ever|any|you|what about|how about)\b[^,]*\?)$", _I)
# A name opening a sentence ("Oliver's hilarious!") is what a following "he/she" means.
NAME_START = re.compile(r"^([A-Z][a-zA-Z]+(?:\s+[A-Z][a-zA-Z]+)*)(?='s\b|\s+(?:is|was|has|had|loves|likes)\b|[\s!.]*$)")
# "Maya update: …": a heading that is a name.
LABEL_NAME = re.compile(r"^((?-i:[A-Z][a-z]+))(?=\s+(?:update|news|stuff|thing|again)?:)")
# A named third person the user talks about: "my sister Maya", "Dr. Lena Ortiz".
PERSON = re.compile(
    r"\b(?:my|our) (?:\w+ )?(?:sister|brother|mom|dad|mother|father|wife|husband|partner|friend|son|daughter|"
    r"boss|manager|coworker|colleague|doctor|physio|therapist|dog|cat|kid|girlfriend|boyfriend|cousin|aunt|uncle|"
    r"grandma|grandpa|grandson|granddaughter|grandmother|grandfather|nephew|niece|fianc[eé]e?|stepson|stepdaughter|"
    r"neighbou?r|mentor|roommate|puppy|kitten),? (?:is )?((?-i:[A-Z][a-z]+))\b|"
    r"\b(?:Dr|Mr|Mrs|Ms)\. (?:(?-i:[A-Z][a-z]+) )?((?-i:[A-Z][a-z]+))\b", _I)

# Relation words that tell a named person's gender, so a later "her" finds "my daughter
# Zoe" and not "my son Eli"; a person met without one is matched by either pronoun.
FEMININE = frozenset("sister mom mother wife daughter girlfriend aunt grandma grandmother granddaughter niece "
                     "fiancee fiancée stepdaughter".split())
MASCULINE = frozenset("brother dad father husband son boyfriend uncle grandpa grandfather grandson nephew fiance "
                      "fiancé stepson".split())
# A third-person pronoun for a person, inside a clause: "needs her vaccination record",
# "give him cash", "she's allergic". Group 1: the pronoun; group 2: a contraction ('s, 'll, 'd).
PERSON_PRONOUN = re.compile(r"\b(she|he|her|his|him)\b('s|'ll|'d)?\b", _I)

# A generic remark about everyone rather than a fact about the speaker.
GENERIC_WE = phrases(r"we all", r"we're all", r"we are all", r"we're both", r"we are both", r"all of us", r"us all", r"each of us", r"we both", r"both of us", r"we can all")

# --- Who the clause is about ------------------------------------------------------

FIRST_PERSON = re.compile(r"\b(?:i|i'm|im|i've|ive|i'll|i'd|me|my|mine|myself|we|we're|we've|we'll|we'd|us|our|ours|ourselves)\b", _I)
SECOND_PERSON_SUBJECT = re.compile(r"^(?:you|your|you're|youre|you've|you'll|you'd|ya|u|yours)\b", _I)
# An unresolved pronoun or demonstrative as the subject: a clause that needs its
# neighbour to mean anything.
DEICTIC_SUBJECT = re.compile(r"^(?:it|it's|its|that|that's|this|this is|these|those|they|they're|there)\b", _I)
# "They" opening a clause: the people or company meant were named in another turn, if at
# all. (An opening he/she left unresolved is kept: it is usually the one person the
# session is about, named further back.)
UNRESOLVED_PERSON = re.compile(r"^they(?:'re|'ll|'d|'ve)?\b", _I)

# Words that may sit between "I" and its verb ("I really love", "I just signed").
ADVERBS = frozenset(
    "really also just always still never usually often sometimes actually definitely "
    "totally absolutely truly finally recently even only already kinda sorta now currently "
    "mostly generally personally genuinely honestly seriously certainly particularly "
    "especially simply rarely hardly occasionally constantly regularly typically normally "
    "literally basically probably maybe def officially sometime first once then later ever again "
    "eventually immediately quickly slowly secretly proudly happily".split()
) | {"no longer", "kind of", "sort of"}

# Verb forms after "I" that stay as they are for a third-person subject.
INVARIANT_AFTER_I = frozenset(
    "can could will would shall should must might may had was did didn't can't couldn't "
    "won't wouldn't shouldn't mustn't wasn't used ought need' read put set cut hit let quit "
    "hurt cost spread shut bet been gone done seen".split()
)
# Irregular past tenses: no agreement change needed after the rewrite.
IRREGULAR_PAST = frozenset(
    "went got made saw took felt found thought told came ran began bought brought taught "
    "caught met left lost won wrote spent sent built kept slept heard held knew gave drove "
    "rode ate swam sang sat stood understood became paid said sold fell flew drew grew threw "
    "wore broke chose spoke woke forgot fought led fed dealt meant learnt burnt dreamt "
    "began shook stuck struck swore tore won lit hung dug slid spun forgave overcame "
    "mistook undertook withdrew rebuilt".split()
)
# A verb that makes a colon-ended lead a statement rather than a heading.
FINITE_VERB = re.compile(r"\b(?:is|are|was|were|has|have|had|do|does|did|[a-z]{3,}ed|" + "|".join(sorted(IRREGULAR_PAST)) + r")\b", _I)
# "We raised…", "we had…": something that happened to the speaker's group, not a motto.
WE_DID = re.compile(r"\b(?:we|us)\b\s+(?:\w+\s+)?(?:had|did|got|went|[a-z]{2,}ed|" + "|".join(sorted(IRREGULAR_PAST)) + r")\b", _I)
# Present-tense verbs that merely end in "-ed".
BASE_ENDING_ED = frozenset("need feed bleed speed proceed succeed exceed shred wed breed plead seed weed embed".split())
# Third-person forms that are not just "+s".
THIRD_PERSON = {"am": "is", "have": "has", "do": "does", "go": "goes", "don't": "doesn't",
                "haven't": "hasn't", "are": "is", "were": "was", "undergo": "undergoes"}
# Past participles that turn "I'd" into "had" rather than "would".
PARTICIPLE_AFTER_D = re.compile(
    r"^(?:\s+(?:never|always|just|already|really|been|ever))*\s+(?:been|had|gone|done|seen|felt|heard|"
    r"thought|known|wanted|tried|forgotten|become|got|gotten|made|taken|given|planned|hoped|"
    r"dreamed|imagined|expected|started|finished|lost|won|met|[a-z]+ed)\b",
    _I,
)

# Companions that "we" can be resolved to: "my girlfriend and I", "me and my kids".
COMPANION = re.compile(
    r"\b(?:(?:with|and) (?:my|our)|(?:my|our)(?= \w+(?: \w+)? and (?:i|me)\b)) ((?:\w+ )?(?:wife|husband|partner|girlfriend|boyfriend|fiancee?|kids|children|"
    r"son|daughter|family|friends?|teammates?|team|mom|dad|parents|sister|brother|siblings|"
    r"colleagues?|coworkers?|class|band|crew|dog|dogs|cat|cats|club|students|grandkids))"
    r"(?: and (?:i|me)\b)?",
    _I,
)

# How a speaker announces news; the news is the fact ("I wanted to tell you I joined…").
ANNOUNCEMENT = re.compile(
    r"^(?:(?:i )?(?:just )?(?:wanted|want|had|have|gotta|got) to (?:tell|let) (?:you|ya)(?: know)?|guess what|"
    r"i (?:have|gotta|got) to (?:say|tell you)|you know what|fun fact|big news|good news|great news)[\s,:!-]*(?:that\s+)?",
    _I)

# Casual contractions, spelled out before pronouns are rewritten ("I wanna" → "wants to").
CASUAL = [(re.compile(r"\bgonna\b", _I), "going to"), (re.compile(r"\bwanna\b", _I), "want to"),
          (re.compile(r"\bgotta\b", _I), "have to"), (re.compile(r"\bkinda\b", _I), "kind of"),
          # A name's "'s" before a preposition or a verb's "-ing" is "is", before "been"/"got" "has":
          # "Bruno's on a MacBook now", "Ana's moving to Porto", "Tom's been promoted" (no possessive reads so).
          # (An "-ing" word then a noun is the possessive's: "Asha's swimming lessons got moved".)
          (re.compile(r"\b([A-Z][\w-]+)'s(?=\s+(?:(?:on|at|in|into|with|off|back|out|away|over|now|still|also|finally)\b|"
                      r"[a-z]+ing(?:\s+(?:to|in|on|at|with|for|from|the|a|an|his|her|their|my|our|back|out|up|down|over|"
                      r"again|now|full-time|part-time)\b|\s*[.,;!?]|\s*$)))"), r"\1 is"),
          (re.compile(r"\b([A-Z][\w-]+)'s(?=\s+(?:been|got)\b)"), r"\1 has")]

# Subject-less openings ("Gonna continue my edu", "Just got back from…"): the
# speaker is the implied subject, restored in the first person and then rewritten.
PRO_DROP: list[tuple[re.Pattern[str], str, re.Pattern[str] | None]] = [
    # (opening, first-person lead to restore, unless the clause matches this)
    (re.compile(r"^(?:gonna|going to)\s+", _I), "I'm going to ", None),
    (re.compile(r"^(?:wanna|want to)\s+", _I), "I want to ", None),
    (re.compile(r"^(?:gotta|have to|got to)\s+", _I), "I have to ", None),
    (re.compile(r"^(?:can't|cannot) wait\b", _I), "I can't wait", None),
    (re.compile(r"^been\s+", _I), "I've been ", re.compile(r"\bfor me\b", _I)),  # "been hectic for me": it has
    (re.compile(r"^never\s+(?=been\b)", _I), "I've never ", None),
    (re.compile(r"^(?=(?:didn't|did not|couldn't|can't|won't|haven't|wasn't|never)\s+[a-z]+)", _I), "I ", None),
    # "It's awesome seeing my vision happen": the speaker's own verdict on their own life
    # (without an I/me/my it is a maxim, and OPINION_OPENER drops it).
    (re.compile(r"^(?:it's|it is|it feels)\s+(?=(?:so |really |super |pretty |truly )*(?:great|nice|awesome|fun|amazing|good|"
                r"wonderful|lovely|hard|tough|scary|exciting|relaxing|freeing|special|rewarding|satisfying|cool|"
                r"fulfilling|inspiring)\s+(?:to(?!\s+(?:me|us|him|her|them|you)\b)|seeing|knowing|being|having|watching|when|how)\s)", _I),
     "I find it ",
     re.compile(r"^(?!.*\b(?:i|i'm|i've|me|my|mine|myself)\b)", _I)),
    # "It was great to unplug and hang with the kids": the speaker's own experience.
    (re.compile(r"^(?:it was|it's been|it has been)\s+(?=(?:so |really |super |pretty )*(?:great|nice|awesome|fun|amazing|good|"
                r"wonderful|lovely|hard|tough|scary|exciting|relaxing|freeing|special|rewarding)\s+to\s(?!me|us|him|her|them|you)\b)",
                _I), "I found it ", None),
    # "Here's a self-portrait I made": showing something is sharing it.
    (re.compile(r"^(?:here's|here is|here are)\s+(?=(?:a|an|my|one|some|the|our|this|that|what|another|two|three|a few)\b)", _I), "I shared ",
     re.compile(r"^here(?:'s| is| are)\s+\S+(?:\s+\S+)?[\s.!:]*$", _I)),
    (re.compile(r"^(?=(?:so |really |super |very )?(?:glad|happy|excited|thrilled|stoked|proud|grateful|thankful|"
                r"lucky|blessed|keen|determined|ready|eager|nervous|sad) (?:to|that|about|for|of|with)\b)", _I), "I'm ", None),
    (re.compile(r"^(?=(?:just|recently|finally|also|since|still|now)\s+(?:got|went|had|made|took|came|did|found|"
                r"met|ran|won|hit|built|wrote|read|saw|bought|sold|spent|gave|[a-z]{3,}ed)\b)", _I), "I ", None),
    (re.compile(r"^(?=(?:started|stopped|finished|kept|quit|tried|began|loved|enjoyed)\s+[a-z]+ing\b)", _I), "I ", None),
    # "put" is past tense here; in a chat with an assistant it is a request, caught earlier.
    (re.compile(r"^(?=(?:got|went|had|made|took|found|met|spent|ran|won|wrote|saw|gave|bought|put)\s+"
                r"(?!(?:is|are|was|were|can|could)\b))", _I), "I ", None),
    (re.compile(r"^(?=[a-z]{3,}ed\s+(?:with|to|at|for|up|out|my|a|an|the|some|this|that|our|back|in|on|off|"
                r"by|around|over|through|when|as|after|before|last)\b)", _I), "I ", re.compile(r"^(?:red|bed|need|seed|feed|speed|weed)\b", _I)),
    (re.compile(r"^(?=(?:still |currently |also |now |just )?(?:planning|thinking|hoping|trying|working|looking|"
                r"heading|getting|feeling|loving|enjoying|learning|considering|reading|training|studying|"
                r"practicing|saving|taking|playing|writing|doing|making|spending|going)\b"
                r"(?!\s+(?:your|you|that|this|it|the way)\b))", _I), "I'm ",
     re.compile(r"\b(?:is|are|was|were|can|could|has been|have been|makes?|made|helps?|helped|gives?|gave|"
                r"brings?|keeps?|means?|takes?)\b|\b(?:[a-z]{3,}s|let|make|help|give|keep)\s+(?:me|us|my|our)\b", _I)),
    # "Love hiking" is the speaker's liking; "Love the necklace" praises the listener's thing.
    (re.compile(r"^(?=(?:love|enjoy|prefer|hate|miss)\s+(?!(?:that|this|it|those|these|your|you|the|how|what|seeing|hearing|"
                r"is|are|was|were|sure|can|does|has|will|makes?|brings?|to hear|and)\b))", _I),
     "I ", None),
]
