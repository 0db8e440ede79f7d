"""One home per rule (ARCHITECTURE.md): a second copy of a rule is a bug, so these tests
read the source and fail when a rule grows a second home."""

from __future__ import annotations

import ast
import re
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


# --- the lexicon: retrieval/text.py ----------------------------------------------------

# The lexicon: words (``retrieval/text.py``) and the calendar (``retrieval/dates.py``).
LEXICON = ("retrieval/text.py", "retrieval/dates.py")
_FUNCTION = {"the", "and", "of", "to", "is", "in", "it", "was", "for", "with"}
_MONTHS = {"january", "february", "march", "april", "june", "july", "august", "september", "october",
           "november", "december"}
_WEEKDAYS = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}


_WORD = re.compile(r"[a-z']+")
_REGEX = re.compile(r"[\\|()\[\]?*+^$]")


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _docstrings(tree: ast.Module) -> set[int]:
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}


def _word_lists(tree: ast.Module) -> Iterator[tuple[int, set[str]]]:
    """Literals that are lists of words, not sentences or patterns: ``"a b c".split()`` or a
    set, list or tuple of plain words."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _dotted(node.func).endswith(".split") and isinstance(node.func, ast.Attribute):
            strings = _strings(node.func.value)
        elif isinstance(node, (ast.Set, ast.List, ast.Tuple)):
            strings = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(strings) < len(node.elts):
                continue
            if sum(len(s.split()) >= 4 for s in strings) * 2 > len(strings):
                continue  # mostly sentences (templates, test data): not a list of words
        else:
            continue
        text = " ".join(strings)
        if strings and not _REGEX.search(text):
            yield node.lineno, set(text.lower().split())


def _patterns(tree: ast.Module) -> Iterator[tuple[int, set[str], str]]:
    """Rules written as data: regular-expression alternations (string constants holding a
    ``|``) and word lists. Sentences (test data, messages) are neither."""
    docs = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs \
                and "|" in node.value:
            yield node.lineno, set(_WORD.findall(node.value.lower())), node.value
    for line, words in _word_lists(tree):
        yield line, words, " ".join(sorted(words))


def _violations(test) -> list[str]:
    return sorted({f"{name}:{line}" for name, tree in _modules() if name not in LEXICON
                   for line, words, text in _patterns(tree) if test(words, text)})


def test_one_stopword_list():
    """A list of words holding the commonest function words is a stopword list: it is
    built from ``retrieval.text``'s lists, not written again."""
    found = [f"{name}:{line}" for name, tree in _modules() if name not in LEXICON
             for line, words in _word_lists(tree) if len(words & _FUNCTION) >= 5]
    assert found == []


def test_one_month_and_weekday_table():
    assert _violations(lambda words, _: len(words & _MONTHS) >= 3 or len(words & _WEEKDAYS) >= 3) == []


def test_one_date_reader():
    """Reading a day from words ("next Friday", "October 12") happens in ``retrieval.dates``
    only: nobody else turns a month or weekday name into a number or does calendar
    arithmetic with dateutil or dateparser."""
    found = []
    for name, tree in _modules():
        if name in LEXICON:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in ("MONTH_NUMBERS", "WEEKDAY_NUMBERS"):
                found.append(f"{name}:{node.lineno} {node.id}")
            if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                    n.split(".")[0] in ("dateutil", "dateparser") for n in _imported(node)):
                found.append(f"{name}:{node.lineno} imports {', '.join(_imported(node))}")
    assert found == []


def test_one_negation_rule():
    assert _violations(lambda words, _: {"not", "never"} <= words and bool(words & {"nothing", "nobody", "none"})) == []


def test_one_sentiment_classifier():
    assert _violations(lambda words, text: "|" in text and "frustrat" in text
                       and bool(words & {"thrilled", "stoked", "ugh"})) == []


def test_one_way_to_strip_an_injected_block():
    """Only ``retrieval.text.strip_injected`` builds a pattern from the block's markers."""
    found = [f"{name}:{node.lineno}" for name, tree in _modules() if name not in LEXICON
             for node in ast.walk(tree) if isinstance(node, ast.Call) and _dotted(node.func).endswith("compile")
             and "INJECTION_START" in ast.unparse(node)]
    assert found == []


# --- age, staleness and boosts: retrieval/scoring.py ------------------------------------


def test_age_staleness_and_the_preload_boost_are_read_only_through_scoring():
    """Ranking, the trust pass, the block and the lifecycle call ``age_of`` / ``is_stale``
    / ``preload_boost``; nobody else reads the clock's distance or the boost's key."""
    found = []
    for name, tree in _modules():
        if name in ("retrieval/scoring.py", "retrieval/config.py"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "today_boost":
                found.append(f"{name}:{node.lineno} .{node.attr}")
            if isinstance(node, ast.Compare) and "stale_after_days" in ast.unparse(node):
                found.append(f"{name}:{node.lineno} a staleness test")
            if isinstance(node, ast.Call) and _dotted(node.func).split(".")[-1] == "age_days":
                found.append(f"{name}:{node.lineno} age_days()")
    assert found == []


def test_one_item_has_one_age_in_the_ranking_the_flags_and_the_block():
    from datetime import datetime, timedelta, timezone

    from retrieval import scoring
    from retrieval.agent import trust
    from retrieval.agent.injection import format_line
    from retrieval.agent.search import Hit
    from retrieval.config import load_config

    config = load_config()
    now = datetime(2026, 9, 1, tzinfo=timezone.utc)

    def hit(**times: int) -> Hit:
        row = {k: now - timedelta(days=d) for k, d in times.items()}
        return Hit("a1", "Aaron's WRX is due an oil change.", "vehicle", 0.8, 0.9, "trusted", "s", [], [], 1.0, 1.0,
                   row={**row, "status": "active"})

    # Learned 200 days ago, confirmed 10 days ago; the pipeline rewrote it yesterday (archiving, supersession).
    fresh = hit(created_at=200, last_referenced_at=10, updated_at=1)
    assert scoring.age_of(fresh.row, now) == 10
    assert "age: 10d;" in format_line(fresh, now)
    assert "[stale]" not in trust.flags([fresh], config, now).get("a1", [])
    # Never confirmed since it was learned, 95 days ago: stale, whatever rewrote it since.
    old = hit(created_at=95, updated_at=1)
    assert "age: 95d;" in format_line(old, now)
    assert "[stale]" in trust.flags([old], config, now)["a1"]
    assert scoring.age_of(old.row, now) > config.decay.stale_after_days > scoring.age_of(fresh.row, now)


# --- the namespace rule: retrieval/agent/view.py -----------------------------------------


def test_only_the_view_asks_whose_namespace_a_row_is_on_the_agent_side():
    """Whose memory a reader owns, where its writes go and the default namespace are asked
    of ``View`` (``retrieval/agent/view.py``: ``of``, ``owns``, ``own_rows``, ``writer``): no
    other module of the agent's side compares a namespace or reads ``[pipeline] namespace``."""
    found = []
    for name, tree in _modules():
        if not name.startswith("retrieval/agent/") or name == "retrieval/agent/view.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and "namespace" in ast.unparse(node) \
                    and any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops):
                found.append(f"{name}:{node.lineno} {ast.unparse(node)}")
            if isinstance(node, ast.Attribute) and _dotted(node).endswith("pipeline.namespace"):
                found.append(f"{name}:{node.lineno} {_dotted(node)}")
    assert found == []


# --- storage: memory_assets/lib/warehouse.py (pipeline), retrieval/files.py (agent) -----

# The pipeline writes through the warehouse; the agent appends through the inbox, whose
# one atomic writer (``retrieval.files.atomic_write``) the warehouse uses too.
# The model export is the machine's cache (~/.cache/agent-memory/models), in no data root;
# a read index is built in a temporary folder (the warehouse copies it under the root) and
# fetched from an object store into the root's local state (``DataRoot.local``).
WRITERS = ("memory_assets/lib/warehouse.py", "retrieval/files.py", "retrieval/onnx_model.py", "retrieval/read_index.py")
_WRITES = ("write_parquet", "write_text", "write_bytes", "write_csv", "write_ndjson", "sink_parquet",
           "touch", "unlink", "copyfile", "copy2", "rmtree")


def _writes(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        call = _dotted(node.func)
        last = call.split(".")[-1]
        if call.startswith(("warehouse.", "inbox.")):
            continue  # through the writers
        if call in ("os.replace", "os.rename", "os.remove", "shutil.move") or last in _WRITES:
            yield node.lineno, call
        elif last == "replace" and len(node.args) == 1 and not node.keywords:
            yield node.lineno, call  # Path.replace(target): str.replace takes two
        elif last == "open" and any(isinstance(a, ast.Constant) and isinstance(a.value, str) and set(a.value) & set("wax")
                                    for a in [*node.args[1:2], *[k.value for k in node.keywords if k.arg == "mode"]]):
            yield node.lineno, f"{call}(…, {ast.unparse(node.args[1]) if len(node.args) > 1 else 'mode=…'})"


def test_only_the_warehouse_and_the_inbox_write_files():
    """No module but ``lib/warehouse.py`` (and, for the agent's appends, ``retrieval/files.py``;
    for the machine's model cache, ``retrieval/onnx_model.py``) calls ``os.replace``, ``open(…, "w")``, ``write_parquet`` or another file writer."""
    found = [f"{name}:{line} {call}" for name, tree in _modules()
             if name not in WRITERS and not name.startswith(("evals/", "memory_assets/cli/main.py"))
             for line, call in _writes(tree)
             # The local deployment's children append their output to a log as they run.
             if not (name == "memory_assets/deploy/local.py" and call == "open(…, 'ab')")]
    assert found == []


def test_an_object_store_data_root_is_not_turned_into_a_local_folder():
    from retrieval.paths import DataRoot

    # Path("s3://bucket/memory") would be a local folder "s3:/bucket/memory".
    assert str(DataRoot.resolve("s3://bucket/memory").inbox) == "s3://bucket/memory/inbox"
    assert str(DataRoot.resolve("file:///tmp/memory").root) == "/tmp/memory"


def test_no_module_name_means_two_things():
    """``lib/``, ``cli/`` and ``retrieval/`` name each module once: no two ``rules.py``, ``items.py`` or
    ``jobs.py`` (``defs/<area>/assets.py``, ``checks.py``… are the Dagster layout, one per area)."""
    names: dict[str, list[str]] = {}
    for folder in ("memory_assets/lib", "memory_assets/cli", "retrieval"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name != "__init__.py":
                names.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in names.items() if len(paths) > 1} == {}
    # "resources" are the stored turns (the asset): Dagster's resources live in defs/runtime.py.
    assert sorted(str(p.relative_to(ROOT)) for p in (ROOT / "memory_assets").rglob("resources.py")) == []


def test_lib_is_pipeline_logic_and_dagster_objects_live_in_defs():
    """``lib/`` holds the stages, with no Dagster import; schedules, partitions, freshness,
    the run clock and check results are in ``defs/``, the CLI's back-ends in ``cli/``."""
    importers = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "memory_assets/lib").rglob("*.py")
                       if any(isinstance(node, (ast.Import, ast.ImportFrom))
                              and any(n.startswith("dagster") for n in _imported(node))
                              for node in ast.walk(ast.parse(path.read_text()))))
    assert importers == []
    stages = {p.name for p in (ROOT / "memory_assets/lib").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert {"ingest", "extraction", "items", "lifecycle", "quality"} <= stages


def test_data_moves_one_way_from_extraction_to_items():
    """Ingest and extraction never import a later stage (items, lifecycle, summaries, the
    archive, erasure): the write gate and the content hash they need live with them or in
    the kernel, so ``extraction`` and ``items`` form no import cycle."""
    later = ("items", "lifecycle", "summaries", "archive", "erasure")
    found = []
    for stage in ("ingest", "extraction"):
        for path in sorted((ROOT / "memory_assets/lib" / stage).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    names = _imported(node) + ([f"{node.module}.{a.name}" for a in node.names]
                                               if isinstance(node, ast.ImportFrom) and node.module else [])
                    found += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names
                              if any(n.startswith(f"memory_assets.lib.{s}") for s in later)]
    assert found == []


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    return [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]


# --- evals and benches apart -------------------------------------------------------------


def test_evals_build_with_the_stage_steps_not_with_dagster():
    """``evals/`` builds its data roots with the pipeline's stage steps in process: it never
    imports Dagster, the definitions (``memory_assets.defs``) or the CLI's back-ends, and no
    module under ``evals/`` (benches included) imports another module's private name.
    Benchmarks (``evals/bench/``) time the real scheduled jobs, so they may run Dagster."""
    found = []
    for name, tree in _modules():
        if not name.startswith("evals/"):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            modules = _imported(node)
            if not name.startswith("evals/bench/") and any(
                    m.split(".")[0] == "dagster" or m.startswith(("memory_assets.defs", "memory_assets.cli"))
                    for m in modules):
                found.append(f"{name}:{node.lineno} imports {', '.join(modules)}")
            if isinstance(node, ast.ImportFrom) and any(a.name.startswith("_") for a in node.names):
                found.append(f"{name}:{node.lineno} imports a private name from {node.module}")
    assert found == []


# --- time conversion: retrieval/moments.py -----------------------------------------------

MOMENTS = "retrieval/moments.py"


def _time_conversions(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Turning text or a datetime into an aware one: ``datetime.fromisoformat``, a
    ``.replace(tzinfo=…)`` and an ``.astimezone(zone)``. (``date.fromisoformat`` of a
    partition key, building a time with ``tzinfo=`` and ``astimezone()`` to local time are not.)"""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        call = _dotted(node.func)
        last = call.split(".")[-1]
        if call.endswith("datetime.fromisoformat"):
            yield node.lineno, call
        elif last == "replace" and any(k.arg == "tzinfo" for k in node.keywords):
            yield node.lineno, f"{call}(tzinfo=…)"
        elif last == "astimezone" and (node.args or node.keywords):
            yield node.lineno, f"{call}({ast.unparse(node.args[0]) if node.args else '…'})"


def test_only_moments_turns_text_or_a_datetime_into_utc():
    """``retrieval.moments`` (``utc``, ``parse_utc``) is the one home of "every stored time is
    UTC; without an offset it is UTC"."""
    found = [f"{name}:{line} {call}" for name, tree in _modules()
             if name != MOMENTS
             for line, call in _time_conversions(tree)]
    assert found == []


# --- readable modules, and config from the shell ----------------------------------------

MAX_MODULE_LINES = 500


def test_no_module_is_over_500_lines():
    """A module is read in one sitting: none under ``memory_assets/``, ``retrieval/`` or
    ``evals/`` is longer than 500 lines. Split a longer one by what its parts do (as
    ``evals/bench/``: the synthetic memory, its data roots, the timing, each bench)."""
    long = {str(path.relative_to(ROOT)): lines for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
            if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def _calls_in_functions(node: ast.AST, function: str | None = None) -> Iterator[tuple[int, str, str | None]]:
    """(line, dotted call, the innermost function making it; None at module level)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Call):
            yield child.lineno, _dotted(child.func), function
        inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
        yield from _calls_in_functions(child, inner)


def test_evals_load_the_config_only_in_a_commands_main():
    """Config is passed in from the shell, never loaded below it: under ``evals/`` only a
    command's ``main(argv)`` calls ``load_config``; what it calls takes ``config`` (or an
    ``Embedder``) as a parameter, so a test or an asset passes its own."""
    found = [f"{name}:{line} {call} in {function or 'the module'}" for name, tree in _modules()
             if name.startswith("evals/")
             for line, call, function in _calls_in_functions(tree)
             if call.split(".")[-1] == "load_config" and function != "main"]
    assert found == []


# --- intent cues, tokens and numbers: retrieval/intent.py, retrieval/text.py --------------

# The words by which a user asks the memory to keep something, takes something back or
# sets a standing rule. "remind me" is left out: a profile question ("remind me about
# Maya") asks it too, and reads it where it reads its other openings.
_INTENT_PHRASES = re.compile(
    r"keep in mind|scratch that|misspoke|make a note|from now on|going forward|(?:n't|not)\)? forget")


def _as_words(pattern: str) -> str:
    """A pattern read as the words it matches: ``keep\\s+in\\s+mind`` → "keep in mind"."""
    return re.sub(r"\s+", " ", re.sub(r"\\[sbW][+*]?\??", " ", pattern.lower()).replace("'?", "'"))


def test_one_home_for_intent_cues():
    """A request to keep something, a correction and a standing rule are read by the signal
    scan, the offline extractor and the query rewrite from ``retrieval.intent`` alone:
    no other module writes those words into a pattern."""
    found = sorted({f"{name}:{node.lineno}" for name, tree in _modules() if name != "retrieval/intent.py"
                    for docs in [_docstrings(tree)]
                    for node in ast.walk(tree) if id(node) not in docs
                    and isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and _INTENT_PHRASES.search(_as_words(node.value))})
    assert found == []


def test_the_readers_of_intent_read_the_same_cues():
    from memory_assets.lib.extraction import cues
    from retrieval import intent
    from retrieval.agent import rewrite, signals

    # The turn that asks to keep something fires the signal and marks the extracted fact.
    said = "Please remember that Maya's birthday is October 12."
    assert "remember" in signals.scan(said) and cues.ASKS_TO_KEEP is intent.ASKS_TO_KEEP
    assert cues.KEEP_PREFIX.sub("", "Remember that Maya's birthday is October 12") == "Maya's birthday is October 12"
    # Telling a story or asking the memory is not a request to keep anything.
    for story in ("I remember when we met in Lisbon", "I remembered the keys", "Do you remember my sister?"):
        assert "remember" not in signals.scan(story), story
    # The rewrite drops the words that ask the memory, and keeps what is asked.
    assert rewrite.sentence_query("Do you remember what Maya's birthday is?", "Known context:") \
        == "what Maya's birthday is?"
    # One standing-rule opener for the scan and the extractor's rule reader.
    assert "rule" in signals.scan("From here on out, tabs not spaces")
    assert cues.RULE_LEAD.sub("", "From here on out, run the linter first") == "run the linter first"


def test_one_tokenizer():
    """Splitting text into words is ``retrieval.text.tokens`` (or ``TOKEN`` for spans): no
    module writes its own word pattern (a class of letters repeated: ``[a-z][a-z'-]*``)."""
    word_pattern = re.compile(r"^(?:\\b)?\[(?:\\w|A-Za-z|a-z|A-Z)[^\]]*\]\[[^\]]*\][*+]")
    found = sorted(f"{name}:{node.lineno} {node.value}" for name, tree in _modules() if name not in LEXICON
                   for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
                   and word_pattern.match(node.value) and "\\s" not in node.value)  # a phrase of names is no tokenizer
    assert found == []


def test_one_number_pattern():
    """A number written in digits is ``retrieval.text.NUMBER``: nobody else writes
    ``\\d[\\d,.]*`` or ``\\d+(?:[.,]\\d+)*`` (credentials' formats aside: those are shapes of
    secrets, not numbers)."""
    shapes = re.compile(r"\\d\[\\d|\\d\+\(\?:\[")
    found = sorted(f"{name}:{node.lineno}" for name, tree in _modules()
                   if name not in (*LEXICON, "retrieval/credentials.py")
                   for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
                   and shapes.search(node.value))
    assert found == []


def test_tokens_keep_words_and_numbers_whole():
    from retrieval.text import numbers, tokens

    said = "Hey, I'm O'Brien; us-east-1 at 9:30, $1,200 by 10/12/2026 on node.js & c++ and/or c#. Done... Zoë's café."
    assert tokens(said) == ["Hey", "I'm", "O'Brien", "us-east-1", "at", "9:30", "1,200", "by", "10/12/2026", "on",
                            "node.js", "c++", "and", "or", "c#", "Done", "Zoë's", "café"]
    assert numbers("TP6104 costs $1,200 at 9:30. Gate 5.") == {"6104", "1,200", "9:30", "5"}


# --- the default namespace: MemoryConfig.default_namespace ---------------------------------



def test_the_default_namespace_is_asked_of_the_config():
    """Where data handed over without a namespace goes (``[pipeline] namespace``) is
    ``MemoryConfig.default_namespace``: no other module reads ``pipeline.namespace`` or
    writes its value as a literal."""
    import tomllib

    default = tomllib.loads((ROOT / "retrieval/defaults.toml").read_text())["pipeline"]["namespace"]
    found = []
    for name, tree in _modules():
        if name == "retrieval/config.py":
            continue
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _dotted(node).endswith("pipeline.namespace"):
                found.append(f"{name}:{node.lineno} {_dotted(node)}")
            if isinstance(node, ast.Constant) and node.value == default and id(node) not in docs:
                found.append(f"{name}:{node.lineno} {default!r}")
    assert found == []


# --- config from the shell: load_config ----------------------------------------------------

# The shells, which load the config in force and pass it to everything below them.
CONFIG_SHELLS = {
    # `memory`: each command loads the config (`--config` sets MEMORY_CONFIG) and passes it on.
    "memory_assets/cli/": None,
    # Dagster's `memory` resource (``MemoryRoot.config``), and ``location_config`` for the
    # objects built when the code location loads (a backfill policy, a sensor's interval).
    "memory_assets/defs/runtime.py": None,
    # The agent's shell: ``MemoryClient`` loads it once, in its constructor; the service's
    # app builds one.
    "retrieval/agent/client.py": "MemoryClient.__init__",
}


def _calls_with_their_function(node: ast.AST, where: str | None = None) -> Iterator[tuple[int, str, str | None]]:
    """(line, dotted call, ``Class.method`` or ``function`` making it; None at module level)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Call):
            yield child.lineno, _dotted(child.func), where
        inner = where
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inner = f"{where}.{child.name}" if where and isinstance(node, ast.ClassDef) else child.name
        yield from _calls_with_their_function(child, inner)


def test_the_config_is_loaded_only_by_the_shells():
    """Config is passed in from the shell, never loaded below it: ``load_config`` is called
    only by the shells in ``CONFIG_SHELLS`` (``evals/`` has its own rule: only a command's
    ``main``)."""
    found = []
    for name, tree in _modules():
        if name.startswith("evals/"):
            continue
        for line, call, where in _calls_with_their_function(tree):
            if call.split(".")[-1] != "load_config":
                continue
            shell = next((prefix for prefix in CONFIG_SHELLS if name.startswith(prefix)), None)
            if shell is None or CONFIG_SHELLS[shell] not in (None, where):
                found.append(f"{name}:{line} in {where or 'the module'}")
    assert found == []


# --- MemoryClient: a thin front over the agent's side ----------------------------------------

MAX_CLIENT_LINES = 200


def test_memory_client_is_a_thin_front():
    """``MemoryClient`` fronts the agent's parts (``View``, ``recall``, ``browse``, ``pending``,
    ``reminders``, ``echo``, ``sessions``): each method is its docstring and a call, so the
    class stays within ``MAX_CLIENT_LINES`` lines; logic goes to the part it fronts."""
    tree = ast.parse((ROOT / "retrieval/agent/client.py").read_text(encoding="utf-8"))
    [client] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "MemoryClient"]
    assert client.end_lineno - client.lineno + 1 <= MAX_CLIENT_LINES


# --- structure before prose ------------------------------------------------------------

# Calls that read words back out of an item's ``content`` (a pattern, the tokenizer, a
# number or polarity reader) instead of a field extraction wrote.
_PARSERS = frozenset({"search", "findall", "finditer", "match", "fullmatch", "sub", "split", "tokens", "keywords",
                      "numbers", "names_in", "aliases_in", "mentions", "disagree", "denies_or_ends", "negated",
                      "contradict", "subject_of", "content_words", "value_words", "written_words", "same_as"})
# The stages after extraction, which should read fields only (ARCHITECTURE.md, "Structure
# before prose"), and the trust pass.
_LATER = ("memory_assets/lib/items", "memory_assets/lib/lifecycle", "memory_assets/lib/summaries",
          "memory_assets/lib/archive", "retrieval/agent/trust.py")

# String methods that read text: called on ``content``, they parse it too.
_TEXT_METHODS = frozenset({"lower", "find", "startswith", "endswith", "count"})


def _own_calls(function: ast.AST):
    """The calls in ``function``'s body, not in a function defined inside it (that one is
    walked on its own, under its own name)."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Call):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _reads_content(node: ast.AST) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and n.attr == "content" or isinstance(n, ast.Name) and n.id in ("content", "contents"):
            return True
        if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and n.slice.value == "content":
            return True
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get" and n.args
                and isinstance(n.args[0], ast.Constant) and n.args[0].value == "content"):
            return True
    return False


def test_no_later_stage_parses_content_again():
    """Extraction writes the fields (subject, relation, value, cue, tentative…); the later
    stages read them and never parse ``content`` back (an update or an import reads new
    words as extraction does: ``fields.read_fields``, ``fields.said_fields``)."""
    found = set()
    for where in _LATER:
        paths = [ROOT / where] if where.endswith(".py") else sorted((ROOT / where).rglob("*.py"))
        for path in paths:
            for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for call in _own_calls(function):
                    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
                    # A parser given the content, or a text method called on it ("….lower()").
                    on_content = isinstance(call.func, ast.Attribute) and name in _TEXT_METHODS and _reads_content(call.func.value)
                    if on_content or name in _PARSERS and any(_reads_content(a) for a in call.args):
                        found.add(f"{path.relative_to(ROOT)}::{function.name} {name}")
    assert found == set(), "a later stage parses content: read a field instead"
