"""One home per rule (ARCHITECTURE.md): a second copy of a rule is a bug, so these tests
read the source and fail when a rule grows a second home."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("memory_assets", "retrieval", "evals")


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield str(path.relative_to(ROOT)), ast.parse(path.read_text(encoding="utf-8"))


def _dotted(node: ast.AST) -> str:
    """``a.b.c`` for an attribute chain, ``""`` when it does not start from a name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return "." + ".".join(reversed(parts)) if parts else ""


def _calls(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield node.lineno, _dotted(node.func)


def test_only_retrieval_llm_talks_to_the_model():
    """Ask → validate → repair → retry → tally lives in ``retrieval.llm.complete_validated``,
    and ``retrieval.llm.chat_client`` is the one place a client is built."""
    found = [f"{name}:{line} {call}" for name, tree in _modules() if name != "retrieval/llm.py"
             for line, call in _calls(tree)
             if call.endswith("chat.completions.create") or call.split(".")[-1] in ("OpenAI", "AsyncOpenAI")]
    assert found == []


def test_prompts_are_read_one_way():
    """``retrieval.llm.load_prompt`` is the only reader of the ``prompts`` package."""
    found = [name for name, tree in _modules() if name != "retrieval/llm.py"
             if any(isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.strip("/") == "prompts"
                    for n in ast.walk(tree))]
    assert found == []
