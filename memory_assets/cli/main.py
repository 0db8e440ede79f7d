"""``memory``: a thin command-line shell over the library (see README).

The pipeline imports only the kernel of ``retrieval``; this module imports the agent's
side (``MemoryClient``) where the CLI is the product's own read path: ``memory search``
and ``memory inject`` read exactly as an agent does, and ``pin`` / ``unpin`` act as the
operator through the same client (``tests/test_layers.py`` allows these and no others).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import date
from pathlib import Path
from typing import Any


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, default=str, ensure_ascii=False))


def cmd_ingest(args: argparse.Namespace) -> int:
    from memory_assets.lib.ingest.intake import ingest_paths
    from retrieval.config import load_config

    report = ingest_paths([Path(p) for p in args.paths], args.data_root, load_config(), fmt=args.format)
    for error in report.errors:
        print(f"TranscriptError: {error}", file=sys.stderr)
    if args.json:
        _print_json(report.as_dict())
    else:
        print(f"ingested {report.messages} messages in {len(report.sessions)} sessions "
              f"({report.files_written} new inbox files) from {report.files_read} files; "
              f"{len(report.errors)} errors")
    # A partial failure is a failure: the lines above name each bad file and line.
    return 1 if report.errors else 0


def cmd_materialize(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from memory_assets.cli import interrupts
    from memory_assets.cli.runner import materialize_pending, pending_sessions
    from retrieval.paths import DataRoot

    paths = DataRoot.resolve(args.data_root)
    unread, retry = pending_sessions(paths)
    bar = tqdm(total=len(unread) + len(retry), unit="session", desc="materialize", disable=args.quiet or None)

    def step(session_id: str) -> None:
        bar.set_postfix_str(session_id)
        bar.update(1)

    # Ctrl-C stops after the step under way (exit 130, `main`); the next run carries on.
    try:
        with interrupts.deferred("materialize"):
            summary = materialize_pending(paths, extractor=args.extractor, progress=step, force_items=args.items)
    finally:
        bar.close()
    _report(summary)
    return 1 if summary.failed or summary.quarantined else 0


def _report(summary) -> None:
    """What a pipeline command did, and everything that did not go as asked, by name."""
    if summary.recovered:
        print(f"recovered from a crash: {len(summary.recovered)} run(s) whose process was gone marked failed, "
              f"their slots freed ({', '.join(summary.recovered)})")
    items = "unchanged"
    if summary.items_materialized:
        items = f"built, held at version {summary.held} (`memory publish` releases)" if summary.held is not None \
            else "published"
    print(f"sessions: {len(summary.sessions)} done, {len(summary.failed)} failed, "
          f"{len(summary.quarantined)} quarantined; memory_items: {items}"
          + (f"; requested jobs run: {', '.join(summary.jobs)}" if summary.jobs else ""))
    for s in summary.failed:
        print(f"failed: {s} (see `make ui` for the run's logs)", file=sys.stderr)
    for s in summary.quarantined:
        print(f"quarantined: {s}: the LLM's output failed validation; extracted offline meanwhile, "
              "retried with the LLM by the next run", file=sys.stderr)


def cmd_stats(args: argparse.Namespace) -> int:
    from memory_assets.cli.stats import collect_stats

    stats = collect_stats(args.data_root)
    if args.json:
        _print_json(stats)
    else:
        for key, value in stats.items():
            print(f"{key}: {value}")
    return 0


_PROJECT_HELP = "the project worked on: its memories and the global ones, never another project's (default: all)"


def cmd_search(args: argparse.Namespace) -> int:
    from retrieval import MemoryClient  # the read path an agent uses

    hits = MemoryClient(args.data_root, namespace=args.namespace).search(args.query, k=args.k, project=args.project)
    if args.json:
        _print_json([h.as_dict() for h in hits])
    else:
        for h in hits:
            print(f"{h.score:.4f}  [{h.category}] {h.content}  ({', '.join(h.source_turn_ids)})")
    return 0


def cmd_inject(args: argparse.Namespace) -> int:
    if os.environ.get("MEMORY_URL"):  # a running `memory serve` answers: no model to load here
        from retrieval.integrations.memory import MemoryUnreachable, memory_for

        try:
            found = memory_for(None).inject_answer(args.context, namespace=args.namespace, project=args.project,
                                                   max_items=args.max_items, token_budget=args.token_budget)
        except MemoryUnreachable as exc:
            print(f"memory inject: {exc}", file=sys.stderr)
            return 1
    else:
        from retrieval import MemoryClient  # the read path an agent uses

        found = MemoryClient(args.data_root, namespace=args.namespace).inject(
            args.context, max_items=args.max_items, token_budget=args.token_budget, project=args.project).as_dict()
    if args.json:
        _print_json(found)
    else:
        print(found["text"] or "(nothing to inject)")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from memory_assets.cli.runner import run_job
    from retrieval.moments import parse_utc
    from retrieval.paths import DataRoot

    now = parse_utc(args.now) if args.now else None
    from memory_assets.lib.items.publish import read_report
    from retrieval.store import ItemStore

    paths = DataRoot.resolve(args.data_root)
    ok = run_job(paths, args.job, now=now, night=args.date, extractor=args.extractor)
    items = ItemStore(paths).items()
    by_status = dict(items["status"].value_counts().iter_rows()) if items.height else {}
    report = read_report(paths)
    actions = {k: v for k, v in (report.get("counts") or report).items() if isinstance(v, int) and v}
    print(f"{args.job}: {'succeeded' if ok else 'FAILED (see `make ui` for the run)'}; items: {items.height} "
          f"({', '.join(f'{k} {v}' for k, v in sorted(by_status.items())) or 'none'}); lifecycle: "
          f"{', '.join(f'{k} {v}' for k, v in actions.items()) or 'nothing changed'}")
    return 0 if ok else 1


def cmd_rollback(args: argparse.Namespace) -> int:
    from memory_assets.lib.items.publish import RollbackError, current, history, rollback
    from retrieval.paths import DataRoot

    paths = DataRoot.resolve(args.data_root)
    if args.list:
        now = current(paths)
        for v in history(paths):
            mark = "*" if now and v.version == now.version else " "
            print(f"{mark} version {v.version}: {v.rows} items, written {v.written_at}")
        return 0
    try:
        target = rollback(paths, args.to)
    except RollbackError as exc:
        print(f"RollbackError: {exc}", file=sys.stderr)
        return 1
    print(f"published version is now {target.version} ({target.rows} items, written {target.written_at}); "
          "held there: later builds are staged but not published until `memory publish`")
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    from memory_assets.lib.items.publish import RollbackError, release
    from retrieval.paths import DataRoot

    try:
        target = release(DataRoot.resolve(args.data_root), args.version)
    except RollbackError as exc:
        print(f"PublishError: {exc}", file=sys.stderr)
        return 1
    print(f"published version {target.version} ({target.rows} items); the hold is released")
    return 0


def cmd_pin(args: argparse.Namespace) -> int:
    from retrieval import MemoryClient
    from retrieval.store import ItemStore

    client = MemoryClient(args.data_root, namespace="*")  # the operator: any namespace
    try:
        item_id = (client.pin if args.command == "pin" else client.unpin)(args.id)
    except (ItemStore.DoesNotExist, LookupError) as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    what = "pinned: permanent until unpinned or forgotten" if args.command == "pin" else "unpinned"
    print(f"{item_id} {what} (applied by the next `memory materialize`)")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    if args.what == "retrieval":
        from evals.retrieval_eval import main as run
    elif args.what == "changes":
        from evals.change_eval import main as run
    else:
        from evals.extraction_eval import main as run
    return int(run(args.rest) or 0)


def cmd_bench(args: argparse.Namespace) -> int:
    if args.what == "quality":
        from evals.bench.quality import main as run
    elif args.what == "service":
        from evals.bench.service import main as run
    elif args.what == "signals":
        from evals.bench.signals import main as run
    elif args.what == "nightly":
        from evals.bench.nightly import main as run
    elif args.what == "ingest":
        from evals.bench.ingest import main as run
    elif args.what == "adversarial":
        from evals.bench.adversarial import main as run
    elif args.what == "redaction":
        from evals.bench.redaction import main as run
    elif args.what == "patterns":
        from evals.bench.patterns import main as run
    elif args.what == "coldstart":
        from evals.bench.coldstart import main as run
    else:
        from evals.bench.retrieval import main as run
    return int(run(args.rest) or 0)


def cmd_models(args: argparse.Namespace) -> int:
    from retrieval.config import load_config
    from retrieval.embeddings import Embedder

    report = Embedder(load_config()).prepare()
    if args.json:
        print(json.dumps(report))
    else:
        print(" ".join(f"{k}={v}" for k, v in report.items()))
    return 0


def _inject_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--context", required=True)
    p.add_argument("--namespace", default=None, help="whose memory (a user or agent; default [pipeline] namespace)")
    p.add_argument("--project", default=None, help=_PROJECT_HELP)
    p.add_argument("--max-items", type=int, default=None)
    p.add_argument("--token-budget", type=int, default=None)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_inject, command="inject")
    return p


def _served(argv: list[str]) -> int | None:
    """``memory inject …`` and ``memory hooks run claude-code`` with ``MEMORY_URL`` set: the
    running service answers, so nothing but the command's parser and an HTTP request is
    loaded (a hook runs them on every prompt). None: another command, or no service; the
    full parser takes it."""
    if not os.environ.get("MEMORY_URL") or "-h" in argv or "--help" in argv:
        return None
    if argv[:3] == ["hooks", "run", "claude-code"] and len(argv) == 3:
        from memory_assets.cli.hooks import EVENT_MAX_BYTES, run_claude_code

        return run_claude_code(None, None, sys.stdin.buffer.read(EVENT_MAX_BYTES + 1))
    if argv[:1] != ["inject"]:
        return None
    parser = _inject_arguments(argparse.ArgumentParser(prog="memory inject"))
    parser.add_argument("--data-root", default=None, help=argparse.SUPPRESS)  # not read: the service has its own
    parser.add_argument("--config", default=None, help=argparse.SUPPRESS)
    return cmd_inject(parser.parse_args(argv[1:]))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memory", description="Agent memory: ingest transcripts, build memory, search it.")
    parser.add_argument("--data-root", default=os.environ.get("MEMORY_DATA_ROOT", "data"),
                        help="data root (default: $MEMORY_DATA_ROOT or data/)")
    parser.add_argument("--config", default=os.environ.get("MEMORY_CONFIG") or None, metavar="PATH",
                        help="a TOML file overriding retrieval/defaults.toml (default: $MEMORY_CONFIG)")
    # --data-root and --config also after the subcommand (`memory ingest --data-root R f.jsonl`).
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-root", default=argparse.SUPPRESS, help="data root (as before the subcommand)")
    common.add_argument("--config", default=argparse.SUPPRESS, metavar="PATH", help="config file (as before the subcommand)")
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[common], **kwargs)

    p = command("ingest", help="put transcripts into the inbox")
    p.add_argument("paths", nargs="+")
    p.add_argument("--format", default="auto", choices=["auto", "jsonl", "openai", "locomo"])
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_ingest)

    p = command("materialize", help="run all pending pipeline work in-process")
    p.add_argument("--extractor", choices=["offline", "llm"], default=None,
                   help="default: llm when [llm] enabled = true or MEMORY_EXTRACTOR=llm, else offline")
    p.add_argument("--items", action="store_true", help="rebuild memory_items even if nothing is pending")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_materialize)

    p = command("stats", help="what the memory holds")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_stats)

    p = command("search", help="hybrid search over published items")
    p.add_argument("query")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--namespace", default=None, help="whose memory (a user or agent; default [pipeline] namespace)")
    p.add_argument("--project", default=None, help=_PROJECT_HELP)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_search)

    _inject_arguments(command("inject", help="the block an agent would get injected"))

    p = command("run", help="run a scheduled job now: nightly, weekly or monthly")
    p.add_argument("job", choices=["nightly", "weekly", "monthly"])
    when = p.add_mutually_exclusive_group()
    when.add_argument("--now", default=None, help="the clock, ISO-8601 (default: now)")
    when.add_argument("--date", default=None, type=date.fromisoformat,
                      help="replay the run scheduled on this day (YYYY-MM-DD): its nights partition, whose "
                           "clock is the schedule's time that day")
    p.add_argument("--extractor", choices=["offline", "llm"], default=None)
    p.set_defaults(func=cmd_run)

    p = command("rollback", help="re-point the agent at an earlier published version")
    p.add_argument("--to", type=int, default=None, help="a version from --list (default: the one before)")
    p.add_argument("--list", action="store_true", help="list published versions")
    p.set_defaults(func=cmd_rollback)

    p = command("publish", help="release a rollback's hold: publish the latest staged version (or --version)")
    p.add_argument("--version", type=int, default=None)
    p.set_defaults(func=cmd_publish)

    for name, what in (("pin", "keep an item for good (permanent tier)"), ("unpin", "undo pin")):
        p = command(name, help=what)
        p.add_argument("id", help="an item id, or the short id its line shows (m:4821)")
        p.set_defaults(func=cmd_pin)

    from memory_assets.cli import hooks, items, portable, service

    service.add_commands(command)
    hooks.add_commands(command)
    portable.add_commands(command)
    items.add_commands(command)

    p = command("models", help="the local embedding model: `memory models prepare` loads it, exporting it "
                               "to ONNX Runtime once per machine")
    p.add_argument("action", choices=["prepare"])
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_models)

    p = command("eval", help="measure quality: `memory eval retrieval --dataset PATH... [--k 10] [--json]`")
    p.add_argument("what", choices=["retrieval", "extraction", "changes"])
    p.add_argument("rest", nargs=argparse.REMAINDER, help="options of that eval (see --help after it)")
    p.set_defaults(func=cmd_eval)

    p = command("bench", help="measure speed: `memory bench retrieval|quality|nightly|service --items N [--json]`, "
                              "`memory bench ingest --sessions N [--json]`, `memory bench adversarial [--sizes …]`, `memory bench redaction [--dataset …]`, `memory bench patterns [--sizes …]`, `memory bench coldstart [--runs N]`")
    p.add_argument("what", choices=["retrieval", "quality", "nightly", "service", "signals", "ingest", "adversarial", "redaction", "patterns", "coldstart"])
    p.add_argument("rest", nargs=argparse.REMAINDER, help="options of that benchmark (see --help after it)")
    p.set_defaults(func=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    remote = _served(sys.argv[1:] if argv is None else argv)
    if remote is not None:
        return remote
    args = build_parser().parse_args(argv)
    if args.command == "inject" and os.environ.get("MEMORY_URL"):
        return cmd_inject(args)  # `memory --data-root R inject …`: the service answers all the same
    from memory_assets.cli import root_access
    from memory_assets.cli.interrupts import EXIT_CODE, Stopped
    from memory_assets.lib.ingest.errors import TranscriptError
    from retrieval.config import ConfigError, load_config
    from retrieval.disabled import MemoryDisabled

    try:
        if args.config:
            # Through the environment, so the Dagster runs this command starts read it too.
            os.environ["MEMORY_CONFIG"] = str(Path(args.config).resolve())
        config = load_config()  # a bad file fails here, before any work, naming the key
        if args.command == "inject":
            from retrieval.embeddings import Embedder

            Embedder(config).warm()  # the model loads on the other core while the read path does
        root_access.check(args)  # a missing or unwritable data root, before any work
        return int(args.func(args) or 0)
    except root_access.DataRootError as exc:
        print(f"memory: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # the data root's, worded once here; anything else is not ours to word
        message = root_access.explain(args, exc)
        if message is None:
            raise
        print(f"memory: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # Ctrl-C: a line, not a traceback (interrupts.Stopped says after what)
        print(str(exc) if isinstance(exc, Stopped) else f"memory {args.command}: interrupted (Ctrl-C)",
              file=sys.stderr)
        return EXIT_CODE
    except ConfigError as exc:
        print(f"ConfigError: {exc}", file=sys.stderr)
        return 2
    except TranscriptError as exc:
        print(f"TranscriptError: {exc}", file=sys.stderr)
        return 2
    except MemoryDisabled as exc:  # `memory ingest` of a namespace whose memory is off
        print(f"MemoryDisabled: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
