"""A throwaway S3-compatible server for tests: ``moto`` in server mode on 127.0.0.1.

``s3_server`` (module-scoped fixture) starts ``python -m moto.server`` on a free port,
waits until it answers, and stops it at the end. ``S3Server.env`` is what a process
needs to reach it, through the standard variables only (``AWS_ENDPOINT_URL``, the keys,
the region, and ``AWS_ALLOW_HTTP`` for LanceDB's and polars' object store over plain
HTTP): nothing in the product names the server. ``bucket(name)`` creates a bucket.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class S3Server:
    endpoint: str

    @property
    def env(self) -> dict[str, str]:
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing-secret", "AWS_REGION": "us-east-1",
                "AWS_DEFAULT_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id="testing",
                            aws_secret_access_key="testing-secret", region_name="us-east-1")

    def bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory) -> Iterator[S3Server]:
    port = _free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"moto server did not start: {log.read_text(errors='replace')[-2000:]}", pytrace=False)
            time.sleep(0.2)
    try:
        yield S3Server(f"http://127.0.0.1:{port}")
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
