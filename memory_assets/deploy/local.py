"""``make deploy-local``: the Dagster deployment on one machine, each part its own process.

PostgreSQL (Debian's ``postgresql`` binaries) holds the instance (``deploy/dagster.yaml``);
Redis (Debian's ``redis-server``) is the Celery broker; a Celery worker runs the steps;
``dagster api grpc`` serves the code location; ``dagster-daemon`` runs the schedules,
sensors, backfills and the run queue; ``dagster-webserver`` serves the UI. Every part
listens on 127.0.0.1 only, keeps its state and log under ``<data root>/deploy/``, and is
stopped (SIGTERM to its process group) when this process gets Ctrl-C or SIGTERM.

    python -m memory_assets.deploy.local [--data-root data] [--ui-port 3000] [--no-webserver]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from memory_assets.lib import warehouse

REPO = Path(__file__).resolve().parents[2]
INSTANCE_YAML = Path(__file__).with_name("dagster.yaml")
MODULE = "memory_assets.definitions"
# The name `dagster dev` gives the same module (workspace.yaml), so runs read alike in both UIs.
LOCATION = MODULE
POSTGRES_BIN = "/usr/lib/postgresql/*/bin"
DATABASE = "dagster"
# 2 cores: one step at a time per worker (each step loads the embedding model and uses torch threads).
WORKER_CONCURRENCY = 1
START_TIMEOUT = 180.0
STOP_GRACE = 20.0


class DeployError(Exception):
    """A part could not start; the message says which and how to fix it."""


class Stopped(BaseException):
    """Ctrl-C or SIGTERM reached the launcher."""


@dataclass
class Part:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def log_tail(self, chars: int = 2000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _postgres_bin() -> Path:
    found = sorted(glob.glob(f"{POSTGRES_BIN}/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if not found:
        raise DeployError(f"PostgreSQL server binaries not found ({POSTGRES_BIN}/initdb): "
                          "apt-get install -y postgresql")
    return Path(found[-1]).parent


def _redis_bin() -> str:
    found = shutil.which("redis-server")
    if not found:
        raise DeployError("redis-server not found: apt-get install -y redis-server")
    return found


def _become_subreaper() -> None:
    """Orphaned grandchildren (a run's workers, log tails) become this process's children, so
    ``stop`` finds them even when their parent died first (Linux ``PR_SET_CHILD_SUBREAPER``)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)


def _children_of(pid: int) -> list[int]:
    out = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(stat).read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                out.append(int(Path(stat).parent.name))
    return out


class LocalDeployment:
    """The deployment under ``<data_root>/deploy``: ``start()``, then ``wait()`` or ``stop()``.

    Args:
        data_root: the data root every part reads and writes (``MEMORY_DATA_ROOT``).
        webserver: also start ``dagster-webserver`` (on ``ui_port``, or a free port).
        ui_port: the UI's port; None picks a free one.
    """

    def __init__(self, data_root: str | os.PathLike[str], *, webserver: bool = True, ui_port: int | None = None):
        if "://" in str(data_root):
            raise DeployError(f"--data-root {data_root}: the local deployment keeps PostgreSQL's files under "
                              "the data root, so it must be a folder on this machine")
        self.data_root = Path(data_root).resolve()
        self.state = self.data_root / "deploy"
        self.logs = self.state / "logs"
        self.home = self.state / "dagster"
        self.webserver = webserver
        self.ports = {"postgres": free_port(), "redis": free_port(), "code_server": free_port(),
                      "ui": ui_port or free_port()}
        self.parts: list[Part] = []
        self.env: dict[str, str] = {}
        self._pg_bin: Path | None = None

    # --- the parts, in start order -------------------------------------------------------

    def _as_postgres(self) -> list[str]:
        return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def _start_postgres(self) -> None:
        """PostgreSQL refuses to run as root: as root it runs as the ``postgres`` user on a
        folder that user owns. Over TCP it asks for a password, a new one each start (set over
        the unix socket, where it trusts local users), which only the parts' environment holds."""
        self._pg_bin = bin_dir = _postgres_bin()
        folder, data = self.state / "postgres", self.state / "postgres" / "data"
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(folder, owner.pw_uid, owner.pw_gid)
            if subprocess.run([*self._as_postgres(), "test", "-w", str(folder)]).returncode:
                raise DeployError(f"the postgres user cannot write {folder}: every folder above it must be "
                                  "searchable by others (chmod o+x), or use another --data-root")
        if not (data / "PG_VERSION").exists():
            self._check([*self._as_postgres(), str(bin_dir / "initdb"), "-D", str(data), "-U", DATABASE,
                         "--auth-local=trust", "--auth-host=scram-sha-256", "--encoding=UTF8"], "initdb")
        self._spawn("postgres", [*self._as_postgres(), str(bin_dir / "postgres"), "-D", str(data),
                                 "-p", str(self.ports["postgres"]), "-k", str(folder),
                                 "-c", "listen_addresses=127.0.0.1"])
        self._until("postgres", lambda: self._postgres_ready(folder))
        import psycopg
        from psycopg import sql

        password = secrets.token_urlsafe(24)
        with psycopg.connect(host=str(folder), port=self.ports["postgres"], user=DATABASE, dbname="postgres",
                             autocommit=True) as conn:
            # Utility statements take no bound parameters: the password goes in as a quoted literal.
            conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(DATABASE), sql.Literal(password)))
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
        self.env.update({"DAGSTER_PG_HOST": "127.0.0.1", "DAGSTER_PG_PORT": str(self.ports["postgres"]),
                         "DAGSTER_PG_USER": DATABASE, "DAGSTER_PG_DB": DATABASE, "DAGSTER_PG_PASSWORD": password})

    def _postgres_ready(self, folder: Path) -> bool:
        import psycopg

        try:
            psycopg.connect(host=str(folder), port=self.ports["postgres"], user=DATABASE, dbname="postgres",
                            connect_timeout=2).close()
            return True
        except psycopg.OperationalError:
            return False

    def _start_redis(self) -> None:
        folder = self.state / "redis"
        folder.mkdir(parents=True, exist_ok=True)
        # A broker only: nothing is saved to disk, so a restart starts with an empty queue.
        self._spawn("redis", [_redis_bin(), "--port", str(self.ports["redis"]), "--bind", "127.0.0.1",
                              "--save", "", "--appendonly", "no", "--dir", str(folder)])
        self._until("redis", self._redis_ready)
        broker = f"redis://127.0.0.1:{self.ports['redis']}"
        self.env.update({"MEMORY_EXECUTOR": "celery", "MEMORY_CELERY_BROKER": f"{broker}/0",
                         "MEMORY_CELERY_BACKEND": f"{broker}/1"})

    def _redis_ready(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.ports["redis"]), timeout=2) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def _write_home(self) -> None:
        from memory_assets.defs.runtime import CELERY_CONFIG

        warehouse.copy(INSTANCE_YAML, self.home / "dagster.yaml")
        workspace = {"load_from": [{"grpc_server": {"host": "127.0.0.1", "port": self.ports["code_server"],
                                                    "location_name": LOCATION}}]}
        warehouse.write_text(self.home / "workspace.yaml", yaml.safe_dump(workspace, sort_keys=False))
        # The worker's copy of the executor's settings (`dagster-celery worker start -y`).
        warehouse.write_text(self.home / "celery.yaml", yaml.safe_dump({"execution": {"config": CELERY_CONFIG}}))
        self.env["DAGSTER_HOME"] = str(self.home)
        # Creates or migrates the instance's tables once, before several processes open it.
        self._check([self._bin("dagster"), "instance", "migrate"], "dagster instance migrate")

    def _start_code_server(self) -> None:
        port = str(self.ports["code_server"])
        self._spawn("code-server", [self._bin("dagster"), "api", "grpc", "-m", MODULE, "-d", str(REPO),
                                    "-h", "127.0.0.1", "-p", port, "--location-name", LOCATION])
        health = [self._bin("dagster"), "api", "grpc-health-check", "-h", "127.0.0.1", "-p", port]
        self._until("code-server", lambda: subprocess.run(health, capture_output=True, env=self._env()).returncode == 0)

    def _start_worker(self) -> None:
        self._spawn("celery-worker", [self._bin("dagster-celery"), "worker", "start", "-A", "dagster_celery.app",
                                      "-y", str(self.home / "celery.yaml"), "-n", "memory", "--",
                                      f"--concurrency={WORKER_CONCURRENCY}"])
        part = self.parts[-1]
        self._until("celery-worker", lambda: " ready." in part.log_tail(100_000))

    def _start_daemon(self) -> None:
        self._spawn("daemon", [self._bin("dagster-daemon"), "run", "-w", str(self.home / "workspace.yaml")])
        part = self.parts[-1]
        self._until("daemon", lambda: "configured with the following daemons" in part.log_tail(100_000))

    def _start_webserver(self) -> None:
        import httpx

        self._spawn("webserver", [self._bin("dagster-webserver"), "-w", str(self.home / "workspace.yaml"),
                                  "-h", "127.0.0.1", "-p", str(self.ports["ui"])])

        def ready() -> bool:
            try:
                return httpx.get(f"{self.urls['ui']}/server_info", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        self._until("webserver", ready)

    # --- the whole -----------------------------------------------------------------------

    @property
    def urls(self) -> dict[str, str]:
        out = {"postgres": f"postgresql://{DATABASE}@127.0.0.1:{self.ports['postgres']}/{DATABASE}",
               "broker": f"redis://127.0.0.1:{self.ports['redis']}/0",
               "code_server": f"grpc://127.0.0.1:{self.ports['code_server']}"}
        if self.webserver:
            out["ui"] = f"http://127.0.0.1:{self.ports['ui']}"
        return out

    def start(self) -> None:
        """Every part, each waited for until it answers; a part that cannot start raises
        ``DeployError`` with the end of its log (the parts already started keep running
        until ``stop``)."""
        self.logs.mkdir(parents=True, exist_ok=True)
        self.env = {"MEMORY_DATA_ROOT": str(self.data_root), "HF_HUB_OFFLINE": "1",
                    "TOKENIZERS_PARALLELISM": "false", "GX_ANALYTICS_ENABLED": "false", "PYTHONUNBUFFERED": "1"}
        self._start_postgres()
        self._start_redis()
        self._write_home()
        self._start_code_server()
        self._start_worker()
        self._start_daemon()
        if self.webserver:
            self._start_webserver()
        self._write_manifest()

    def wait(self) -> Part:
        """Blocks until a part exits on its own; returns it."""
        while True:
            for part in self.parts:
                if part.process.poll() is not None:
                    return part
            time.sleep(1)

    def stop(self) -> None:
        """Every part in reverse start order: SIGTERM to its process group (PostgreSQL: a fast
        shutdown), SIGKILL after a grace period, then whatever its group or this process
        still has as children."""
        for part in reversed(self.parts):
            leader = part.process.pid
            with contextlib.suppress(ProcessLookupError, subprocess.TimeoutExpired):
                if part.name == "postgres" and self._pg_bin and part.process.poll() is None:
                    subprocess.run([*self._as_postgres(), str(self._pg_bin / "pg_ctl"), "-D",
                                    str(self.state / "postgres" / "data"), "-m", "fast", "-w", "stop"],
                                   capture_output=True, timeout=60)
                else:
                    os.killpg(leader, signal.SIGTERM)
            try:
                part.process.wait(timeout=STOP_GRACE)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(leader, signal.SIGKILL)
                part.process.wait(timeout=STOP_GRACE)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(leader, signal.SIGKILL)  # the group's other members: a run's workers, log tails
        for orphan in _children_of(os.getpid()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(orphan, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        self.parts.clear()
        warehouse.remove(self.state / "deploy.json")

    # --- plumbing ------------------------------------------------------------------------

    def _bin(self, name: str) -> str:
        return str(Path(sys.executable).with_name(name))

    def _env(self) -> dict[str, str]:
        env = {**os.environ, **self.env}
        # `dagster-celery worker start` runs `celery` from PATH: this interpreter's.
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        return env

    def _spawn(self, name: str, command: Sequence[str]) -> None:
        log = self.logs / f"{name}.log"
        # A child's output, appended as it runs (the one file here that no warehouse call writes).
        with open(log, "ab") as out:
            # A session of its own: Ctrl-C reaches only the launcher, which stops each group in turn.
            process = subprocess.Popen(list(command), cwd=REPO, env=self._env(), stdin=subprocess.DEVNULL,
                                       stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.parts.append(Part(name, process, log))

    def _until(self, name: str, ready) -> None:
        part = next((p for p in self.parts if p.name == name), None)
        deadline = time.monotonic() + START_TIMEOUT
        while not ready():
            if part and part.process.poll() is not None:
                raise DeployError(f"{name} exited {part.process.returncode} while starting; {part.log}:\n"
                                  f"{part.log_tail()}")
            if time.monotonic() > deadline:
                tail = part.log_tail() if part else ""
                raise DeployError(f"{name} did not answer within {START_TIMEOUT:.0f} s; "
                                  f"{part.log if part else ''}:\n{tail}")
            time.sleep(0.5)

    def _check(self, command: Sequence[str], what: str) -> None:
        done = subprocess.run(list(command), cwd=REPO, env=self._env(), capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=300)
        if done.returncode:
            raise DeployError(f"{what} exited {done.returncode}:\n{(done.stdout + done.stderr)[-2000:]}")

    def _write_manifest(self) -> None:
        """``deploy/deploy.json``: what runs where, for a second terminal (or a test) to read."""
        manifest = {"launcher": os.getpid(), "urls": self.urls, "dagster_home": str(self.home),
                    "parts": {p.name: {"pid": p.process.pid, "log": str(p.log)} for p in self.parts}}
        warehouse.write_json(self.state / "deploy.json", manifest, indent=1)


def _raise_stopped(signum: int, frame: object) -> None:
    raise Stopped(signum)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memory_assets.deploy.local", description=__doc__.split("\n")[0])
    parser.add_argument("--data-root", default=os.environ.get("MEMORY_DATA_ROOT", "data"))
    parser.add_argument("--ui-port", type=int, default=None, help="the UI's port (default: a free one)")
    parser.add_argument("--no-webserver", action="store_true", help="everything but the UI")
    args = parser.parse_args(argv)
    try:
        deployment = LocalDeployment(args.data_root, webserver=not args.no_webserver, ui_port=args.ui_port)
    except DeployError as err:
        print(f"deploy-local: {err}", file=sys.stderr)
        return 2
    _become_subreaper()
    # Handlers (not SIG_IGN): children get the default dispositions back on exec, so SIGTERM
    # stops them even when this launcher was started with SIGINT ignored (a background job).
    signal.signal(signal.SIGINT, _raise_stopped)
    signal.signal(signal.SIGTERM, _raise_stopped)
    code = 0
    try:
        started = time.monotonic()
        print(f"starting the deployment under {deployment.state} ...", flush=True)
        deployment.start()
        width = max(len(k) for k in deployment.urls)
        print(f"ready in {time.monotonic() - started:.0f} s; logs in {deployment.logs}/", flush=True)
        for name, url in deployment.urls.items():
            print(f"  {name:<{width}}  {url}", flush=True)
        print("Ctrl-C stops every part.", flush=True)
        part = deployment.wait()
        print(f"{part.name} exited {part.process.returncode}; {part.log}:\n{part.log_tail()}", file=sys.stderr)
        code = 1
    except Stopped:
        print("stopping ...", flush=True)
    except DeployError as err:
        print(f"deploy-local: {err}", file=sys.stderr)
        code = 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        deployment.stop()
    print("stopped.", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
