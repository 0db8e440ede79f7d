"""Prompts are data (DESIGN principle 6): files in ``prompts/``, versioned by content hash.

A prompt's ``version`` becomes the ``code_version`` of the asset that uses it, so
editing a prompt file marks that asset stale in the Dagster UI and a backfill
re-extracts history with the new prompt.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROMPTS_DIR = Path(__file__).resolve().parents[2] / "prompts"


class PromptNotFound(FileNotFoundError):
    """No prompt file of that name exists in ``PROMPTS_DIR``."""


@dataclass(frozen=True)
class Prompt:
    """One prompt file.

    Attributes:
        name: the file name without ``.md``, e.g. ``"extract_facts"``.
        text: the file's text; ``{placeholders}`` are filled by ``render``.
        version: the first 12 hex digits of the sha256 of the file's bytes.
    """

    name: str
    text: str
    version: str

    def render(self, **values: Any) -> str:
        """The text with ``{placeholders}`` filled (``str.format``; ``{{`` is a literal brace)."""
        try:
            return self.text.format(**values)
        except (KeyError, IndexError) as exc:
            raise ValueError(f"prompt {self.name!r}: no value for placeholder {exc}") from None


def load_prompt(name: str) -> Prompt:
    """Read ``prompts/<name>.md``.

    Args:
        name: the prompt's name, with or without the ``.md`` suffix.
    """
    stem = name.removesuffix(".md")
    path = PROMPTS_DIR / f"{stem}.md"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        available = ", ".join(sorted(p.stem for p in PROMPTS_DIR.glob("*.md"))) or "none"
        raise PromptNotFound(f"{path}: no such prompt; available: {available}") from None
    return Prompt(
        name=stem,
        text=data.decode("utf-8"),
        version=hashlib.sha256(data).hexdigest()[:12],
    )
