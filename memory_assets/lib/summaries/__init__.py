"""Category summaries: tier 1 of retrieval, one short markdown page per category.

* ``writing`` — how a summary is written: which facts it may hold, the offline
  (extractive) and LLM summarizers, their validation (``summarize``, ``rebuild``);
* ``pages`` — how summaries are published: the markdown pages with their archived
  versions, the LanceDB table, and ``update_summaries``, the nightly step.
"""

from memory_assets.lib.summaries.pages import (SUMMARY_SCHEMA, SummariesRefused, SummariesUpdate, archive_versions,
                                               current_summaries, summaries_frame, update_summaries)
from memory_assets.lib.summaries.writing import (PROMPT_NAME, Summary, SummaryFailed, chat_client, missing_citations,
                                                 rebuild, render_request, summarize)

__all__ = [
    "PROMPT_NAME", "SUMMARY_SCHEMA", "SummariesRefused", "SummariesUpdate", "Summary", "SummaryFailed",
    "archive_versions", "chat_client", "current_summaries", "missing_citations", "rebuild", "render_request",
    "summaries_frame", "summarize", "update_summaries",
]
