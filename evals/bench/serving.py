"""A real ``memory serve`` in its own process (uvicorn on a free 127.0.0.1 port), started and
waited for: the service tests and ``memory bench service`` use it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def create_key(root: Path, agent: str, *extra: str, env: dict[str, str] | None = None) -> str:
    """A key from the real ``memory keys create`` (its stdout is the key alone)."""
    done = subprocess.run([sys.executable, "-m", "memory_assets.cli", "--data-root", str(root), "keys", "create",
                           agent, *extra], capture_output=True, text=True, env=env or service_env(), check=True)
    return done.stdout.strip()


def service_env(config: Path | None = None) -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "GX_ANALYTICS_ENABLED": "false"}
    env.pop("MEMORY_CHECKPOINT_DSN", None)
    if config is not None:
        env["MEMORY_CONFIG"] = str(config)
    return env


@dataclass
class Server:
    root: Path
    port: int
    process: subprocess.Popen
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self, key: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)

    def kill(self) -> None:
        """kill -9 of the server and its worker processes: no shutdown handler runs."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()  # uvicorn stops its workers, then itself
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self.kill()  # whatever is left of the group


def start(root: Path, key: str, *, config: Path | None = None, port: int | None = None,
          timeout: float = 90.0, workers: int | None = None) -> Server:
    """Start ``memory serve`` on ``root`` (``workers``: default ``[service] workers``) and
    wait until it answers ``key``. The server leads its own process group, so ``kill``
    reaches its workers too."""
    port = port or free_port()
    log = root.parent / f"serve-{port}.log"
    extra = ["--workers", str(workers)] if workers else []
    process = subprocess.Popen(
        [sys.executable, "-m", "memory_assets.cli", "--data-root", str(root), "serve", "--port", str(port), *extra],
        stdout=log.open("wb"), stderr=subprocess.STDOUT, env=service_env(config), cwd=REPO, start_new_session=True)
    server = Server(root, port, process, log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"memory serve exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if server.client(key).get("/v1/whoami").status_code == 200:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    server.stop()
    raise RuntimeError(f"memory serve did not answer within {timeout:.0f} s:\n{log.read_text()[-3000:]}")
