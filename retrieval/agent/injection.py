"""The block an agent puts in its prompt: a header and one line per memory.

    <memory-context>
    Known context from previous sessions:
    ~ [m:4821] Aaron's WRX oil change is due at 11,799 miles (confidence: 0.9; age: 3d; vehicle)
    </memory-context>

The markers let the extractor strip the block if it comes back in a transcript, so a
recalled memory never becomes a new fact (DESIGN principle 7). ``[m:4821]`` is the
item's short id (``retrieval.ids``): the agent's model passes it to ``reinforce``,
``demote``, ``update`` or ``forget`` to act on the line it used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from retrieval.agent.search import Hit
from retrieval.agent.tokens import count_lines, count_tokens
from retrieval.schema import INJECTION_END, INJECTION_START
from retrieval.scoring import age_of


@dataclass
class Injection:
    """What ``MemoryClient.inject`` returns."""

    text: str
    items: list[Hit] = field(default_factory=list)
    tier: str = "none"
    tokens: int = 0
    query: str = ""  # what was embedded (the rewritten query)
    flags: dict[str, list[str]] = field(default_factory=dict)
    terms: str = ""  # what full-text search was asked
    labels: dict[str, str] = field(default_factory=dict)  # hit id -> the short id(s) its line shows

    def as_dict(self) -> dict:
        return {"text": self.text, "tier": self.tier, "tokens": self.tokens, "query": self.query, "terms": self.terms,
                "items": [{**h.as_dict(), "flags": self.flags.get(h.id, []), "ref": self.labels.get(h.id)}
                          for h in self.items]}


def format_line(hit: Hit, now: datetime, flags: Sequence[str] = (), label: str | None = None) -> str:
    age = int(age_of(hit.row, now))
    tags = " ".join(flags)
    ref = f"[{label}] " if label else ""
    # The category without its label: 4 tokens a line, 40 a block, are the ids' room.
    line = f"~ {ref}{hit.content} (confidence: {hit.confidence:.1f}; age: {age}d; {hit.category})"
    return f"{line} {tags}".rstrip()


def build_block(hits: Sequence[Hit], *, header: str, now: datetime, max_items: int, token_budget: int,
                flags: dict[str, list[str]] | None = None,
                labels: dict[str, str] | None = None) -> tuple[str, list[Hit], int]:
    """Lines in rank order until the item cap or the token budget is reached (hard limits).

    Returns the block text (empty when nothing fits), the items in it, and its tokens.
    """
    frame = [INJECTION_START, header, INJECTION_END]
    used = count_lines(frame)
    if not hits or used >= token_budget:
        return "", [], 0
    lines: list[str] = []
    kept: list[Hit] = []
    for hit in hits:
        if len(kept) >= max_items:
            break
        line = format_line(hit, now, (flags or {}).get(hit.id, ()), (labels or {}).get(hit.id))
        cost = count_tokens(line) + 1  # the newline
        if used + cost > token_budget:
            continue  # a shorter line further down may still fit
        lines.append(line)
        kept.append(hit)
        used += cost
    if not kept:
        return "", [], 0
    block = [INJECTION_START, header, *lines, INJECTION_END]
    return "\n".join(block), kept, count_lines(block)
