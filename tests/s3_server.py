"""A throwaway S3-compatible server for tests: ``moto`` in server mode on 127.0.0.1
(``evals/bench/s3.py``, which the benches' ``--s3`` start too).

``s3_server`` (module-scoped fixture) starts it on a free port and stops it at the end.
``S3Server.env`` is what a process needs to reach it, through the standard ``AWS_*``
variables only: nothing in the product names the server. ``bucket(name)`` creates a bucket.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evals.bench.s3 import S3Server, S3Unavailable, local_s3


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory) -> Iterator[S3Server]:
    try:
        with local_s3(tmp_path_factory.mktemp("moto") / "moto.log") as server:
            yield server
    except S3Unavailable as error:
        pytest.fail(str(error), pytrace=False)
