"""How fast the pipeline ingests and extracts many sessions: ``memory bench ingest --sessions N``.

A benchmark, not a test. In a fresh temporary data root it generates ``--sessions`` agent
sessions of ``--turns`` turns each (user and assistant alternating, deterministic for a
``--seed``): the user states facts about themselves and the people around them
(names, preferences, allergies, appointments and other dates, family, hobbies), work
facts and decisions (projects, services, deadlines, standing rules), and between them
asks questions and chats; the assistant acknowledges, answers and drafts. Every session
has its own id and ISO-8601 timestamps (UTC offset included) increasing turn by turn.

Then it measures:

* **handover** (``handover_s``) — each session handed to the pipeline the way agents
  do at session end: ``MemoryClient(root).flush_session(session_id, messages)``
  (redaction, the inbox file);
* **materialize** — one ``memory --data-root ROOT materialize --quiet``, a fresh
  process exactly as an operator runs it (offline extractor unless the config says
  otherwise): every session ingested and extracted, memory items built, embedded,
  checked and published. Wall time (``materialize_wall_s``), CPU time of that process
  and the processes it waited for (``materialize_cpu_s``, user + system, from
  ``getrusage(RUSAGE_CHILDREN)`` before and after) and its peak resident memory
  (``peak_rss_mib``: the largest child of this process so far, which in a
  ``memory bench ingest`` process is that run). Embedding-model load is part of it.

And checks that nothing was lost: a session counts as extracted when its facts file
(``warehouse/extracted_facts/<session>.parquet``) exists, quarantined when it has an open
quarantine record, ``lost`` otherwise. Also reported: the facts extracted, the items
published, and the Dagster runs the data root's instance recorded, by job (how the
pipeline batched the sessions into runs) and how many failed.

``--s3`` puts the data root on an S3-compatible server started on 127.0.0.1 for the bench
(``evals/bench/s3.py``: moto), reached through the standard ``AWS_*`` variables like any
bucket; the Dagster instance and DuckDB's scratch file stay on the local disk.

    memory bench ingest [--sessions 1000] [--turns 50] [--seed 0] [--s3] [--keep] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from evals.bench.serving import service_env
from evals.bench.synthetic import BENCH_NOW, EARLIER, QUESTIONS, TEMPLATES, Draw
from evals.bench.timing import machine
from retrieval.config import MemoryConfig, load_config

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")

SESSION_PREFIX = "bench-ingest-"

# --- the conversations ------------------------------------------------------------------

# What the user says about themselves: the offline extractor turns each into a fact in
# the third person ("I'm allergic to peanuts" → "User is allergic to peanuts").
FIRST_PERSON: tuple[str, ...] = (
    "I prefer {drink} over {drink2}, just so you know.",
    "I'm allergic to {allergen}, so please keep that in mind.",
    "My {relation} {person2} lives in {city}.",
    "My {relation} {person2}'s birthday is on {day}.",
    "I work as a {role} at {company}.",
    "I started at {company} in {month} {year}.",
    "I have a dentist appointment on {day} at {time}.",
    "I take {dose} mg of {medication} every morning.",
    "I don't eat {food} anymore.",
    "I've been doing {hobby} for {n} years now.",
    "I play {instrument} in a band with {person2}.",
    "I have a {pet} named {pet_name}.",
    "My {pet} {pet_name} has a vet appointment on {day}.",
    "I'm flying to {city} on {day} for the {project} kickoff.",
    "I'm planning a trip to {city} in {month} with my {relation}.",
    "I love {cuisine} food, especially {dish}.",
    "I hate meetings before {hour} am.",
    "I use {editor} for everything, please don't suggest other editors.",
    "My {make} {model} needs new {part} before {day}.",
    "My {make} {model} has {miles} miles on it.",
    "I run {km} km three times a week.",
    "I moved to {city} in {year}.",
)
# Work: decisions, deadlines, standing rules, incidents.
WORK: tuple[str, ...] = (
    "We decided to use {tech} for the {service}.",
    "We decided to migrate the {service} from {tech} to {tech2} by {month}.",
    "The deadline for the {project} project is {day}.",
    "Please always run {command} before merging anything into the {service}.",
    "Deploys of the {service} need {person}'s review first.",
    "The {service} went down on {day} because of {cause}.",
    "{person} from {company} is joining the {project} team on {day}.",
    "Our standup for {project} is every {weekday} at {time}.",
    "I have a weekly one-on-one with {person2} on {weekday}s.",
    "Version {version} of the {service} shipped on {day}.",
    "We agreed to freeze deploys of the {service} on Fridays after {time}.",
)
LEADS = ("", "", "Just so you know: ", "FYI, ", "Oh, and ", "Something to remember: ")
# Chit-chat and requests to the assistant, each with the assistant's reply: no fact in them.
CHATTER: tuple[tuple[str, str], ...] = (
    ("Morning!", "Good morning! What are we working on today?"),
    ("ok", "Great."),
    ("Thanks, that helped.", "Happy to help!"),
    ("Hmm, let me think about that.", "Take your time."),
    ("lol, fair enough", "Ha, indeed."),
    ("Ugh, long day.", "Sorry to hear that. Want to wrap up with a short list for tomorrow?"),
    ("Let's pick this up after lunch.", "Sounds good, I'll have the notes ready."),
    ("Can you summarize where we are?",
     "Sure. So far we covered the {project} timeline and the open question about the {service}."),
    ("Could you draft a short email to {person2} about the {project} timeline?",
     "Here's a draft:\n\nHi {person2}, a quick update on {project}: we're on track and I'll share more "
     "after the review.\n\nBest"),
    ("What's a good name for a {pet}?", "A few ideas: {pet_name}, Pickle, Juniper or Waffles."),
    ("Can you make that shorter?", "Sure, here's a two-line version."),
    ("Give me three options for the {project} launch post.",
     "1. A short announcement. 2. A longer write-up with screenshots. 3. A changelog entry."),
    ("How do I rename a branch in git?",
     "Run `git branch -m old-name new-name`, then push the new name and delete the old one on the remote."),
    ("What does {cause} usually look like in the logs?",
     "Usually a burst of timeouts and retries first, then errors from whatever depends on it."),
    ("Can you explain what {tech} is good for, in two sentences?",
     "{tech} is a solid choice when you need something well supported and boring. "
     "Its main cost is operational: someone has to own it."),
)
ACKS: tuple[str, ...] = (
    "Noted. I'll remember that.", "Got it, thanks for telling me.", "Understood, I'll keep that in mind.",
    "Good to know.", "Thanks, that's useful context.",
)
LOOKUPS: tuple[str, ...] = (
    "Let me check what I have on that.", "I don't have anything on that yet. Could you tell me more?",
    "From what you told me earlier, I'm not completely sure. Want me to look it up?",
)


def _exchange(rng: random.Random) -> tuple[str, str]:
    """One user turn and the assistant's reply."""
    draw = Draw(rng)
    roll = rng.random()
    if roll < 0.30:
        said = draw.fill(rng.choice(FIRST_PERSON))
    elif roll < 0.45:
        said = draw.fill(rng.choice(WORK))
    elif roll < 0.58:  # a fact about someone else, as the retrieval bench's items read
        said = f"{rng.choice(LEADS)}{draw.fill(rng.choice(TEMPLATES)[2])}."
    elif roll < 0.70:
        return draw.fill(rng.choice(QUESTIONS)), rng.choice(LOOKUPS)
    elif roll < 0.75:
        return draw.fill(rng.choice(EARLIER)), "Sure, what do you need?"
    else:
        prompt, answer = rng.choice(CHATTER)
        return draw.fill(prompt), draw.fill(answer)
    return said, rng.choice(ACKS)


def synthetic_sessions(n_sessions: int, turns: int, *, seed: int = 0) -> list[tuple[str, list[dict[str, str]]]]:
    """``n_sessions`` (session id, messages) pairs, ``turns`` messages each, user first.

    Sessions follow one another (each starts 20 minutes to 3 hours after the previous
    one began) and end before ``BENCH_NOW``; turns within a session are 10 s to 3 min apart.
    """
    rng = random.Random(f"ingest-{seed}")
    gaps = [rng.uniform(20, 180) for _ in range(n_sessions)]
    start = BENCH_NOW - timedelta(minutes=sum(gaps) + 3 * turns)
    out = []
    for index in range(n_sessions):
        at: datetime = start
        messages: list[dict[str, str]] = []
        reply = ""
        for turn in range(turns):
            if turn % 2 == 0:
                content, reply = _exchange(rng)
                role = "user"
            else:
                content, role = reply, "assistant"
            messages.append({"role": role, "content": content, "ts": at.isoformat(timespec="seconds")})
            at += timedelta(seconds=rng.randint(10, 180))
        out.append((f"{SESSION_PREFIX}{index:06d}", messages))
        start += timedelta(minutes=gaps[index])
    return out


# --- the run ----------------------------------------------------------------------------

def _child_env() -> dict[str, str]:
    env = service_env()
    env.pop("DAGSTER_HOME", None)  # the run uses the data root's own instance
    return env


def _rows(path: Path) -> int:
    import polars as pl

    return int(pl.scan_parquet(str(path)).select(pl.len()).collect().item())


def _runs(paths: Any) -> tuple[dict[str, int], int]:
    """(runs by job name, failed runs) from the data root's Dagster instance."""
    import dagster as dg

    from memory_assets.cli.instance import local_instance

    before = os.environ.get("DAGSTER_HOME")
    try:
        with local_instance(paths) as instance:
            runs = instance.get_runs()
            by_job = Counter(run.job_name for run in runs)
            failed = sum(run.status in (dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED) for run in runs)
    finally:  # local_instance points DAGSTER_HOME at the (temporary) root: leave this process as it was
        if before is None:
            os.environ.pop("DAGSTER_HOME", None)
        else:
            os.environ["DAGSTER_HOME"] = before
    return dict(sorted(by_job.items())), int(failed)


def _outcome(root: Path, session_ids: list[str]) -> dict[str, Any]:
    from memory_assets.lib.extraction import quarantine
    from retrieval.paths import DataRoot
    from retrieval.store import ItemStore

    paths = DataRoot.resolve(root)
    facts_files = [paths.session_file(paths.extracted_facts, s) for s in session_ids]
    extracted = [f for f in facts_files if f.exists()]
    extracted_ids = {f.stem for f in extracted}
    quarantined = set(quarantine.quarantined_sessions(paths)) & set(session_ids)
    lost = [s for s in session_ids if s not in extracted_ids and s not in quarantined]
    runs, failed_runs = _runs(paths)
    return {
        "extracted_sessions": len(extracted), "quarantined": len(quarantined), "lost": len(lost),
        "lost_examples": lost[:10], "facts": sum(_rows(f) for f in extracted),
        "items_published": ItemStore(paths).items().height,
        "runs": runs, "failed_runs": failed_runs,
    }


def run(args: argparse.Namespace, config: MemoryConfig) -> dict[str, Any]:
    if not getattr(args, "s3", False):
        return _run(args, Path(tempfile.mkdtemp(prefix="memory-bench-ingest-")), None, config)
    from evals.bench.s3 import local_s3, s3_env

    work = Path(tempfile.mkdtemp(prefix="memory-bench-ingest-"))
    with local_s3(work / "moto.log") as server, s3_env(server, work / "local"):
        report = _run(args, work, f"s3://{server.bucket('memory-bench')}/data", config)
        report["stored_mib"] = round(server.size("memory-bench") / 2**20, 1)
        return report


def _run(args: argparse.Namespace, work: Path, uri: str | None, config: MemoryConfig) -> dict[str, Any]:
    from retrieval import MemoryClient

    root: Any = uri or work / "data"
    try:
        started = time.perf_counter()
        sessions = synthetic_sessions(args.sessions, args.turns, seed=args.seed)
        generate_s = time.perf_counter() - started

        client = MemoryClient(root)
        started = time.perf_counter()
        for session_id, messages in sessions:
            client.flush_session(session_id, messages)
        handover_s = time.perf_counter() - started

        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "memory_assets.cli", "--data-root", str(root),
                               "materialize", "--quiet"], env=_child_env(), text=True, capture_output=True)
        wall_s = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_s = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)

        report: dict[str, Any] = {
            "bench": "ingest", "data_root": "s3 (moto, 127.0.0.1)" if uri else "local disk",
            "sessions": args.sessions, "turns_per_session": args.turns, "seed": args.seed,
            "messages": args.sessions * args.turns, "generate_s": round(generate_s, 3),
            "handover_s": round(handover_s, 3), "materialize_wall_s": round(wall_s, 2),
            "materialize_cpu_s": round(cpu_s, 2), "peak_rss_mib": round(after.ru_maxrss / 1024, 1),
            "sessions_per_s": round(args.sessions / wall_s, 2) if wall_s > 0 else None,
            "materialize_rc": done.returncode,
            "materialize_summary": next((line for line in reversed(done.stdout.splitlines()) if line.strip()), ""),
        }
        if done.returncode != 0:
            report["materialize_error"] = (done.stderr or done.stdout)[-2000:]
        report.update(_outcome(root, [s for s, _ in sessions]))
        report["machine"] = machine(config)
        if args.keep:
            report["kept"] = str(root)
        return report
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def ok(report: dict[str, Any]) -> bool:
    return report["lost"] == 0 and report["failed_runs"] == 0 and report["materialize_rc"] == 0


def format_report(r: dict[str, Any]) -> str:
    runs = ", ".join(f"{job} {n}" for job, n in r["runs"].items()) or "none"
    lines = [
        f"ingest bench: {r['sessions']:,} sessions × {r['turns_per_session']} turns ({r['messages']:,} messages), "
        f"data root on {r['data_root']}" + (f" ({r['stored_mib']} MiB stored)" if "stored_mib" in r else ""),
        f"  handover (flush_session) {r['handover_s']} s",
        f"  materialize {r['materialize_wall_s']} s wall, {r['materialize_cpu_s']} s CPU, "
        f"peak RSS {r['peak_rss_mib']} MiB → {r['sessions_per_s']} sessions/s",
        f"  extracted {r['extracted_sessions']:,} sessions, {r['facts']:,} facts; "
        f"{r['items_published']:,} items published; quarantined {r['quarantined']}, lost {r['lost']}",
        f"  Dagster runs: {runs}; failed {r['failed_runs']}",
    ]
    if r.get("lost_examples"):
        lines.append(f"  lost: {', '.join(r['lost_examples'])}")
    if r.get("materialize_error"):
        lines.append(f"  materialize exited {r['materialize_rc']}: {r['materialize_error'].strip()[-500:]}")
    if r.get("kept"):
        lines.append(f"  data root kept: {r['kept']}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memory bench ingest", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000, help="sessions handed over (default 1000)")
    parser.add_argument("--turns", type=int, default=50,
                        help="turns per session, user and assistant alternating (default 50)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--s3", action="store_true",
                        help="the data root on an S3-compatible server (moto) started on 127.0.0.1 for the bench")
    parser.add_argument("--keep", action="store_true", help="keep the temporary data root and print its path")
    parser.add_argument("--json", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.sessions < 1 or args.turns < 1:
        print("ValueError: --sessions and --turns must be at least 1", file=sys.stderr)
        return 2
    report = run(args, load_config())
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else format_report(report))
    return 0 if ok(report) else 1


if __name__ == "__main__":
    raise SystemExit(main())
