"""The served application, built once per worker process.

``memory serve`` runs one process, or ``[service] workers`` (``--workers``) uvicorn worker
processes on one port, each with its own model and snapshot in memory: Python runs one
thread at a time per process, so two processes are what use this machine's two cores.
Everything the workers share lives outside them: keys, the write counts behind 429 and
the checkpoints in the service database, the pending writes in the inbox.
"""

from __future__ import annotations

import gc
import os
from typing import Any

from retrieval.paths import DataRoot


def build(data_root: str | os.PathLike[str] | None = None) -> tuple[Any, Any]:
    """(the ``Service``, its FastAPI app with the MCP server mounted), warmed up: the model,
    the published snapshot, the graph and the rules are loaded before the first request
    instead of during it (seconds at 100k items)."""
    from retrieval.service.core import Service
    from retrieval.service.http import create_app
    from retrieval.service.mcp_server import build_mcp

    service = Service.for_root(DataRoot.resolve(data_root).root)
    client = service.client
    client.scoped(None).inject("warm up", record=False)
    # The snapshot, the graph index and the model are hundreds of thousands of long-lived
    # objects: a full garbage collection walked them all, stalling every request for 0.3–1 s
    # at 100k items. Frozen, the collector skips them (and the next snapshot's, on reload).
    gc.freeze()
    client.stores.after_reload = gc.freeze
    return service, create_app(service, mcp=build_mcp(service))


def app_from_env() -> Any:
    """The app of one worker process (uvicorn's ``factory``): the data root and config
    come from ``MEMORY_DATA_ROOT`` and ``MEMORY_CONFIG``, which ``memory serve`` sets."""
    return build(os.environ.get("MEMORY_DATA_ROOT"))[1]
