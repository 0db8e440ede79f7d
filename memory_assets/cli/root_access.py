"""What each ``memory`` command needs of its data root, checked before the command runs.

A mistyped ``--data-root`` must not look like an empty memory, and a data root the user
cannot write must not end in a traceback. Each command either

* **creates** the data root when it is missing: the commands that put something in —
  ``ingest``, ``import``, ``keys create`` (the first step of a service), ``disable``
  (memory turned off before the first transcript arrives is the point) and ``serve``
  (agents write through it; its banner names the data root);
* **writes** to one that must exist: ``materialize`` (nothing ingested is nothing to
  build), ``run``, ``publish``, ``rollback`` (without ``--list``), ``pin``, ``unpin``,
  ``edit``, ``forget``, ``erase`` (once confirmed with ``--yes``), ``enable`` and
  ``keys list`` / ``keys revoke`` (the keys' SQLite database writes beside its file even
  to read);
* **reads** one that must exist: ``search``, ``inject``, ``stats``, ``list``, ``show``,
  ``export`` and ``rollback --list``;
* or **ignores** it: ``models``, ``eval`` and ``bench`` build or need none, and an
  unconfirmed ``erase`` refuses on its own terms before touching anything.

A missing data root, for a command that needs one, is refused naming the path, a
near-miss that exists (``did you mean``) and what to do. For the commands that create
or write, the nearest folder that exists is tried with a nameless temporary file first,
so a read-only or full disk, or a file where a folder should be, is refused before any
work. An ``OSError`` about a path under the data root that gets past that check (a
subfolder someone else owns) is turned into the same one-line message by ``explain``,
which ``memory``'s dispatch calls: not one try/except per command. All of these exit 2.

An object-store root (``s3://bucket/prefix``) is not checked: a prefix with no objects
yet cannot be told from a mistyped one without listing the store, and a probe would be a
write; such a root works as before, and a refused request names itself.
"""

from __future__ import annotations

import argparse
import difflib
import errno
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from retrieval.paths import DataRoot

CREATES, WRITES, READS, IGNORES = "creates", "writes", "reads", "ignores"

USES: dict[str, str | Callable[[argparse.Namespace], str]] = {
    "ingest": CREATES, "import": CREATES, "disable": CREATES, "serve": CREATES,
    "materialize": WRITES, "run": WRITES, "publish": WRITES, "pin": WRITES, "unpin": WRITES, "edit": WRITES,
    "forget": WRITES, "enable": WRITES,
    "rollback": lambda args: READS if args.list else WRITES,
    "erase": lambda args: WRITES if args.yes else IGNORES,
    "keys": lambda args: CREATES if args.action == "create" else WRITES,
    "search": READS, "inject": lambda args: IGNORES if os.environ.get("MEMORY_URL") else READS, "stats": READS, "list": READS, "show": READS, "export": READS,
    "models": IGNORES, "eval": IGNORES, "bench": IGNORES,
    # install writes Claude Code's files; run must answer (exit 0) whatever the root is
    "hooks": IGNORES,
}

ADVICE = "pass --data-root DIR or MEMORY_DATA_ROOT"
# Subfolders only a data root has: a did-you-mean points at one of those.
_MARKS = ("inbox", "warehouse", "lancedb", "dagster", "service", "settings", "imports", "events")


class DataRootError(Exception):
    """The data root cannot serve the command; the message names it and what to do."""


def use(args: argparse.Namespace) -> str:
    """What ``args.command`` does with the data root: CREATES, WRITES, READS or IGNORES."""
    rule = USES.get(args.command, IGNORES)
    return rule(args) if callable(rule) else rule


def check(args: argparse.Namespace) -> None:
    """Raise ``DataRootError`` if the command cannot run on ``args.data_root``."""
    how = use(args)
    paths = DataRoot.resolve(args.data_root)
    if how == IGNORES or not paths.is_local:
        return
    root = paths.root
    if root.exists() and not root.is_dir():
        raise DataRootError(f"data root {root} is a file, not a folder; {ADVICE}")
    if how != CREATES and not root.is_dir():
        near = did_you_mean(root)
        raise DataRootError(f"no data root at {root}" + (f" (did you mean {near}?)" if near else "")
                            + "; run `memory ingest` first or pass --data-root")
    if how in (CREATES, WRITES):
        problem = _unwritable(root)
        if problem is not None:
            raise DataRootError(_not_writable(root, problem))


def explain(args: argparse.Namespace, error: OSError) -> str | None:
    """The one-line message for ``error`` if it is about a path under the data root (or
    its local state), else None: then it is not the data root's, and not ours to word."""
    if use(args) == IGNORES:
        return None
    paths = DataRoot.resolve(args.data_root)
    where = next((f for f in (error.filename, error.filename2) if f is not None and _under(paths, f)), None)
    if where is None:
        return None
    if not paths.is_local and not _under_root(paths, where):
        return (f"the local state {paths.local} of data root {paths.uri} is not writable ({_reason(error)}); "
                "set MEMORY_LOCAL_STATE to a folder you can write")
    if use(args) == READS and error.errno not in (errno.EROFS, errno.ENOSPC):
        return f"data root {paths.root} cannot be read ({_reason(error)}); {ADVICE}"
    return _not_writable(paths.root, error)


def did_you_mean(root: Path) -> Path | None:
    """A data root that exists and whose path differs from ``root`` by a typo or two, one
    path part at a time (``/srv/memroy/data`` → ``/srv/memory/data``), or None."""
    found = Path(root.anchor)
    parts = root.parts[1:]
    for n, part in enumerate(parts):
        if (found / part).is_dir():
            found = found / part
            continue
        try:
            names = [e.name for e in os.scandir(found) if e.is_dir()]
        except OSError:
            return None
        close = difflib.get_close_matches(part, names, n=5, cutoff=0.7)
        if n == len(parts) - 1:  # the root itself: only a folder that holds a data root
            close = [name for name in close if any((found / name / mark).exists() for mark in _MARKS)]
        if not close:
            return None
        found = found / close[0]
    return found if found != root else None


def _unwritable(root: Path) -> OSError | None:
    """Why nothing can be written at ``root`` (or created there, if it is missing), or None.
    The nearest existing folder gets a nameless temporary file: the disk's own answer
    (read-only, no permission, no space), not a guess from mode bits."""
    existing = root
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        return NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(existing))
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        return error
    return None


def _not_writable(root: Path, error: OSError) -> str:
    return f"data root {root} is not writable ({_reason(error)}); {ADVICE}"


def _reason(error: OSError) -> str:
    """``strerror`` and the path it concerns; for a file in the way, that file."""
    what = error.strerror or type(error).__name__
    path = error.filename
    if error.errno in (errno.ENOTDIR, errno.EEXIST) and path is not None:
        blocking = _file_in_the_way(Path(str(path)))
        if blocking is not None:
            return f"{blocking} is a file, not a folder"
    return f"{what}: {path}" if path is not None else what


def _file_in_the_way(path: Path) -> Path | None:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate if not candidate.is_dir() else None
    return None


def _under(paths: DataRoot, name: str | bytes | int) -> bool:
    """Whether the path an ``OSError`` names is the data root's (or its local state's)."""
    if isinstance(name, int):
        return False
    return _under_root(paths, name) or Path(os.path.abspath(os.fsdecode(name))).is_relative_to(paths.local)


def _under_root(paths: DataRoot, name: str | bytes) -> bool:
    text = os.fsdecode(name)
    if paths.is_local:
        return Path(os.path.abspath(text)).is_relative_to(paths.root)
    return text.startswith((paths.uri, paths.uri.split("://", 1)[-1]))
