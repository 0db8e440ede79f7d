"""A throwaway PostgreSQL server for tests, from Debian's ``postgresql`` package binaries.

``postgres_server`` (session-scoped fixture) runs ``initdb`` and ``pg_ctl`` on a temporary
folder, listening on a free 127.0.0.1 port with its unix socket in that folder, and
stops it at the end of the session. ``new_database(server)`` gives each test its own
empty database and a ``postgresql+psycopg://`` DSN for it.

PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` user
(``runuser``) on a folder it owns. Without the binaries the test fails and says so:
``.ci/run`` installs the ``postgresql`` package.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

BINARIES = "/usr/lib/postgresql/*/bin"


@dataclass(frozen=True)
class PostgresServer:
    host: str
    port: int
    user: str

    def dsn(self, database: str) -> str:
        return f"postgresql+psycopg://{self.user}@{self.host}:{self.port}/{database}"


def _bin_dir() -> Path:
    found = sorted(glob.glob(f"{BINARIES}/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if not found:
        pytest.fail(f"PostgreSQL server binaries not found ({BINARIES}/initdb): .ci/run must install postgresql "
                    "(apt-get install -y postgresql) before the tests run", pytrace=False)
    return Path(found[-1]).parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run(command: list[str], log: Path | None = None) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode:
        tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
        pytest.fail(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}{done.stderr}{tail}", pytrace=False)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    bin_dir = _bin_dir()
    home = Path(tempfile.mkdtemp(prefix="pg-test-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(home, owner.pw_uid, owner.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data, log, port = home / "data", home / "server.log", _free_port()
    try:
        # --no-sync and fsync=off: a test server's files need not survive a power cut.
        _run([*as_user, str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
              "--encoding=UTF8", "--no-sync"])
        options = f"-p {port} -k {home} -c listen_addresses=127.0.0.1 -c fsync=off"
        _run([*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w", "start"], log)
        yield PostgresServer("127.0.0.1", port, "postgres")
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run([*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                           capture_output=True, timeout=60)
        shutil.rmtree(home, ignore_errors=True)


def new_database(server: PostgresServer) -> str:
    """A new empty database on ``server``; its DSN."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(host=server.host, port=server.port, user=server.user, dbname="postgres",
                         autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return server.dsn(name)
