"""``retrieval.llm``: the one loop every LLM step uses, against a real HTTP endpoint on 127.0.0.1."""

from __future__ import annotations

import json

import pytest

from retrieval.config import load_config
from retrieval.llm import (
    InvalidReply,
    LLMNotConfigured,
    LLMOutputFailed,
    Usage,
    chat_client,
    complete_validated,
    load_prompt,
)
from tests.fake_openai import fake_openai  # noqa: F401  (fixture)

CONFIG = load_config()
ASK = [{"role": "system", "content": "Answer with a JSON number."}, {"role": "user", "content": "two"}]


def _number(reply: str) -> int:
    try:
        value = json.loads(reply)
    except json.JSONDecodeError:
        raise InvalidReply("the reply is not JSON") from None
    if not isinstance(value, int):
        raise InvalidReply(f"{value!r} is not a whole number")
    return value


def _repair(problem: str) -> str:
    return f"That could not be used: {problem}. Reply with only the number."


def test_a_bad_reply_is_echoed_back_with_the_repair_and_the_usage_adds_up(fake_openai):
    fake_openai.enqueue("two, I think", usage=(10, 3))
    fake_openai.enqueue("2", usage=(25, 1))

    value, usage = complete_validated(chat_client(CONFIG), ASK, _number, _repair, model="m", attempts=3)

    assert value == 2
    assert usage == Usage(attempts=2, prompt_tokens=35, completion_tokens=4)
    assert usage.replies == ("two, I think", "2")
    second = fake_openai.chat_requests[1]["messages"]
    assert second[:2] == ASK
    assert second[2] == {"role": "assistant", "content": "two, I think"}
    assert second[3]["content"] == "That could not be used: the reply is not JSON. Reply with only the number."
    assert ASK == [{"role": "system", "content": "Answer with a JSON number."}, {"role": "user", "content": "two"}]


def test_after_the_last_attempt_the_failure_carries_the_raw_reply_and_the_tokens(fake_openai):
    for reply in ("2.5", "two", "II"):
        fake_openai.enqueue(reply, usage=(10, 2))

    with pytest.raises(LLMOutputFailed) as failed:
        complete_validated(chat_client(CONFIG), ASK, _number, _repair, model="m", attempts=3, what="the count")

    assert failed.value.reason == "the count: the reply is not JSON (after 3 attempts with m)"
    assert failed.value.raw_response == "II"
    assert failed.value.usage == Usage(3, 30, 6)
    assert len(fake_openai.chat_requests) == 3


def test_a_transport_failure_names_the_status_and_keeps_what_was_spent(fake_openai):
    fake_openai.enqueue("nope", usage=(10, 1))
    fake_openai.enqueue("boom", status=401)

    with pytest.raises(LLMOutputFailed) as failed:
        complete_validated(chat_client(CONFIG, max_retries=0), ASK, _number, _repair, model="m", attempts=3)

    assert failed.value.reason.startswith("HTTP 401 from m at ")
    assert failed.value.attempts == 2 and failed.value.prompt_tokens == 10


def test_json_mode_asks_for_a_json_object(fake_openai):
    fake_openai.enqueue("7")
    complete_validated(chat_client(CONFIG), ASK, _number, _repair, model="m", json_mode=True)
    assert fake_openai.chat_requests[0]["response_format"] == {"type": "json_object"}


def test_the_cost_comes_from_the_configured_prices():
    usage = Usage(1, 2_000_000, 1_000_000)
    expected = 2 * CONFIG.llm.input_cost_per_mtok + CONFIG.llm.output_cost_per_mtok
    assert usage.cost_usd(CONFIG) == pytest.approx(expected)
    assert usage.cost_usd(CONFIG.replace(llm={"input_cost_per_mtok": 0.0, "output_cost_per_mtok": 0.0})) == 0.0


def test_the_client_needs_a_key_and_takes_its_settings_from_config(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMNotConfigured, match="OPENAI_API_KEY"):
        chat_client(CONFIG)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    client = chat_client(CONFIG.replace(llm={"timeout_seconds": 7, "transport_retries": 4}))
    assert client.timeout == 7 and client.max_retries == 4


def test_every_prompt_ships_with_the_package_and_is_versioned_by_its_bytes():
    import hashlib
    from importlib import resources

    folder = resources.files("prompts")
    names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".md"))
    assert {"extract_facts.md", "query_rewrite.md", "summarize_category.md", "cluster_insight.md",
            "judge_fact.md"} <= set(names)
    for name in names:
        data = folder.joinpath(name).read_bytes()
        assert load_prompt(name).version == hashlib.sha256(data).hexdigest()[:12]


def test_a_wheel_carries_the_prompts_and_the_defaults(tmp_path):
    """A non-editable install has every prompt (the query rewrite's too) and defaults.toml."""
    import subprocess
    import sys
    import zipfile
    from pathlib import Path

    import shutil

    root = Path(__file__).resolve().parents[1]
    source = tmp_path / "src"  # a copy: the build leaves build/ and *.egg-info beside the sources
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "memory_assets", "retrieval", "evals", "prompts"):
        copy = shutil.copytree if (root / name).is_dir() else shutil.copy
        copy(root / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(tmp_path), str(source)], check=True, capture_output=True, timeout=300)
    (wheel,) = tmp_path.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {f"prompts/{p.name}" for p in (root / "prompts").glob("*.md")}
    assert "prompts/query_rewrite.md" in shipped and shipped <= names
    assert "retrieval/defaults.toml" in names
