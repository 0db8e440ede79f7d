"""``memory export`` and ``memory import``: your data, portable (format: ``retrieval/interchange.py``).

Export reads only what agents read (the published version) and writes a versioned JSONL
file. Import is the agent side's append: it validates a file, redacts it, appends it under
``imports/`` and runs the pipeline, whose ``memory_items`` build adopts it behind the usual
blocking checks (DESIGN principle 1: only pipeline runs write derived stores).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the modules themselves are imported by the commands that use them:
    from retrieval.paths import DataRoot  # building the parser stays cheap (`memory inject`)

Command = Callable[..., argparse.ArgumentParser]


def add_commands(command: Command) -> None:
    """Add ``export`` and ``import`` with ``command(name, **kwargs)``, the parser's helper."""
    p = command("export", help="write the published memory as a versioned JSONL export (stdout by default)")
    p.add_argument("--namespace", default=None, help="one user's or agent's memory (default: every namespace)")
    p.add_argument("--format", choices=["jsonl"], default="jsonl")
    p.add_argument("--embeddings", action="store_true", help="include each item's vector")
    p.add_argument("-o", "--output", default=None, metavar="FILE", help="write here instead of stdout")
    p.set_defaults(func=cmd_export)

    p = command("import", help="bring an export (or flat-file memories: --from-markdown) into this data root")
    p.add_argument("paths", nargs="+", metavar="FILE")
    p.add_argument("--from-markdown", action="store_true",
                   help="FILEs are markdown memories (MEMORY.md): each bullet or paragraph becomes a memory")
    p.add_argument("--namespace", default=None,
                   help="with --from-markdown: whose memories (default: the [pipeline] namespace)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_import)


def cmd_export(args: argparse.Namespace) -> int:
    from retrieval import interchange, published
    from retrieval.config import load_config
    from retrieval.files import atomic_write
    from retrieval.paths import DataRoot

    paths = DataRoot.resolve(args.data_root)
    if published.read(paths) is None:
        print(f"ExportError: nothing is published under {paths.root} yet; run `memory materialize` first",
              file=sys.stderr)
        return 1
    lines = interchange.export_lines(paths, load_config(), datetime.now(timezone.utc), namespace=args.namespace,
                                     embeddings=args.embeddings)
    header = next(lines)
    if args.output:
        atomic_write(Path(args.output), "".join(f"{line}\n" for line in [header, *lines]).encode())
    else:
        for line in [header, *lines]:
            sys.stdout.write(f"{line}\n")
    counts = json.loads(header)["counts"]
    print(f"exported {counts['item']} items, {counts['entity']} entities, {counts['edge']} edges"
          + (f" to {args.output}" if args.output else ""), file=sys.stderr)
    return 0


@dataclass
class FileReport:
    """One file of ``memory import``: where it went and what the build made of it."""

    file: str
    import_file: str | None = None
    new: bool = False
    records: int = 0
    imported: int = 0
    duplicates: int = 0
    rejected: int = 0
    purged: int = 0
    errors: list[str] = field(default_factory=list)


def _append(paths: DataRoot, path: Path, markdown: bool, namespace: str | None, now: datetime) -> FileReport:
    """Validate one file and append it under ``imports/`` (redacted); bad lines are named."""
    from memory_assets.lib import warehouse
    from memory_assets.lib.migration import migration_records
    from retrieval import inbox, interchange
    from retrieval.files import stamp
    from retrieval.config import load_config
    from retrieval.credentials import pii_from_config

    report = FileReport(str(path))
    try:
        if markdown:
            text = warehouse.read_text(path)
            if text is None:
                raise interchange.ExportFormatError(path, None, "no such file")
            records = migration_records(path, text, now, namespace=namespace)
            parsed = interchange.parse([json.dumps(r) for r in records], path)
        else:
            parsed = interchange.read_export(path)
    except interchange.ExportFormatError as exc:
        report.errors.append(str(exc))
        return report
    report.errors = [str(e) for e in parsed.errors]
    report.records = len(parsed.items)
    if not parsed.items:
        report.errors.append(f"{path}: no memories to import")
        return report
    target, report.new = inbox.write_import(paths.imports, parsed.records(), stamp=stamp(now),
                                            pii=pii_from_config(load_config()))
    report.import_file = target.name
    return report


def _errors(reports: list[FileReport]) -> None:
    for report in reports:
        for error in report.errors:
            print(f"ExportFormatError: {error}", file=sys.stderr)


def _counted(paths: DataRoot, report: FileReport) -> None:
    """What the build made of the file (its ledger); the same import again brings nothing."""
    from memory_assets.lib.items import imports

    tally = imports.ledger(paths, report.import_file) if report.import_file else None
    if report.new and tally:
        report.imported, report.duplicates = tally["adopted"], tally["duplicates"]
        report.rejected, report.purged = tally["rejected"], tally["purged"]
    elif report.import_file:
        report.duplicates = report.records


def cmd_import(args: argparse.Namespace) -> int:
    from memory_assets.cli.runner import materialize_pending
    from retrieval.paths import DataRoot

    paths = DataRoot.resolve(args.data_root)
    now = datetime.now(timezone.utc)
    reports = [_append(paths, Path(p), args.from_markdown, args.namespace, now) for p in args.paths]
    _errors(reports)
    if not any(r.import_file for r in reports):  # nothing readable: nothing to run
        return 1
    # The pipeline adopts what was appended (and catches up on anything else pending).
    summary = materialize_pending(paths, force_items=any(r.new for r in reports))
    for report in reports:
        _counted(paths, report)
    failed = "memory_items" in summary.failed
    items = ("FAILED its checks: nothing imported is published (see `make ui`)" if failed
             else f"held at version {summary.held} (`memory publish` releases)" if summary.held is not None
             else "published" if summary.items_materialized else "unchanged")
    if args.json:
        print(json.dumps({"files": [asdict(r) for r in reports], "memory_items": items}, indent=2))
    else:
        for r in (r for r in reports if r.import_file):
            again = "" if r.new else f" (already imported as imports/{r.import_file}: nothing new)"
            print(f"{r.file}: imported {r.imported}, duplicates {r.duplicates}, rejected by the write gate "
                  f"{r.rejected}, purged (not imported) {r.purged}, errors {len(r.errors)}{again}")
        print(f"memory_items: {items}; entities and edges are rebuilt from the items")
    # A partial failure is a failure: the lines above name each bad file and line.
    return 1 if summary.failed or any(r.errors for r in reports) else 0
