"""``MemoryClient``: what an agent imports to read its memory and hand over transcripts."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from retrieval.config import MemoryConfig, load_config
from retrieval.embeddings import Embedder
from retrieval.inbox import write_session
from retrieval.injection import Injection, build_block
from retrieval.paths import DataRoot
from retrieval.search import Hit, hybrid_search
from retrieval.store import ItemStore

Messages = Sequence[Mapping[str, Any]]


class MemoryClient:
    """Read the published memory under a data root; append transcripts and events.

    Args:
        data_root: the pipeline's data root (default ``MEMORY_DATA_ROOT`` or ``data/``).
        config_path: a TOML file overriding ``defaults.toml`` (default ``MEMORY_CONFIG``).
    """

    def __init__(self, data_root: str | os.PathLike[str] | None = None, *, config_path: str | None = None):
        self.paths = DataRoot.resolve(data_root)
        self.config: MemoryConfig = load_config(config_path)
        self.store = ItemStore(self.paths)
        self._embedder: Embedder | None = None

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = Embedder(self.config)
        return self._embedder

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """The ``k`` active items most relevant to ``query`` (vector + full-text, fused)."""
        table = self.store.table()
        if table is None or not query.strip():
            return []
        return hybrid_search(table, query, self.embedder.embed_one(query), k)

    def inject(self, context: str | Messages, *, max_items: int | None = None,
               token_budget: int | None = None, now: datetime | None = None) -> Injection:
        """The memory block for the agent's next prompt.

        Args:
            context: the recent conversation (messages with ``content``) or plain text.
            max_items: hard cap on lines (default from config: 10).
            token_budget: hard cap on the block's tokens (default from config).
            now: the clock, for ages and decay.
        """
        now = now or datetime.now(timezone.utc)
        text = context if isinstance(context, str) else "\n".join(str(m.get("content", "")) for m in context[-5:])
        cfg = self.config.injection
        hits = self.search(text, k=max(int(max_items or cfg["max_items"]) * 3, 30))
        block, kept, tokens = build_block(
            hits, header=cfg["header"], now=now, max_items=int(max_items or cfg["max_items"]),
            token_budget=int(token_budget or cfg["token_budget"]),
        )
        return Injection(text=block, items=kept, tier="items" if kept else "none", tokens=tokens, query=text)

    def flush_session(self, session_id: str, messages: Messages) -> str | None:
        """Hand a session's transcript to the pipeline (session end, or before compaction).

        Messages need ``role`` and ``content``; ``turn``, ``ts``, ``speaker`` and ``trust``
        are filled in when missing. Credentials are redacted before the file is written
        (``inbox.write_session``).
        Returns the inbox file written, or None when the same transcript was already there.
        """
        from retrieval.schema import ROLES

        now = datetime.now(timezone.utc).isoformat()
        canonical = []
        for index, message in enumerate(messages, start=1):
            role = message.get("role")
            if role not in ROLES:
                raise ValueError(f"message {index}: role {role!r}; expected one of {', '.join(ROLES)}")
            canonical.append({
                "session_id": session_id, "turn": int(message.get("turn", index)), "role": role,
                "content": str(message.get("content", "")), "ts": message.get("ts", now),
                "speaker": message.get("speaker", role),
                "trust": message.get("trust", "untrusted" if role == "tool" else "trusted"),
            })
        path = write_session(self.paths.inbox, session_id, canonical)
        return str(path) if path else None
