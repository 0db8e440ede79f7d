"""Project names: what a valid one is, and how a transcript's metadata names one.

A session may be about one project (the repository an agent works in). Its memories
about that project are scoped to it (``scope = "project"``); everything else it says
stays global. The agent names the project (``flush_session(project=…)``,
``remember(project=…)``), or the ingest derives it from the session's metadata
(``project_from_metadata``): the repository's name, else the working directory's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

MAX_CHARS = 128
# One token an agent, a path and a URL all spell the same: "atlas-web", "acme/atlas-web".
PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@/-]{0,127}$"
_VALID = re.compile(PATTERN[1:-1])
# Metadata keys that say where a session worked, best first: a repository names the
# project itself; a working directory only by its folder's name.
REPOSITORY_KEYS = ("repository", "repo", "git_remote")
DIRECTORY_KEYS = ("workspace", "cwd")
METADATA_KEYS = (*REPOSITORY_KEYS, *DIRECTORY_KEYS)
# A folder that is nobody's project: the cwd of an agent started from home or /tmp.
_NOT_A_PROJECT = frozenset({"", "~", ".", "..", "home", "users", "root", "tmp", "temp", "var", "src", "code",
                            "projects", "repos", "workspace", "workspaces", "desktop", "documents", "downloads"})
_UNSAFE = re.compile(r"[^A-Za-z0-9_.@-]+")


def check_project(value: Any) -> str:
    """``value`` as a project name, or ``ValueError`` saying what a valid one is."""
    name = value.strip() if isinstance(value, str) else None
    # fullmatch, not "$" (a newline would pass); no "." or ".." part between slashes.
    if name is None or not _VALID.fullmatch(name) or any(p in ("", ".", "..") for p in name.split("/")):
        raise ValueError(f"project {value!r} is not a project name: a non-empty string of at most {MAX_CHARS} "
                         "characters from A-Z a-z 0-9 _ . @ / -, starting with a letter or digit, with no "
                         "empty, '.' or '..' part between slashes")
    return name


def _last_part(value: str) -> str:
    """The last path component of a URL, an scp-style remote or a path (either slash)."""
    text = value.strip().rstrip("/\\")
    text = text.rsplit(":", 1)[-1] if re.match(r"^[\w.-]+@[\w.-]+:", text) else text  # git@host:owner/name
    return re.split(r"[/\\]", text)[-1]


def _name(raw: str) -> str | None:
    name = _UNSAFE.sub("-", raw.removesuffix(".git")).strip("-._@")[:MAX_CHARS]
    return name if name and name.lower() not in _NOT_A_PROJECT and _VALID.match(name) else None


def _directory(path: str) -> str | None:
    """A working directory's project: its folder's name, unless it is a home or temp folder."""
    parts = [p for p in re.split(r"[/\\]", path.strip()) if p]
    if len(parts) >= 2 and parts[-2].lower() in ("home", "users"):  # /home/sofia, C:\Users\sofia
        return None
    return _name(parts[-1]) if parts else None


def project_from_metadata(metadata: Mapping[str, Any]) -> str | None:
    """The project a session's metadata names, or None.

    The repository first (``repository``, ``repo``, ``git_remote``: its last path part
    without ``.git``: "github.com/acme/atlas-web.git" → "atlas-web"; a mapping gives its
    ``name`` or ``url``), then the working directory (``workspace``, ``cwd``: its
    folder's name, "/home/sofia/src/atlas-web" → "atlas-web", never a home or temp
    folder). Characters a project name cannot hold become "-". A nested ``metadata``
    mapping is read the same way.
    """
    nested = metadata.get("metadata")
    sources = [metadata, nested] if isinstance(nested, Mapping) else [metadata]
    for key in METADATA_KEYS:
        for source in sources:
            value = source.get(key)
            if isinstance(value, Mapping):
                value = value.get("name") or value.get("url")
            if not isinstance(value, str) or not value.strip():
                continue
            found = _name(_last_part(value)) if key in REPOSITORY_KEYS else _directory(value)
            if found:
                return found
    return None
