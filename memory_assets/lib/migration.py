"""Flat-file memories (MEMORY.md, memory/*.md) into new-memory records (``memory import --from-markdown``).

Each bullet (``-``, ``*``, ``1.``) and each paragraph is one memory, worded as written; the
headings above it become its tags, and a heading that names a configured category is its
category hint. Code blocks, tables and headings themselves are not memories. Parsed with
markdown-it-py (CommonMark), so nesting, numbered lists and line continuations read as
any Markdown renderer reads them.

Why new-memory records and not a transcript: a MEMORY.md line is already a memory, not a
conversation to mine. An extractor would reword, split or drop it, and nothing in a
transcript carries the headings. As records (``interchange``: an item without an id,
``provenance = "migration"``) they go through the import adoption, which passes each one
through the same write gate, credential filter and scoring as an extracted fact
(``lib/items/imports.py`` → ``build_facts``), with the file and line as its source turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

from memory_assets.lib.ingest.transcripts import safe_session_id
from retrieval.interchange import FORMAT, VERSION

_TASK_BOX = re.compile(r"^\[[ xX]\]\s+")
_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class MarkdownMemory:
    """One bullet or paragraph: its text, the headings above it (outermost first), its line."""

    content: str
    headings: tuple[str, ...]
    line: int


def _text(inline: Any) -> str:
    """The words of an inline token, markup dropped (``**tabs**`` → tabs, `` `uv` `` → uv)."""
    parts = []
    for child in inline.children or []:
        if child.type in ("text", "code_inline", "image"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return _TASK_BOX.sub("", " ".join("".join(parts).split()))


def read_markdown(text: str) -> list[MarkdownMemory]:
    """Every bullet and paragraph of ``text``, with the headings it sits under."""
    tokens = MarkdownIt("commonmark").parse(text)
    headings: list[tuple[int, str]] = []  # (level, text) of the open sections
    found: list[MarkdownMemory] = []
    for before, token in zip([None, *tokens], tokens):
        if token.type != "inline" or before is None:
            continue
        if before.type == "heading_open":
            level = int(before.tag[1:])
            headings = [h for h in headings if h[0] < level] + [(level, _text(token))]
        elif before.type == "paragraph_open" and (content := _text(token)):
            found.append(MarkdownMemory(content, tuple(h for _, h in headings), (token.map or [0])[0] + 1))
    return found


def tag(heading: str) -> str:
    """A heading as a tag: ``"Coding style"`` → ``coding-style``."""
    return _SLUG.sub("-", heading.lower()).strip("-")


def migration_records(path: Path, text: str, now: datetime, *, namespace: str | None = None) -> list[dict[str, Any]]:
    """An import of one markdown file: a header and one new-memory record per memory (each
    learned at ``now``, the header's time: the same file migrated again is the same import)."""
    memories = read_markdown(text)
    session = f"migration-{safe_session_id(path.stem)}"
    header = {"format": FORMAT, "version": VERSION, "exported_at": now.isoformat(), "namespace": namespace,
              "counts": {"item": len(memories)}, "embedding_model": None}
    return [header, *({"type": "item", "content": m.content, "provenance": "migration", "source_trust": "trusted",
                       "tags": list(dict.fromkeys(t for h in m.headings if (t := tag(h)))),
                       "namespace": namespace, "session_id": session,
                       "source_turn_ids": [f"{path.name}:{m.line}"]} for m in memories)]
