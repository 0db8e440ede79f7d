"""Agent memory, the agent's side: import this, never dagster.

    from retrieval import MemoryClient
    memory = MemoryClient("data")
    print(memory.inject("When is my oil change due?").text)
"""

from retrieval.client import MemoryClient
from retrieval.config import MemoryConfig, load_config
from retrieval.injection import Injection
from retrieval.search import Hit

__all__ = ["Hit", "Injection", "MemoryClient", "MemoryConfig", "load_config"]
