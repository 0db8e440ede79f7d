"""How a category summary cites its items: the grammar the pipeline writes and tier 1 reads.

Every bullet of a summary ends with the ids of the items it rests on::

    - Aaron's WRX oil change is due at 11,799 miles [a1b2c3]

The offline summarizer writes one item's content per bullet, so a bullet's citation is
exactly the item its text came from; the LLM summarizer is held to the same rule (every
bullet cites, only known ids). Tier 1 (``retrieval.agent.retrieve.tier1``) serves bullets, and each
carries the cited items' ids and source turns, so a summary answer stays traceable.
"""

from __future__ import annotations

import re

_ID = r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}"
# "[id]" or "[id1, id2]"; not a markdown link "[text](url)".
CITATION = re.compile(rf"\[({_ID}(?:\s*,\s*{_ID})*)\](?!\()")
_BULLET = re.compile(r"^\s*[-*]\s+(.*\S)\s*$")


def cited_ids(text: str) -> list[str]:
    """Every item id cited as ``[id]`` in ``text``, in order of first citation."""
    seen: dict[str, None] = {}
    for match in CITATION.finditer(text):
        for item_id in match.group(1).split(","):
            seen.setdefault(item_id.strip(), None)
    return list(seen)


def strip_citations(text: str) -> str:
    """The text without its ``[id]`` citations (what tier 1 embeds)."""
    lines = [re.sub(r"[ \t]{2,}", " ", CITATION.sub("", line)).rstrip() for line in text.splitlines()]
    return "\n".join(lines).strip() + "\n"


def summary_lines(markdown: str) -> list[tuple[str, list[str]]]:
    """(the line's text without citations, the ids it cites) for every bullet of a summary."""
    out = []
    for line in (markdown or "").splitlines():
        match = _BULLET.match(line)
        if match:
            body = match.group(1)
            out.append((" ".join(CITATION.sub(" ", body).split()), cited_ids(body)))
    return out
