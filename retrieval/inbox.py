"""The agent's only way in: append a transcript or an event as a new file.

Every write goes to a temporary name in the same directory and is renamed into place
(``retrieval.files.atomic_write``), so the pipeline never sees half a file (DESIGN principle 1); on an object store each
write is one new object (one PUT, whole or absent), so agents on many machines append
without coordinating. Nothing here opens a store or loads the config: the caller passes
the PII kinds to redact and the default namespace.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from retrieval import credentials
from retrieval.files import atomic_write
from retrieval.names import child
from retrieval.privacy import withhold_off_the_record


def encode_jsonl(messages: Iterable[Mapping[str, Any]]) -> bytes:
    return "".join(json.dumps(m, ensure_ascii=False, sort_keys=True) + "\n" for m in messages).encode()


def redacted(value: Any, pii: tuple[str, ...]) -> Any:
    """``value`` with every string in it redacted, keys included (event payloads, a
    checkpoint's tool calls and state are nested JSON)."""
    if isinstance(value, str):
        return credentials.redact(value, pii=pii)
    if isinstance(value, Mapping):
        return {redacted(str(k), pii): redacted(v, pii) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redacted(v, pii) for v in value]
    return value


def write_session(inbox: Path, session_id: str, messages: list[Mapping[str, Any]], *,
                  pii: Iterable[str], default_namespace: str) -> Path | None:
    """Drop one session's canonical messages into the inbox.

    This is where a message first enters, so the user's privacy is applied here and no
    store, log or export downstream can hold what it removes: credentials and the PII
    kinds ``pii`` (the config's ``[privacy] redact``: ``credentials.pii_from_config``) are
    redacted, and an exchange the user asked not to be remembered is withheld
    (``retrieval.privacy.withhold_off_the_record``). A message without a namespace is
    ``default_namespace``'s (``MemoryConfig.default_namespace``). The file is named by its
    content hash, so dropping the same transcript twice writes nothing new. Returns the
    path, or None when the file was already there.
    """
    _refuse_disabled(inbox, messages, default_namespace)
    kinds = tuple(pii)
    kept = withhold_off_the_record(messages)
    data = encode_jsonl({**m, "content": credentials.redact(str(m.get("content", "")), pii=kinds)} for m in kept)
    digest = hashlib.sha256(data).hexdigest()[:16]
    path = child(inbox, session_id) / f"{digest}.jsonl"
    if path.exists():
        return None
    return atomic_write(path, data)


def _refuse_disabled(inbox: Path, messages: list[Mapping[str, Any]], default_namespace: str) -> None:
    """Nothing is captured for a namespace whose memory is off (``memory disable``):
    ``retrieval.disabled.MemoryDisabled``. A message without a namespace is the default one's."""
    from retrieval.disabled import disabled_namespaces, refuse_if_disabled
    from retrieval.paths import DataRoot

    root = DataRoot(inbox.parent)
    if not disabled_namespaces(root):  # the usual case: nothing is off
        return
    for namespace in sorted({str(m.get("namespace") or default_namespace) for m in messages}):
        refuse_if_disabled(root, namespace)


def write_event(events_dir: Path, event: Mapping[str, Any], *, pii: Iterable[str], durable: bool = True) -> Path:
    """Append one feedback event as its own file (never a shared log).

    Its payload (a query, the new wording of an update) is redacted like a transcript
    (``pii``: the PII kinds, as ``write_session``).
    The file name carries the event type, so a reader can find one type (``fired``)
    without opening every file.
    """
    clean = {**event, "payload": redacted(event.get("payload") or {}, tuple(pii))}
    name = f"{event.get('ts', '')}-{event.get('type', 'event')}-{uuid.uuid4().hex}.json".replace(":", "")
    return atomic_write(events_dir / name, json.dumps(clean, ensure_ascii=False).encode(), durable=durable)


def write_import(folder: Path, records: Iterable[Mapping[str, Any]], *, stamp: str,
                 pii: Iterable[str]) -> tuple[Path, bool]:
    """Append one validated import (``memory import``: a header and its records) as its
    own JSONL file, every string redacted like a transcript (``pii``: as ``write_session``).

    Named ``<stamp>-<content hash>.jsonl``: the stamp orders imports (an earlier import
    wins a tie between two of them), the hash makes the same import written twice one
    file. The hash leaves out the header's time (``exported_at``), so unchanged memories
    exported or migrated again later are the same import. Returns the file, and whether
    it was written now (False: already there).
    """
    kinds = tuple(pii)
    lines = [json.dumps(redacted(r, kinds), ensure_ascii=False, sort_keys=True) for r in records]
    data = "".join(line + "\n" for line in lines).encode()
    header = {k: v for k, v in json.loads(lines[0]).items() if k != "exported_at"} if lines else {}
    digest = hashlib.sha256("\n".join([json.dumps(header), *lines[1:]]).encode()).hexdigest()[:16]
    existing = sorted(folder.glob(f"*-{digest}.jsonl")) if folder.exists() else []
    if existing:
        return existing[0], False
    return atomic_write(folder / f"{stamp}-{digest}.jsonl", data), True
