"""Export and import for the service: the same format as ``memory export`` / ``memory
import`` (``retrieval.interchange``), limited to the caller's namespace.

An import is appended under ``imports/`` like the CLI's, redacted; the next pipeline run
adopts it behind the usual checks (the one-writer rule). Every item in it must be of the
key's own namespace, and an item that names none is given the key's: a key cannot write
another namespace's memory by importing it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone

from retrieval import inbox, interchange
from retrieval.agent.client import MemoryClient
from retrieval.credentials import pii_from_config
from retrieval.files import stamp
from retrieval.schema import AGENT_STATED, agent_written
from retrieval.service.core import FORBIDDEN, Forbidden


def export(client: MemoryClient, namespace: str, *, embeddings: bool = False) -> Iterator[str]:
    """The published memory of ``namespace`` as export lines (JSONL), header first."""
    return interchange.export_lines(client.paths, client.config, datetime.now(timezone.utc), namespace=namespace,
                                    embeddings=embeddings)


def import_text(client: MemoryClient, namespace: str, text: str) -> dict:
    """Validate an export's lines and append them for the next pipeline run; bad lines are
    named and skipped, an item of another namespace refuses the whole import (403)."""
    parsed = interchange.parse(text.splitlines(), "request body")
    foreign = sorted({r.namespace for r in parsed.items if getattr(r, "namespace", None) not in (None, namespace)})
    if foreign:
        raise Forbidden(FORBIDDEN.format(what="import into", namespace=foreign[0]))
    out = {"records": len(parsed.items), "errors": [str(e) for e in parsed.errors], "written": False}
    if parsed.items:
        now = datetime.now(timezone.utc)
        header, *items = [json.loads(json.dumps(r)) for r in parsed.records()]
        # An item that names no namespace is the key's: left empty, the pipeline would
        # adopt it into the default namespace, which this key may not write.
        records = [{**header, "namespace": namespace}, *({**item, "namespace": namespace} for item in items)]
        if agent_written(client.view.author):
            # Another agent's import is its claim, whatever provenance its lines state.
            records = [{**r, "provenance": AGENT_STATED} if r.get("type") == "item" else r for r in records]
        _, out["written"] = inbox.write_import(client.paths.imports, records, stamp=stamp(now),
                                               pii=pii_from_config(client.config))
    return out
