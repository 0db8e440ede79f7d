"""The layers (ARCHITECTURE.md, "Layout"): ``retrieval`` is split by who uses it, and the
project's modules import each other one way.

* the **kernel**, ``retrieval/*.py``, is shared with the pipeline and imports nothing
  from the agent's side or the service;
* the **agent's side**, ``retrieval/agent/``, imports the kernel, never the service;
* **nothing under** ``retrieval/`` imports the pipeline (``memory_assets``) or Dagster;
* the pipeline imports the agent's side or the service only where it is the product's
  own read path, each such module named below with its reason;
* there is **no import cycle** among ``memory_assets``, ``retrieval`` and ``evals``.

Every import counts: top-level, inside a function (a lazy import still ties two modules
together), and under ``if TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("memory_assets", "retrieval", "evals")

# Pipeline modules that may import the agent's side or the service, and why.
PIPELINE_USES_THE_AGENT_SIDE = {
    "memory_assets.cli.main": "`memory search` / `inject` are the agent's read path; `pin` acts through the client",
    "memory_assets.cli.items": "`memory edit` / `forget` / `pin` append the agent's events, as the operator",
    "memory_assets.cli.service": "`memory serve` and `memory keys` start the service and manage its keys",
}

# Import cycles known and not yet untangled: (the modules of one cycle) → why it is left.
# TODO: keep this empty; never add a cycle among retrieval's modules here.
ALLOWED_CYCLES: dict[frozenset[str], str] = {}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    line: int
    target: str  # the module imported, as written (a relative import made absolute)
    names: tuple[str, ...] = ()  # ``from target import names``


def _modules() -> dict[str, Path]:
    """Every module of the project by its dotted name (a package by its own)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> Iterator[Import]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(name, node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            yield Import(name, node.lineno, target, tuple(a.name for a in node.names))


IMPORTS = [i for name, path in MODULES.items() for i in _imports(name, path)]


def _project_module(dotted: str) -> str | None:
    """The project module ``dotted`` names, or the package holding it; None outside the project."""
    while dotted and dotted not in MODULES:
        dotted = dotted.rpartition(".")[0]
    return dotted or None


def _targets(i: Import) -> set[str]:
    """The project modules an import loads: ``from a import b`` is ``a.b`` when that is a module."""
    if not i.names:
        found = _project_module(i.target)
        return {found} if found else set()
    found = set()
    for n in i.names:
        module = f"{i.target}.{n}" if f"{i.target}.{n}" in MODULES else _project_module(i.target)
        if module:
            found.add(module)
    return found


def _where(i: Import) -> str:
    return f"{MODULES[i.source].relative_to(ROOT)}:{i.line} imports {i.target}"


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _kernel(module: str) -> bool:
    """``retrieval``'s top level; not the package itself (its front loads the agent's
    names on first use) and not its two sub-packages."""
    return module.startswith("retrieval.") and module.count(".") == 1 and \
        not _in(module, "retrieval.agent") and not _in(module, "retrieval.service")


def test_the_kernel_imports_neither_the_agent_side_nor_the_service():
    kernel = sorted(m for m in MODULES if _kernel(m))
    # What the pipeline needs is kernel (the module list is computed, this is a floor).
    assert {"retrieval.schema", "retrieval.config", "retrieval.text", "retrieval.scoring", "retrieval.store",
            "retrieval.interchange", "retrieval.checkpoints"} <= set(kernel)
    found = [_where(i) for i in IMPORTS if _kernel(i.source)
             if any(_in(t, "retrieval.agent") or _in(t, "retrieval.service") or t == "retrieval" for t in _targets(i))]
    assert found == []


def test_the_agent_side_imports_no_service():
    found = [_where(i) for i in IMPORTS if _in(i.source, "retrieval.agent")
             if any(_in(t, "retrieval.service") for t in _targets(i))]
    assert found == []


def test_nothing_under_retrieval_imports_the_pipeline_or_dagster():
    found = [_where(i) for i in IMPORTS if _in(i.source, "retrieval")
             if i.target.split(".")[0] in ("memory_assets", "dagster")
             or any(a.split(".")[0] == "dagster" for a in i.names if i.target == "")]
    assert found == []


def test_the_pipeline_reaches_the_agent_side_only_where_it_is_the_read_path():
    users: dict[str, list[str]] = {}
    for i in IMPORTS:
        if _in(i.source, "memory_assets") and any(
                _in(t, "retrieval.agent") or _in(t, "retrieval.service") or t == "retrieval" for t in _targets(i)):
            users.setdefault(i.source, []).append(_where(i))
    unexpected = {m: where for m, where in users.items() if m not in PIPELINE_USES_THE_AGENT_SIDE}
    assert unexpected == {}
    assert sorted(users) == sorted(PIPELINE_USES_THE_AGENT_SIDE), "an allowed module no longer needs it: drop it"


def _cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles_among_the_project_modules():
    edges: dict[str, set[str]] = {}
    lines: dict[tuple[str, str], str] = {}
    for i in IMPORTS:
        for t in _targets(i) - {i.source}:
            edges.setdefault(i.source, set()).add(t)
            lines.setdefault((i.source, t), _where(i))
    found = {frozenset(c): sorted(lines[a, b] for a in c for b in edges.get(a, ()) if b in c)
             for c in _cycles(edges)}
    assert not [c for c in ALLOWED_CYCLES if any(_in(m, "retrieval") for m in c)], "retrieval has no allowed cycle"
    assert {c: where for c, where in found.items() if c not in ALLOWED_CYCLES} == {}
    assert [sorted(c) for c in ALLOWED_CYCLES if c not in found] == [], "an allowed cycle is gone: drop it"


def test_the_kernel_loads_without_the_agent_side():
    """Importing every kernel module (what the pipeline does) loads neither the agent's
    side nor the service, not even through the package's front."""
    kernel = sorted(m for m in MODULES if _kernel(m))
    code = (f"import sys\nfor m in {kernel!r}: __import__(m)\n"
            "print(sorted(m for m in sys.modules if m.startswith(('retrieval.agent', 'retrieval.service'))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
