"""Timed calls and their statistics, and the machine they ran on."""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from retrieval.config import MemoryConfig


def latency_stats(seconds: Sequence[float]) -> dict[str, float]:
    """p50, p95, mean and max in milliseconds."""
    ms = np.asarray(seconds, dtype=np.float64) * 1000.0
    return {"p50": round(float(np.percentile(ms, 50)), 2), "p95": round(float(np.percentile(ms, 95)), 2),
            "mean": round(float(ms.mean()), 2), "max": round(float(ms.max()), 2)}


def machine(config: MemoryConfig) -> dict[str, Any]:
    """The machine a bench ran on: cores, versions, torch and query threads, and how busy it was."""
    import lancedb

    info: dict[str, Any] = {"cpus": os.cpu_count(), "platform": platform.platform(),
                            "python": platform.python_version(), "lancedb": lancedb.__version__}
    try:
        import torch

        info["torch_threads"] = torch.get_num_threads()
        info["query_threads"] = int(config.embedding.query_threads) or info["torch_threads"]
        info["idle_query_threads"] = int(config.embedding.idle_query_threads)
    except ImportError:
        pass
    if hasattr(os, "getloadavg"):
        # The numbers are only as good as the machine was idle: record how busy it was.
        info["load_avg_1m"] = round(os.getloadavg()[0], 2)
    return info


def time_call(call: Callable[[], Any]) -> float:
    """The seconds one call took."""
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def time_calls(calls: Sequence[Callable[[], Any]], warm: int = 5) -> tuple[dict[str, float], list[Any]]:
    """The first ``warm`` calls untimed, then every call timed: (``latency_stats``, the results)."""
    for call in calls[:warm]:
        call()
    seconds, results = [], []
    for call in calls:
        start = time.perf_counter()
        results.append(call())
        seconds.append(time.perf_counter() - start)
    return latency_stats(seconds), results
