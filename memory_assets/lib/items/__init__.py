"""Items: extracted facts become the canonical memory.

``consolidation`` runs the stage (facts to items, feedback folded, duplicates merged,
supersession), through ``gate`` (what may become an item), ``dedup``, ``supersession``
(both compare items a block at a time through ``similarity``) and ``feedback``; ``source_text`` is each item's full-text search text; ``publish`` is
write–audit–publish for the item store.
"""
