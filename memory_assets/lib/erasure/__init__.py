"""The right to be forgotten: a namespace's or one item's words removed from every store
under the data root, every kept version included (``memory erase``).

``forget`` retires an item and keeps the row, purged, for the audit trail; an erasure
leaves no content anywhere, only an audit row per erased item and namespace (id,
namespace, when, why, by whom: ``erasure_log``). It is a pipeline operation (DESIGN
principle 1): an agent or the CLI appends an ``erase`` event (``MemoryClient.erase``),
and the ``erase`` job applies it in three steps over the data root:

1. ``erase_sources`` (the ``erasure`` asset): the words leave what every build reads —
   inbox files, resources (a namespace's turns are deleted; the turns one item came from
   are kept with their content replaced by ``[ERASED]``, so the other items they gave
   still point back to a turn), extracted facts, rejections, quarantine records,
   extraction runs, imports, feedback events (in ``events/`` and the event log), the
   merge logs, the archive, archive clusters, forward triggers and the per-turn
   checkpoints. The ids to erase are written to ``erasure_log/pending.json``.
2. The items build and publish, the lessons, ``MEMORY.md`` and the summaries (rebuilt
   from scratch) run as usual: nothing they read holds the words any more.
3. ``purge_versions`` (the ``erased_versions`` asset), once the clean version is
   published: every kept version is rewritten without the erased rows (item and graph
   versions, archived summary pages), the LanceDB tables keep only their latest version
   (``optimize(cleanup_older_than=0)``: old versions are readable with ``checkout``), the
   rollback history keeps only what is still there, and the audit rows are written.

An erasure therefore ends the rollback history: every version before it held the words.
A namespace is erased as of when the erasure runs; what its user says afterwards is
remembered again. Everything here is a pure function of the data root and ``now``;
every file is written through the warehouse.
"""


from memory_assets.lib.erasure.sources import Erased, erase_sources
from memory_assets.lib.erasure.targets import (ERASED, LOG_SCHEMA, ErasureIncomplete, Request, Target,
                                               erasure_log, pending, requests, resolve)
from memory_assets.lib.erasure.versions import Purged, purge_versions, scrub_graph

__all__ = ["ERASED", "LOG_SCHEMA", "Erased", "ErasureIncomplete", "Purged", "Request", "Target", "erase_sources",
           "erasure_log", "pending", "purge_versions", "requests", "resolve", "scrub_graph"]
