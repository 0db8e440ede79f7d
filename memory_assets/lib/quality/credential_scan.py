"""Which texts hold a credential, scanning each distinct text once per version of the rules.

The patterns live in ``retrieval.credentials`` (their one home); running all of them
costs about 40 µs per text, so 100k items would take 4 s on every rebuild. A
``ScanLedger`` remembers the digests of texts already scanned clean under the current
rules — keyed by the exact text, not the item's normalized ``content_hash`` — so a
rebuild only scans what is new, the way unchanged text is never embedded twice. Any
edit of ``retrieval/credentials.py`` changes the rules version and starts a fresh
ledger, so nothing is trusted that the current rules have not seen. The ledger holds
digests, never text, and only those of the last version scanned, so a forgotten
memory leaves nothing behind in it.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from collections.abc import Iterable
from pathlib import Path

from retrieval.paths import location

import polars as pl

from retrieval import credentials, secret_values
from memory_assets.lib import warehouse


@lru_cache(maxsize=1)
def rules_version() -> str:
    """A digest of the credential rules' source (the patterns and the value tests): a new
    rule invalidates every ledger."""
    digest = hashlib.sha256()
    for module in (credentials, secret_values):
        digest.update(Path(module.__file__).read_bytes())
    return digest.hexdigest()[:16]


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def _first_kind(text: str) -> str | None:
    found = credentials.find_credentials(text)
    return found[0].kind if found else None


class ScanLedger:
    """Digests of texts known to be credential-free under ``rules_version()``.

    Args:
        clean: digests already known clean.
        path: where ``save`` writes the ledger (None: kept in memory only).
    """

    def __init__(self, clean: Iterable[str] | pl.Series | None = None, path: Path | None = None):
        self.known = (clean if isinstance(clean, pl.Series)
                      else pl.Series("digest", list(clean or ()), dtype=pl.String)).rename("digest")
        self.path = path
        self.last_clean = pl.Series("digest", [], dtype=pl.String)
        self.scanned = 0

    @classmethod
    def load(cls, folder: Path) -> "ScanLedger":
        """The ledger under ``folder`` for the current rules (empty if there is none yet)."""
        path = location(folder) / f"credential_scan-{rules_version()}.parquet"
        known = warehouse.read_frame(path)
        return cls(known["digest"] if known is not None else None, path)

    def kinds(self, texts: pl.Series) -> pl.Series:
        """For each text, the first credential kind in it, or null; remembers the clean ones."""
        values = texts.fill_null("").to_list()
        digests = pl.Series("digest", [_digest(t) for t in values], dtype=pl.String)
        unseen = ~digests.is_in(self.known.implode()) if len(self.known) else pl.Series([True] * len(values), dtype=pl.Boolean)
        # Texts with none of the rules' literal anchors cannot match: only the rest are scanned.
        text = texts.fill_null("")
        anchored = (text.str.to_lowercase().str.contains_any(list(credentials.ALL_ANCHORS))
                    | text.str.contains(r"[^\x00-\x7F]") | text.str.contains(credentials.PII_PRECHECK)
                    | text.str.contains(credentials.ENCODED_PRECHECK))
        todo = (unseen & anchored).arg_true().to_list()
        out: list[str | None] = [None] * len(values)
        for i in todo:
            out[i] = _first_kind(values[i])
        self.scanned += int(unseen.sum())
        kinds = pl.Series("credential", out, dtype=pl.String)
        self.last_clean = digests.filter(kinds.is_null()).unique()
        return kinds

    def remember(self) -> bool:
        """Know exactly the last scan's clean texts from now on; False if nothing changed."""
        if not self.scanned and len(self.last_clean) == len(self.known):
            return False
        self.known = self.last_clean.sort()
        self.scanned = 0
        return True

    def save(self) -> None:
        """``remember``, then write the ledger (atomic rename) and drop other rules' ledgers."""
        if not self.remember() or self.path is None:
            return
        warehouse.write_frame(self.path, pl.DataFrame({"digest": self.known}))
        for stale in warehouse.files(self.path.parent, "credential_scan-*.parquet"):
            if stale != self.path:
                warehouse.remove(stale)


def credential_kinds(texts: pl.Series, ledger: ScanLedger | None = None) -> pl.Series:
    """The first credential kind in each text (null when clean); scans every text without a ledger."""
    return (ledger or ScanLedger()).kinds(texts)
