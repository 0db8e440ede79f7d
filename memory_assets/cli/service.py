"""``memory serve`` and ``memory keys``: the service's shell (``retrieval.service``).

The one pipeline-side module that imports the service: it starts it and manages its keys
(``tests/test_layers.py`` allows this import).
"""

from __future__ import annotations

import argparse
import errno
import os
import socket
import sys
from collections.abc import Callable

KEY_ENV = "MEMORY_API_KEY"


def _keys(data_root: str):
    from retrieval.config import load_config
    from retrieval.database import engine_for
    from retrieval.paths import DataRoot
    from retrieval.service.keys import KeyStore

    return KeyStore(engine_for(DataRoot.resolve(data_root), load_config()))


class PortRefused(Exception):
    """``memory serve`` cannot listen where it was asked to; the message says what to pass."""


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port``, as uvicorn binds one (SO_REUSEADDR, IPv6 for a host
    with a colon), handed to uvicorn as it is: a busy port fails here, at once, before the
    model loads, and nothing can take the port between this check and the server starting."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortRefused(f"{host}:{port} is already in use; stop what listens there or pick another "
                              "port with --port N") from None
        raise PortRefused(f"cannot listen on {host}:{port} ({exc.strerror or exc}); pick another with --host "
                          "or --port") from None
    sock.set_inheritable(True)  # the worker processes serve it too
    return sock


def cmd_serve(args: argparse.Namespace) -> int:
    from retrieval.service.mcp_server import build_mcp

    if args.mcp_stdio:
        from retrieval.service.core import Service

        service = Service.for_root(args.data_root)
        presented = os.environ.get(KEY_ENV)
        if service.keys.verify(presented) is None:
            print(f"memory serve --mcp-stdio: set {KEY_ENV} to a live key (`memory keys create AGENT`)", file=sys.stderr)
            return 2
        build_mcp(service, stdio_key=presented).run(transport="stdio")
        return 0
    import uvicorn

    from retrieval.config import load_config
    from retrieval.paths import DataRoot
    from retrieval.service.app import build

    config = load_config()
    host = args.host or config.service.host
    workers = config.service.workers if args.workers is None else args.workers
    try:
        sock = listen(host, config.service.port if args.port is None else args.port)
    except PortRefused as exc:
        print(f"memory serve: {exc}", file=sys.stderr)
        return 2
    port = sock.getsockname()[1]  # the one chosen for --port 0
    root = DataRoot.resolve(args.data_root).root
    print(f"memory serve: http://{host}:{port}/v1 and MCP at http://{host}:{port}/mcp/ "
          f"({workers} worker{'s' if workers > 1 else ''}, data root {root})", file=sys.stderr, flush=True)
    options = {"host": host, "port": port, "log_level": args.log_level, "access_log": args.log_level == "debug"}
    with sock:
        if workers > 1:
            from uvicorn.supervisors import Multiprocess

            os.environ["MEMORY_DATA_ROOT"] = str(root)  # each worker builds its app from the environment
            Multiprocess(uvicorn.Config("retrieval.service.app:app_from_env", factory=True, workers=workers, **options),
                         sockets=[sock]).run()
        else:
            server = uvicorn.Server(uvicorn.Config(build(root)[1], **options))
            try:
                server.run(sockets=[sock])
            except KeyboardInterrupt:  # Ctrl-C is how a server is stopped: not an error
                pass
            if not server.started:
                return 1  # the app failed to start (uvicorn logged why)
    return 0


def cmd_keys(args: argparse.Namespace) -> int:
    import json

    from retrieval.service.keys import KeyRefused

    keys = _keys(args.data_root)
    try:
        if args.action == "create":
            plain, record = keys.create(args.agent, args.namespace, grants=tuple(args.grant or ()),
                                        writes_per_minute=args.writes_per_minute, role=args.role)
            if args.json:
                print(json.dumps({"key": plain, **record.as_dict()}, indent=2))
            else:
                print(plain)
                print(f"agent {record.agent} ({'the user' if record.role == 'user' else 'another agent'}), "
                      f"namespace {record.namespace}, reads also {', '.join(record.grants) or '-'}"
                      f" (key id {record.key_id}; shown once, only its hash is stored)", file=sys.stderr)
        elif args.action == "list":
            rows = [k.as_dict() for k in keys.list(revoked=args.all)]
            if args.json:
                print(json.dumps(rows, indent=2))
            for k in rows if not args.json else []:
                print(f"{k['key_id']}  {k['agent']:<20} {k['namespace']:<20} {k['role']:<5} grants={','.join(k['grants']) or '-'}"
                      f"  created {k['created_at'][:19]}" + (f"  REVOKED {k['revoked_at'][:19]}" if k["revoked_at"] else ""))
        else:
            record = keys.revoke(args.key_id)
            print(f"revoked {record.key_id} ({record.agent}); refused within seconds by a running server")
    except KeyRefused as exc:
        print(f"KeyRefused: {exc}", file=sys.stderr)
        return 1
    return 0


def add_commands(command: Callable[..., argparse.ArgumentParser]) -> None:
    p = command("serve", help="the HTTP API and MCP server (127.0.0.1 unless --host says otherwise)")
    p.add_argument("--host", default=None, help="interface to bind (default [service] host: 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port (default [service] port; 0: any free port)")
    p.add_argument("--mcp-stdio", action="store_true",
                   help=f"serve MCP over stdin/stdout for a local agent; the key comes from ${KEY_ENV}")
    p.add_argument("--workers", type=int, default=None,
                   help="worker processes (default [service] workers; each holds the model and the snapshot)")
    p.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    p.set_defaults(func=cmd_serve)

    p = command("keys", help="API keys for the service: create, list, revoke")
    keys = p.add_subparsers(dest="action", required=True)
    create = keys.add_parser("create", help="a new key for an agent (printed once)")
    create.add_argument("agent")
    create.add_argument("--namespace", default=None, help="the namespace it reads and writes (default: the agent's name)")
    create.add_argument("--grant", action="append", metavar="NAMESPACE", help="a shared namespace it may read (repeat)")
    create.add_argument("--writes-per-minute", type=int, default=None, help="default [service] writes_per_minute")
    create.add_argument("--role", choices=["user", "agent"], default=None,
                        help="user: the user's own agent, its writes are the user's word; agent: another agent, "
                             "its writes are its claims (agent_stated, never above the user). Default: user when "
                             "the agent is named after the namespace, else agent")
    create.add_argument("--json", action="store_true")
    listing = keys.add_parser("list", help="keys (never their secrets)")
    listing.add_argument("--all", action="store_true", help="revoked keys too")
    listing.add_argument("--json", action="store_true")
    revoke = keys.add_parser("revoke", help="revoke a key by its id")
    revoke.add_argument("key_id")
    p.set_defaults(func=cmd_keys)
