"""The ``memory`` command: a thin shell over ``memory_assets.lib`` and ``retrieval``.

``main`` parses the command line (``cli/main.py``) and refuses, in one line, a data root
the command cannot use (``root_access``: which commands create, write or only read it);
``runner`` runs pipeline work in-process, ``interrupts`` stops it cleanly between steps on
Ctrl-C, ``instance`` is the local Dagster instance under a data root, ``recovery`` cleans
up after a crash and ``stats`` counts what is stored.
"""

from memory_assets.cli.main import main

__all__ = ["main"]
