"""The ``memory`` command: a thin shell over ``memory_assets.lib`` and ``retrieval``.

``main`` parses the command line (``cli/main.py``); ``runner`` runs pipeline work
in-process, ``instance`` is the local Dagster instance under a data root, ``recovery``
cleans up after a crash and ``stats`` counts what is stored.
"""

from memory_assets.cli.main import main

__all__ = ["main"]
