"""The one place the pipeline touches the data root (ARCHITECTURE.md: one warehouse).

Every file the pipeline writes under the data root is written here, and reads go through
here too, so storage rules hold everywhere at once:

- **Atomic writes.** A reader never sees half a file. On a local disk a file is written
  to a hidden temporary name in the same folder, flushed (``fsync`` when ``durable``) and
  renamed over the target (``retrieval.files.atomic_write``, the agent side's writer too);
  on an object store one PUT is already all-or-nothing.
- **URIs.** A path is a local path or an fsspec URI (``s3://``, ``gs://``, ``az://``,
  ``memory://``): the functions take either and go through ``fsspec``, so a store that is
  not a local disk is a matter of configuration (running the whole pipeline on one is
  the object-storage issue's work).
- **One timestamp format** in file names: ``retrieval.files.stamp(now)``, UTC,
  ``20260901T093000123456Z`` (the agent side names its imports with it too).
- **Crash points** for the recovery tests: ``MEMORY_CRASH_AT=<name>`` SIGKILLs the process
  at that point between writes (``crash_point``); unset, nothing happens. The pipeline's
  crash safety (nothing lost or duplicated, agents keep reading the last published
  version, the next run completes) is specified at each one (``tests/test_crash_recovery.py``:
  in process, with a ``crash_point`` that raises there, and by killing a real
  ``memory materialize`` with SIGKILL).

``tests/test_one_home.py`` fails when another pipeline module writes a file itself
(``os.replace``, ``open(…, "w")``, ``write_parquet``, ``write_text``, ``write_bytes``).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import fsspec
import polars as pl

from retrieval.files import atomic_write
from retrieval.paths import DataRoot, location
from retrieval.schema import FACT_SCHEMA, RESOURCE_SCHEMA
from retrieval.spans import spanned

PathLike = str | os.PathLike[str]


def _is_local(path: PathLike) -> bool:
    return "://" not in str(path) or str(path).startswith("file://")


def _local(path: PathLike) -> Path:
    return Path(str(path).removeprefix("file://"))


def filesystem(path: PathLike) -> tuple[fsspec.AbstractFileSystem, str]:
    """The fsspec filesystem for ``path`` and the path within it."""
    return fsspec.core.url_to_fs(str(path))


CRASH_POINTS = ("ingest", "extraction", "items_write", "publish")


def crash_point(name: str) -> None:
    """SIGKILL this process when ``MEMORY_CRASH_AT`` names this point (tests only)."""
    if os.environ.get("MEMORY_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


# --- writing ----------------------------------------------------------------------------


def _no_climbing(path: PathLike) -> None:
    """Every path the warehouse writes is built from the data root and checked names
    (``retrieval.names``): one that climbs with ``..`` or holds a NUL is a bug, refused."""
    text = str(path)
    if "\x00" in text or ".." in text.replace("\\", "/").split("/"):
        raise ValueError(f"refusing to write {text!r}: it climbs out of its folder")


def write_bytes(path: PathLike, data: bytes, *, durable: bool = True) -> PathLike:
    """Write ``data`` to ``path`` atomically, creating its folder."""
    _no_climbing(path)
    if _is_local(path):
        return atomic_write(_local(path), data, durable=durable)
    fs, inner = filesystem(path)
    fs.makedirs(fs._parent(inner), exist_ok=True)
    with fs.open(inner, "wb") as fh:
        fh.write(data)
    return path


def write_text(path: PathLike, text: str, *, durable: bool = True) -> PathLike:
    return write_bytes(path, text.encode("utf-8"), durable=durable)


def write_json(path: PathLike, value: Any, *, durable: bool = True, **dumps: Any) -> PathLike:
    """``value`` as JSON (``dumps``: ``json.dumps`` options, e.g. ``indent=1``)."""
    return write_bytes(path, json.dumps(value, **dumps).encode("utf-8"), durable=durable)


def write_frame(path: PathLike, frame: pl.DataFrame) -> PathLike:
    """``frame`` as one Parquet file, atomically."""
    data = io.BytesIO()
    frame.write_parquet(data)
    return write_bytes(path, data.getvalue(), durable=False)


def move(source: PathLike, target: PathLike) -> PathLike:
    """Move a file (a rename on one disk), creating the target's folder."""
    _no_climbing(target)
    if _is_local(source) and _is_local(target):
        _local(target).parent.mkdir(parents=True, exist_ok=True)
        os.replace(_local(source), _local(target))
        return _local(target)
    fs, inner = filesystem(source)
    fs.mv(inner, filesystem(target)[1])
    return target


def put_folder(source: Path, target: PathLike, last: str | None = None) -> PathLike:
    """Copy the local folder ``source`` to ``target`` (a new folder under the root), the
    file named ``last`` after every other one: a reader that finds it finds the rest."""
    _no_climbing(target)
    names = sorted(str(p.relative_to(source)) for p in source.rglob("*") if p.is_file())
    ordered = [n for n in names if n != last] + ([last] if last in names else [])
    if _is_local(target):
        for name in ordered:
            _local(target).joinpath(name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / name, _local(target) / name)
        return target
    fs, inner = filesystem(target)
    for name in ordered:
        fs.put_file(str(source / name), f"{inner.rstrip('/')}/{name}")
    return target


class WriteConflict(RuntimeError):
    """A conditional write lost: the object changed since it was read."""


def read_versioned(path: PathLike) -> tuple[bytes | None, str | None]:
    """A small object and the token a conditional write checks it by (its ETag on S3;
    None on a disk, where the rename is atomic and the publisher is one run at a time);
    (None, None) when it does not exist."""
    if _is_local(path):
        local = _local(path)
        return (local.read_bytes(), None) if local.exists() else (None, None)
    fs, inner = filesystem(path)
    try:
        info = fs.info(inner)
    except FileNotFoundError:
        return None, None
    with fs.open(inner, "rb") as fh:
        data = fh.read()
    return data, info.get("ETag") or info.get("etag")


def write_if_unchanged(path: PathLike, data: bytes, token: str | None, *, existed: bool) -> PathLike:
    """Replace ``path`` with ``data`` only if it is still as read by ``read_versioned``
    (``token``; ``existed``: whether it existed then). On S3 a conditional PUT (If-Match,
    or If-None-Match for a first write) does it in one request; another writer's object
    in between raises ``WriteConflict`` and leaves theirs. On a disk, one atomic rename;
    on other stores, one PUT."""
    if _is_local(path):
        return write_bytes(path, data)
    fs, inner = filesystem(path)
    if "s3" not in fs.protocol:
        return write_bytes(path, data)
    condition = {"IfMatch": token} if existed and token else {"mode": "create"} if not existed else {}
    try:
        fs.pipe_file(inner, data, **condition)
    except Exception as error:  # s3fs maps S3's 412 to different exceptions across versions
        chain = [error, error.__cause__, error.__context__]
        text = " ".join(f"{type(e).__name__} {e}" for e in chain if e is not None)
        if "PreconditionFailed" in text or "pre-conditions" in text or isinstance(error, FileExistsError):
            raise WriteConflict(f"{path}: changed since it was read (another publisher?)") from error
        raise
    return path


def copy(source: PathLike, target: PathLike) -> PathLike:
    """Copy a file atomically (the target is whole or absent)."""
    return write_bytes(target, read_bytes(source), durable=False)


def remove(path: PathLike) -> None:
    """Delete a file; a missing one is not an error."""
    if _is_local(path):
        _local(path).unlink(missing_ok=True)
        return
    fs, inner = filesystem(path)
    if fs.exists(inner):
        fs.rm(inner)


def remove_folder(path: PathLike) -> None:
    """Delete a folder and everything in it; a missing one is not an error."""
    if _is_local(path):
        shutil.rmtree(_local(path), ignore_errors=True)
        return
    fs, inner = filesystem(path)
    if fs.exists(inner):
        fs.rm(inner, recursive=True)


def makedirs(path: PathLike) -> None:
    if _is_local(path):
        _local(path).mkdir(parents=True, exist_ok=True)
    else:
        fs, inner = filesystem(path)
        fs.makedirs(inner, exist_ok=True)


# --- reading ----------------------------------------------------------------------------


def exists(path: PathLike) -> bool:
    if _is_local(path):
        return _local(path).exists()
    fs, inner = filesystem(path)
    return fs.exists(inner)


def files(folder: PathLike, pattern: str = "*") -> list[Path]:
    """The files in ``folder`` matching ``pattern``, sorted by name; hidden temporaries
    skipped. On an object store, ``UPath``s (one listing, no request per file)."""
    if _is_local(folder):
        root = _local(folder)
        found = root.glob(pattern) if root.exists() else []
        return sorted(p for p in found if p.is_file() and not p.name.startswith("."))
    fs, inner = filesystem(folder)
    protocol = str(folder).split("://", 1)[0]
    listed = fs.glob(f"{inner.rstrip('/')}/{pattern}", detail=True)
    found = [location(f"{protocol}://{name.lstrip('/')}") for name, info in listed.items() if info.get("type") == "file"]
    return sorted((f for f in found if not f.name.startswith(".")), key=str)


def read_bytes(path: PathLike) -> bytes:
    if _is_local(path):
        return _local(path).read_bytes()
    fs, inner = filesystem(path)
    with fs.open(inner, "rb") as fh:
        return fh.read()


def read_text(path: PathLike, default: str | None = None) -> str | None:
    """The file's text, or ``default`` when it does not exist."""
    if not exists(path):
        return default
    return read_bytes(path).decode("utf-8")


def read_json(path: PathLike, default: Any = None) -> Any:
    """The file's JSON, or ``default`` when it does not exist."""
    text = read_text(path)
    return default if text is None else json.loads(text)


def read_frame(path: PathLike, schema: dict[str, pl.DataType] | None = None, *,
               columns: Sequence[str] | None = None) -> pl.DataFrame | None:
    """One Parquet file (``columns`` of it, or all); when it does not exist, an empty frame
    of ``schema`` (or None). One read, no existence check first (on a store, one request)."""
    try:
        source = _local(path) if _is_local(path) else read_bytes(path)
        return pl.read_parquet(source, columns=list(columns) if columns is not None else None)
    except FileNotFoundError:
        return pl.DataFrame(schema=schema) if schema is not None else None


def read_frames(paths: Sequence[PathLike], *, how: str = "vertical_relaxed",
                columns: Sequence[str] | None = None) -> pl.DataFrame | None:
    """Several Parquet files (``columns`` of each, or all) as one frame (``how``: polars'
    concat), or None when there are none.

    A table is one file per session, so a nightly run reads tens of thousands: on a disk,
    files of one schema are read by one polars scan (4 s for 15,000 files, 17 s one by
    one); files of several schemas (an older column set) one by one; on an object store
    many at a time (each is a request's round trip). A file gone since it was listed is
    skipped."""
    found = list(paths)
    if not found:
        return None
    local = all(_is_local(p) for p in found)
    if len(found) > 1 and local:
        try:
            names = [str(_local(p)) for p in found]
            schema = pl.read_parquet_schema(names[0])  # the first file's columns, as one scan takes them
            parts = []
            for start in range(0, len(names), READ_GROUP):
                scan = pl.scan_parquet(names[start:start + READ_GROUP], schema=schema, missing_columns="insert")
                parts.append((scan.select(list(columns)) if columns is not None else scan).collect().rechunk())
            return pl.concat(parts, how="vertical")
        except (pl.exceptions.PolarsError, OSError):
            pass  # another schema among them (or a file gone): file by file below

    def one(path: PathLike) -> pl.DataFrame | None:
        return read_frame(path, columns=columns)

    if local or len(found) == 1:
        read = [one(p) for p in found]
    else:
        with ThreadPoolExecutor(max_workers=REMOTE_READERS) as pool:
            read = list(pool.map(one, found))
    frames = [frame for frame in read if frame is not None]
    if not frames:
        return None
    groups = [pl.concat(frames[start:start + READ_GROUP], how=how, rechunk=True)  # type: ignore[arg-type]
              for start in range(0, len(frames), READ_GROUP)]
    return pl.concat(groups, how=how) if len(groups) > 1 else groups[0]  # type: ignore[arg-type]


# Object-store reads in flight at once (``read_frames``).
REMOTE_READERS = 16
# Files whose rows are made contiguous together (``read_frames``): a frame of 50,000 files
# read as one is 50,000 chunks per column, and at a million facts the chunks' own overhead
# was 2 GB beside 0.4 GB of data.
READ_GROUP = 2_000


# --- the tables -------------------------------------------------------------------------
# Typed readers of what the stages write: every asset and check reads a table this way.


def resource_files(paths: DataRoot, sessions: Iterable[str] | None = None) -> list[Path]:
    """The ``resources`` Parquet parts of ``sessions`` (None: every session)."""
    if sessions is None:
        return sorted(p for folder in _folders(paths.resources) for p in files(folder, "part-*.parquet"))
    return [p for s in sessions for p in files(paths.resources / s, "part-*.parquet")]


def fact_files(paths: DataRoot, sessions: Iterable[str] | None = None) -> list[Path]:
    """The ``extracted_facts`` file of each of ``sessions`` that has one (None: every session)."""
    if sessions is None:
        return files(paths.extracted_facts, "*.parquet")
    return [p for s in sessions if exists(p := fact_file(paths, s))]


def fact_file(paths: DataRoot, session_id: str) -> Path:
    return paths.session_file(paths.extracted_facts, session_id)


def _folders(root: Path) -> list[Path]:
    if _is_local(root):
        return sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []
    fs, inner = filesystem(root)
    protocol = str(root).split("://", 1)[0]
    try:
        listed = fs.ls(inner, detail=True)
    except FileNotFoundError:
        return []
    return sorted((location(f"{protocol}://{i['name'].lstrip('/')}") for i in listed if i.get("type") == "directory"),
                  key=str)


def _conform(frame: pl.DataFrame, contract: dict[str, pl.DataType]) -> pl.DataFrame:
    """``frame`` with the contract's columns in order; a column a file predates reads as null."""
    missing = [pl.lit(None, dtype=t).alias(c) for c, t in contract.items() if c not in frame.columns]
    return frame.with_columns(missing).select(list(contract))


def _table(found: list[Path], contract: dict[str, pl.DataType], conform: bool) -> pl.DataFrame:
    if not found:
        return pl.DataFrame(schema=contract)
    frame = read_frames(found, how="diagonal_relaxed")
    return _conform(frame, contract) if conform else frame  # type: ignore[arg-type]


def read_resources(paths: DataRoot, sessions: Iterable[str] | None = None, *, conform: bool = True) -> pl.DataFrame:
    """Raw turns (``RESOURCE_SCHEMA``), by session and turn. ``conform=False`` keeps each
    file's own columns, for the checks whose job is to find drift."""
    frame = _table(resource_files(paths, sessions), RESOURCE_SCHEMA, conform)
    return frame.sort("session_id", "turn") if conform and frame.height else frame


@spanned("read facts")
def read_facts(paths: DataRoot, sessions: Iterable[str] | None = None, *, conform: bool = False) -> pl.DataFrame:
    """Extracted facts (``FACT_SCHEMA``) of ``sessions`` (None: every session)."""
    return _table(fact_files(paths, sessions), FACT_SCHEMA, conform)


@spanned("check: read resource ids")
def resource_ids(paths: DataRoot, sessions: Iterable[str] | None = None) -> pl.Series:
    """Every stored resource id (of ``sessions``, or of every session)."""
    frame = read_frames(resource_files(paths, sessions), how="vertical", columns=["resource_id"])
    return frame["resource_id"] if frame is not None else pl.Series("resource_id", [], dtype=pl.String)


def schemas(found: Iterable[Path], root: Path) -> dict[str, dict[str, pl.DataType]]:
    """File (relative to ``root``) → its Parquet schema."""
    base = str(root).rstrip("/") + "/"
    return {str(f).removeprefix(base): dict(pl.read_parquet_schema(str(f))) for f in found}
