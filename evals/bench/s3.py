"""An S3-compatible server on 127.0.0.1 for benches and tests: ``moto`` in server mode.

``local_s3()`` starts ``python -m moto.server`` on a free port (moto comes with the
``dev`` extra), waits until it answers, and stops it on exit. ``S3Server.env`` is what a
process needs to reach it, through the standard variables only (``AWS_ENDPOINT_URL``,
the keys, the region, and ``AWS_ALLOW_HTTP`` for LanceDB's and polars' object store over
plain HTTP): nothing in the product names the server. The benches' ``--s3`` and
``tests/s3_server.py`` use it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from evals.bench.serving import free_port


class S3Unavailable(RuntimeError):
    """The local S3-compatible server did not start (moto missing, or it died)."""


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

    def size(self, bucket: str, prefix: str = "") -> int:
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return sum(o["Size"] for page in pages for o in page.get("Contents", []))


@contextmanager
def local_s3(log: Path | None = None) -> Iterator[S3Server]:
    """A moto S3 server on 127.0.0.1 for the duration of the block."""
    port = free_port()
    log = log or Path(tempfile.mkstemp(prefix="moto-", suffix=".log")[1])
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
                raise S3Unavailable(f"moto server did not start (pip install 'moto[server]'): "
                                    f"{log.read_text(errors='replace')[-2000:]}") from None
            time.sleep(0.2)
    try:
        yield S3Server(f"http://127.0.0.1:{port}")
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)


@contextmanager
def s3_env(server: S3Server, local_state: Path | None = None) -> Iterator[None]:
    """This process's environment (and its children's) pointed at ``server`` for the block,
    and, given ``local_state``, an object-store root's disk-only state there
    (``MEMORY_LOCAL_STATE``)."""
    env = {**server.env, **({"MEMORY_LOCAL_STATE": str(local_state)} if local_state else {})}
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
