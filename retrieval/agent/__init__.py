"""The agent's side of ``retrieval``: ``MemoryClient`` (``client.py``) and what only it,
the service and the evals use — ``retrieve(context, stores, config, options, now)``, the
pure retrieval core (``retrieve.py``, over the warm ``Stores``), its candidate lists,
search, the graph walk, the one visibility rule (``view.py``), the injected block, the
trust pass, the query rewrite, the pending overlay (read-your-writes), signals and lineage.

It imports the kernel (``retrieval/*.py``) and never the service (``retrieval.service``);
the kernel never imports it (``tests/test_layers.py``).
"""
