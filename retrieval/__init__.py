"""Agent memory, the agent's side: import this, never dagster.

    from retrieval import MemoryClient
    memory = MemoryClient("data")
    print(memory.inject("When is my oil change due?").text)

The package is split by who uses it (``tests/test_layers.py`` holds it to that): the
kernel, ``retrieval/*.py``, is shared with the pipeline (schema, config, text, scoring,
credentials, the stores, the export format…); ``retrieval.agent`` is the agent's client
and the retrieval core; ``retrieval.service`` serves them over HTTP and MCP. The names
below are loaded on first use, so the pipeline, which imports only the kernel, never
loads the agent's side.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from retrieval.agent.client import MemoryClient
    from retrieval.agent.injection import Injection
    from retrieval.agent.search import Hit
    from retrieval.config import MemoryConfig, load_config

_EXPORTS = {
    "Hit": "retrieval.agent.search",
    "Injection": "retrieval.agent.injection",
    "MemoryClient": "retrieval.agent.client",
    "MemoryConfig": "retrieval.config",
    "load_config": "retrieval.config",
}

__all__ = ["Hit", "Injection", "MemoryClient", "MemoryConfig", "load_config"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'retrieval' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
