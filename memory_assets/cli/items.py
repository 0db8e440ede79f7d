"""``memory list / show / edit / forget`` (the items, one by one), ``memory erase`` (the
right to be forgotten) and ``memory disable / enable`` (memory off for a namespace).

The operator's view: every namespace (``MemoryClient(root, namespace="*")``). Edits and
forgets are feedback events that readers apply at once (``retrieval.corrections``) and the
next ``memory materialize`` publishes; an erasure runs the
``erase`` job at once (``lib/erasure.py``); disabling writes ``settings/disabled.json``,
which agents read (``retrieval/disabled.py``).

Edits, pins and forgets go through ``MemoryClient`` (the agent's side, ``retrieval.agent``),
as the operator: the same events an agent appends, one code path for both
(``tests/test_layers.py`` allows this import).
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

Command = Callable[..., argparse.ArgumentParser]

# ``memory list`` columns: the short id the block shows, then what the item says.
_LINE = "{ref:<8} {status:<10} {category:<14} {content}"


def add_commands(command: Command) -> None:
    """Add the item commands with ``command(name, **kwargs)``, the parser's helper."""
    p = command("list", help="the memories, newest first, filtered (one line each with its short id)")
    p.add_argument("--namespace", default=None, help="one user's or agent's memories (default: every namespace)")
    p.add_argument("--scope", choices=["global", "project", "session"], default=None)
    p.add_argument("--project", default=None)
    p.add_argument("--category", default=None)
    p.add_argument("--kind", default=None)
    p.add_argument("--status", default="active",
                   help="active (default), candidate, superseded, archived, cold, purged, pending, or all")
    p.add_argument("--tag", default=None)
    p.add_argument("--text", default=None, help="a case-insensitive substring of the content")
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_list)

    p = command("show", help="one memory: every field, where it came from and what happened to it")
    p.add_argument("id", help="an item id, or the short id its line shows (m:4821)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_show)

    p = command("edit", help="replace a memory's wording (the user's words win)")
    p.add_argument("id", help="an item id, or the short id its line shows (m:4821)")
    p.add_argument("text", help="the new wording")
    p.add_argument("--tags", default=None, help="replace its tags too (comma-separated)")
    p.set_defaults(func=cmd_edit)

    p = command("forget", help="never inject a memory again (its row stays, purged, for the audit trail)")
    p.add_argument("id", help="an item id, or the short id its line shows (m:4821)")
    p.set_defaults(func=cmd_forget)

    p = command("erase", help="the right to be forgotten: remove a namespace's or an item's words from every "
                              "store and every kept version (irreversible; an audit row without content stays)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--namespace", default=None, help="every memory and transcript of this user or agent")
    which.add_argument("--id", default=None, help="one item (full or short id: m:4821) and the turns it came from")
    p.add_argument("--reason", default=None, help="why, for the audit row (e.g. the ticket of the user's request)")
    p.add_argument("--by", default=None, help="who asked, for the audit row (default: this user)")
    p.add_argument("--yes", action="store_true", help="confirm: an erasure cannot be undone, not even by rollback")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_erase)

    for name, what in (("disable", "turn memory off for a namespace: nothing injected, nothing captured"),
                       ("enable", "turn memory back on for a namespace")):
        p = command(name, help=what)
        p.add_argument("--namespace", required=True)
        p.set_defaults(func=cmd_switch)


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, default=str, ensure_ascii=False))


def _operator(data_root: str):
    from retrieval import MemoryClient

    return MemoryClient(data_root, namespace="*")  # the operator: any namespace


def _not_found(exc: Exception) -> int:
    print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
    return 1


def cmd_list(args: argparse.Namespace) -> int:
    client = _operator(args.data_root)
    if args.namespace:
        client = client.scoped(args.namespace)
    rows = client.list(scope=args.scope, project=args.project, category=args.category, kind=args.kind,
                       status=None if args.status == "all" else args.status, tag=args.tag, text=args.text,
                       limit=args.limit)
    if args.json:
        _print_json(rows)
        return 0
    for row in rows:
        ref = row.get("ref") or row["id"]
        print(_LINE.format(ref=ref, status=row.get("status") or "", category=row.get("category") or "",
                           content=row.get("content") or ""))
    print(f"{len(rows)} memories" + (f" (--limit {args.limit}: there may be more)" if len(rows) == args.limit else ""),
          file=sys.stderr)
    return 0


def _field(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "-"
    return "-" if value is None or value == "" else str(value)


def cmd_show(args: argparse.Namespace) -> int:
    from retrieval.ids import AmbiguousId
    from retrieval.store import ItemStore

    try:
        history = _operator(args.data_root).history(args.id)
    except (ItemStore.DoesNotExist, AmbiguousId) as exc:
        return _not_found(exc)
    if args.json:
        _print_json(history)
        return 0
    item = history["item"]
    print(f"{item.get('ref') or item['id']}  {item['content']}")
    width = max(len(k) for k in item)
    for key in sorted(k for k in item if k not in ("content", "ref")):
        print(f"  {key:<{width}}  {_field(item[key])}")
    print("sources:" if history["sources"] else "sources: none")
    for turn in history["sources"]:
        print(f"  {turn['session_id']} turn {turn['turn']} ({turn['role']}, {turn['content_at']}): {turn['content']}")
    print("history:" if history["events"] else "history: no feedback on record")
    for event in history["events"]:
        payload = {k: v for k, v in (event.get("payload") or {}).items() if v not in (None, "", [])}
        print(f"  {event['ts']}  {event['type']}" + (f"  {json.dumps(payload, ensure_ascii=False)}" if payload else ""))
    for other in history["related"]:
        how = ("replaced by" if other["id"] == item.get("superseded_by") else
               "replaces" if other["id"] == item.get("supersedes") else "related to")
        print(f"{how}: {other['id']}  [{other.get('status')}] {other.get('content')}")
    if item.get("status") == "superseded":
        # What retired it, when, and why (the rule, the slot and the cue: ``validity.why``).
        print(f"retired: by {item.get('superseded_by') or 'a fact since removed'}, invalid from "
              f"{_field(item.get('invalid_at'))}; why: {item.get('retired_why') or 'not recorded (retired before reasons were kept)'}")
    return 0


def _feedback(args: argparse.Namespace, write: Callable[[Any], str], what: str) -> int:
    from retrieval.ids import AmbiguousId
    from retrieval.store import ItemStore

    try:
        item_id = write(_operator(args.data_root))
    except (ItemStore.DoesNotExist, AmbiguousId) as exc:
        return _not_found(exc)
    print(f"{item_id} {what} (agents read it at once; the next `memory materialize` publishes it)")
    return 0


def cmd_edit(args: argparse.Namespace) -> int:
    tags = [t.strip() for t in args.tags.split(",") if t.strip()] if args.tags is not None else None
    if not " ".join(args.text.split()):
        print("EditError: the new wording is empty (to retire the memory: `memory forget ID`)", file=sys.stderr)
        return 2
    return _feedback(args, lambda client: client.update(args.id, args.text, tags), "reworded")


def cmd_forget(args: argparse.Namespace) -> int:
    return _feedback(args, lambda client: client.forget(args.id),
                     "forgotten: never injected again; its row stays, purged, for the audit trail "
                     "(`memory erase --id` removes its words everywhere)")


def cmd_erase(args: argparse.Namespace) -> int:
    from memory_assets.cli.runner import run_erase
    from memory_assets.lib import erasure
    from retrieval.ids import AmbiguousId
    from retrieval.store import ItemStore

    what = f"namespace {args.namespace}" if args.namespace else f"item {args.id}"
    if not args.yes:
        print(f"EraseError: erasing {what} cannot be undone, not even by `memory rollback`; add --yes to confirm",
              file=sys.stderr)
        return 2
    client = _operator(args.data_root)
    by = args.by or getpass.getuser()
    now = datetime.now(timezone.utc)
    try:
        request = client.erase(args.namespace, item_id=args.id, reason=args.reason, by=by, now=now)
    except (ItemStore.DoesNotExist, AmbiguousId) as exc:
        return _not_found(exc)
    # Recorded first (the request survives a crash: the sensor or the next materialize
    # finishes it); then carried out here, by the pipeline's own job.
    ok = run_erase(client.paths, now=now)
    log = erasure.erasure_log(client.paths)
    rows = log.filter(log["request_id"] == request)
    report = {"request": request, "erased": what, "done": ok and rows.height > 0,
              "items": int((rows["scope"] == "item").sum()), "audit_rows": rows.height}
    if args.json:
        _print_json(report)
    elif report["done"]:
        print(f"erased {what}: {report['items']} items and everything they came from, from every store and every "
              f"kept version; the memory was rebuilt and published without them; {rows.height} audit rows "
              "(ids only) in warehouse/erasure_log/")
    if not report["done"]:
        print(f"EraseError: the erase job did not finish (see `make ui`, job `erase`); the request {request} is "
              "recorded and is carried out by the next `memory erase`, `memory materialize` or the erasure sensor",
              file=sys.stderr)
        return 1
    return 0


def cmd_switch(args: argparse.Namespace) -> int:
    from retrieval.disabled import set_disabled
    from retrieval.paths import DataRoot

    off = args.command == "disable"
    try:
        changed = set_disabled(DataRoot.resolve(args.data_root), args.namespace, off,
                               now=datetime.now(timezone.utc), by=getpass.getuser())
    except ValueError as exc:
        print(f"ValueError: {exc}", file=sys.stderr)
        return 2
    state = ("off: nothing is injected for it and nothing it says is stored (what is stored stays: "
             "`memory list`, `memory erase`)" if off else "on again")
    print(f"memory for {args.namespace} is {state}" + ("" if changed else " (it already was)"))
    return 0
