"""What every asset is given at run time (Dagster resources): the data root and config, the
extractor and embedder to use, and DuckDB."""


import os

import dagster as dg
from dagster_duckdb import DuckDBResource

from memory_assets.lib.extraction.base import Extractor
from retrieval.config import MemoryConfig, load_config
from retrieval.embeddings import Embedder
from retrieval.paths import DataRoot


class MemoryRoot(dg.ConfigurableResource):
    """The data root every asset reads and writes, and the config in force."""

    data_root: str = "data"
    config_path: str | None = None

    @property
    def paths(self) -> DataRoot:
        return DataRoot.resolve(self.data_root)

    @property
    def config(self) -> MemoryConfig:
        return load_config(self.config_path)


class ExtractorResource(dg.ConfigurableResource):
    """``auto`` uses the LLM when it is enabled (``[llm] enabled = true`` or
    ``MEMORY_EXTRACTOR=llm``), the offline rules otherwise; a set OPENAI_API_KEY alone
    switches nothing."""

    mode: str = "auto"

    def build(self, config: MemoryConfig) -> Extractor:
        from memory_assets.lib.extraction.session import choose_extractor

        return choose_extractor(self.mode, config)


class EmbedderResource(dg.ConfigurableResource):
    """The embedding model named in the config (local MiniLM by default)."""

    def build(self, config: MemoryConfig) -> Embedder:
        return Embedder(config)


def default_resources(data_root: str | None = None) -> dict[str, object]:
    root = data_root or os.environ.get("MEMORY_DATA_ROOT", "data")
    paths = DataRoot.resolve(root)
    return {
        "memory": MemoryRoot(data_root=str(paths.root), config_path=os.environ.get("MEMORY_CONFIG") or None),
        "extractor": ExtractorResource(mode=os.environ.get("MEMORY_EXTRACTOR", "auto")),
        "embedder": EmbedderResource(),
        # In-run analytics only; every asset that opens it is in the "duckdb" pool,
        # so there is one writer at a time.
        "duckdb": DuckDBResource(database=str(paths.duckdb)),
    }


@dg.definitions
def resources() -> dg.Definitions:
    # 2 cores: at most two steps of a run at once (torch and LanceDB use threads inside a step).
    return dg.Definitions(
        resources=default_resources(),
        executor=dg.multiprocess_executor.configured({"max_concurrent": 2}),
    )
