"""What every asset is given at run time (Dagster resources): the data root and config, the
extractor and embedder to use, and DuckDB."""


import os
from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg
from dagster_duckdb import DuckDBResource

from memory_assets.lib.extraction.base import Extractor
from retrieval.config import MemoryConfig, load_config
from retrieval.embeddings import Embedder
from retrieval.paths import DataRoot


def _config_path() -> str | None:
    """``MEMORY_CONFIG`` (``memory --config`` sets it): a TOML file over ``defaults.toml``."""
    return os.environ.get("MEMORY_CONFIG") or None


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


class WarehouseDuckDB(DuckDBResource):
    """DuckDB for in-run analytics. On an object-store data root its queries read the
    warehouse's files through fsspec (``register_filesystem``: the same credentials as
    every other read, and no DuckDB extension to download)."""

    data_root: str = "data"

    @contextmanager
    def get_connection(self) -> Iterator:
        with super().get_connection() as conn:
            paths = DataRoot.resolve(self.data_root)
            if not paths.is_local:
                from memory_assets.lib import warehouse

                conn.register_filesystem(warehouse.filesystem(paths.uri)[0])
            yield conn


def default_resources(data_root: str | None = None) -> dict[str, object]:
    root = data_root or os.environ.get("MEMORY_DATA_ROOT", "data")
    paths = DataRoot.resolve(root)
    return {
        "memory": MemoryRoot(data_root=paths.uri, config_path=_config_path()),
        "extractor": ExtractorResource(mode=os.environ.get("MEMORY_EXTRACTOR", "auto")),
        "embedder": EmbedderResource(),
        # In-run analytics only; every asset that opens it is in the "duckdb" pool,
        # so there is one writer at a time.
        "duckdb": WarehouseDuckDB(database=str(paths.duckdb), data_root=paths.uri),
    }


def location_config() -> MemoryConfig:
    """The config as the ``memory`` resource reads it, for the Dagster objects built when
    the code location loads (a backfill policy, a sensor's interval), before any run or
    resource exists. Everything else is given the resource's ``config``."""
    return MemoryRoot(config_path=_config_path()).config


# The Celery executor's settings, read from the environment of each process that needs them:
# the run worker that queues a run's steps, and every Celery worker that takes them
# (`dagster-celery worker start -y`, whose file memory_assets/deploy/local.py writes from this).
CELERY_CONFIG = {"broker": {"env": "MEMORY_CELERY_BROKER"}, "backend": {"env": "MEMORY_CELERY_BACKEND"}}
EXECUTORS = ("multiprocess", "celery", "k8s")


def executor(choice: str | None = None) -> dg.ExecutorDefinition:
    """Where a run's steps execute, from ``MEMORY_EXECUTOR``: ``multiprocess`` (the default:
    subprocesses of the run), ``celery`` (Celery workers on the broker ``MEMORY_CELERY_BROKER``,
    on this machine or others) or ``k8s`` (a Kubernetes Job per step). The same code location
    serves all three; only the deployment's environment differs."""
    choice = choice or os.environ.get("MEMORY_EXECUTOR") or "multiprocess"
    if choice == "multiprocess":
        # 2 cores: at most two steps of a run at once (torch and LanceDB use threads inside a step).
        return dg.multiprocess_executor.configured({"max_concurrent": 2})
    if choice == "celery":
        from dagster_celery import celery_executor

        return celery_executor.configured(CELERY_CONFIG)
    if choice == "k8s":
        from dagster_k8s import k8s_job_executor

        # Each step pod gets the code location's image and the run launcher's env and volumes.
        return k8s_job_executor.configured({"max_concurrent": 2})
    raise ValueError(f"MEMORY_EXECUTOR={choice!r}: expected one of {', '.join(EXECUTORS)}")


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources=default_resources(), executor=executor())
