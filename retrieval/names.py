"""Names that become paths or keys: one allow-list for every door.

A session id becomes a folder (``inbox/<session_id>/``, ``resources/<session_id>/``,
``quarantine/<session_id>/``); a namespace and a project are stored with every memory and
filter every read. Each is checked here, the same way for HTTP, MCP, the CLI, an import
and the in-process client (DESIGN: names never become paths unchecked):

- ASCII letters, digits and ``_ . : @ -`` (a project may also hold ``/``, as
  "acme/atlas-web" does, and never becomes a path), starting with a letter or a digit, so
  ``..``, an absolute path, a separator, a NUL, a newline and a Unicode look-alike
  ("．．", "ａｌｉｃｅ") are all refused;
- at most ``SESSION_MAX`` / ``NAMESPACE_MAX`` characters.

``child`` is the one way a name joins a folder: the name is checked, and the result must
stay inside the folder.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from retrieval.paths import is_uri
from retrieval.projects import MAX_CHARS as PROJECT_MAX
from retrieval.projects import PATTERN as PROJECT
from retrieval.projects import check_project

SESSION_MAX = 200
NAMESPACE_MAX = 128
# JSON-schema patterns (pydantic, FastAPI and the MCP tools' schemas use them as given).
SESSION = rf"^[A-Za-z0-9][A-Za-z0-9_.:@-]{{0,{SESSION_MAX - 1}}}$"
NAMESPACE = rf"^[A-Za-z0-9][A-Za-z0-9_.@-]{{0,{NAMESPACE_MAX - 1}}}$"
_ALLOWED = {"session id": (SESSION, SESSION_MAX, "_ . : @ -"), "namespace": (NAMESPACE, NAMESPACE_MAX, "_ . @ -")}

__all__ = ["InvalidName", "NAMESPACE", "PROJECT", "PROJECT_MAX", "SESSION", "check_namespace", "check_project",
           "check_session_id", "child"]


class InvalidName(ValueError):
    """A name outside the allow-list (422 at the service's doors)."""


def _check(kind: str, value: Any) -> str:
    pattern, most, extra = _ALLOWED[kind]
    # fullmatch on the pattern's body: "$" would let a trailing newline through.
    if not isinstance(value, str) or not re.fullmatch(pattern[1:-1], value):
        shown = repr(value)[:80]
        raise InvalidName(f"{kind} {shown} is not allowed: 1 to {most} characters from A-Z a-z 0-9 {extra}, "
                          "starting with a letter or digit")
    return value


def check_session_id(value: Any) -> str:
    """``value`` as a session id, or ``InvalidName`` saying what a valid one is."""
    return _check("session id", value)


def check_namespace(value: Any) -> str:
    """``value`` as a namespace, or ``InvalidName`` saying what a valid one is."""
    return _check("namespace", value)


def child(folder: Any, name: str, kind: str = "session id") -> Path:
    """``folder / name`` for a checked ``name`` that stays inside ``folder``: a local
    folder is resolved, links included; an object store's (a ``UPath``) has no links, and
    the allow-list leaves no separator or ``..`` to climb out with."""
    _check(kind, name)
    path = folder / name
    if not is_uri(folder) and Path(path).resolve().parent != Path(folder).resolve():
        raise InvalidName(f"{kind} {name!r} leads outside {folder}")
    return path
