"""The monthly health report: is the memory store growing, going stale, or filling with junk?

One markdown page with plots (PNG, rendered with matplotlib's Agg canvas, no display
needed) that states every number it shows: active items by category, tier and status;
how long since items were last referenced or updated; items created per week; what the
write gate refused and why; what extraction cost. The numbers also come back as a dict,
for the asset's metadata and for the history the next report compares against.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from retrieval.paths import location
from typing import Any

import polars as pl

from memory_assets.lib import warehouse
from retrieval import scoring
from retrieval.config import MemoryConfig
from retrieval.moments import parse_utc
from retrieval.paths import DataRoot
from retrieval.schema import REJECTION_SCHEMA, STATUSES, TIERS
from retrieval.store import ItemStore

REPORT_FILE = "health.md"
# Bucket edges in days since the last reference or update; the config's
# ``[decay] stale_after_days`` is added, so "stale" is always a bucket boundary.
STALE_EDGES_DAYS = (7, 30, 180, 365)
# The markdown's weekly table shows this many recent weeks (the plot shows all).
WEEKS_IN_TABLE = 12
PLOTS = {
    "items_by_category": "items_by_category.png",
    "growth": "growth.png",
    "stale": "stale.png",
    "rejections": "rejections.png",
}


@dataclass(frozen=True)
class HealthReport:
    """One health report.

    Attributes:
        markdown: the report; images are linked by file name, relative to ``path``.
        path: where the markdown was written (``<out_dir>/health.md``).
        png_paths: every plot written, in the order the report shows them.
        numbers: every number the report states, JSON-serialisable.
    """

    markdown: str
    path: Path
    png_paths: list[Path] = field(default_factory=list)
    numbers: dict[str, Any] = field(default_factory=dict)


# --- numbers ----------------------------------------------------------------------


def _counts(frame: pl.DataFrame, column: str, order: tuple[str, ...] = ()) -> dict[str, int]:
    """Value → rows, the configured vocabulary first (zeros kept), then the rest by count."""
    if frame.is_empty() or column not in frame.columns:
        return {k: 0 for k in order}
    found = dict(frame.group_by(column).len().sort(["len", column], descending=[True, False]).iter_rows())
    out = {k: int(found.pop(k, 0)) for k in order}
    out.update({str(k): int(v) for k, v in found.items()})
    return out


def _stale_edges(config: MemoryConfig) -> list[int]:
    return sorted({*STALE_EDGES_DAYS, int(config.decay.stale_after_days)})


def _bucket_labels(edges: list[int]) -> list[str]:
    labels, low = [], 0
    for edge in edges:
        labels.append(f"{low}–{edge} d")
        low = edge + 1
    labels.append(f"> {edges[-1]} d")
    return labels


def _days_since_touch(active: pl.DataFrame, now: datetime) -> pl.Series:
    """Each item's age (``retrieval.scoring.age_of``: days since last confirmed, or said)."""
    return pl.Series("days", [scoring.age_of(row, now) for row in active.iter_rows(named=True)], pl.Float64)


def _stale(active: pl.DataFrame, now: datetime, config: MemoryConfig) -> dict[str, Any]:
    edges = _stale_edges(config)
    labels = _bucket_labels(edges)
    buckets = dict.fromkeys(labels, 0)
    days = _days_since_touch(active, now) if active.height else pl.Series("days", [], pl.Float64)
    whole_days = [int(value) for value in days.to_list()]  # a bucket holds whole days
    for value in whole_days:
        index = next((i for i, edge in enumerate(edges) if value <= edge), len(edges))
        buckets[labels[index]] += 1
    after = int(config.decay.stale_after_days)
    return {
        "stale_after_days": after,
        "stale_active_items": sum(scoring.is_stale(config, row, now) for row in active.iter_rows(named=True)),
        "stale_buckets": buckets,
        "median_days_since_touch": round(float(days.median()), 1) if days.len() else 0.0,
    }


def _week_start(moment: datetime) -> datetime:
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return day - timedelta(days=day.weekday())


def _growth(items: pl.DataFrame, now: datetime) -> dict[str, int]:
    """Items created per ISO week (Monday), every week from the first to ``now``'s, zeros kept."""
    if items.is_empty() or "created_at" not in items.columns:
        return {}
    created = [c for c in items["created_at"].to_list() if c is not None]
    if not created:
        return {}
    counts: dict[datetime, int] = {}
    for moment in created:
        week = _week_start(moment)
        counts[week] = counts.get(week, 0) + 1
    week, last = min(counts), max(max(counts), _week_start(now))
    out = {}
    while week <= last:
        out[week.date().isoformat()] = counts.get(week, 0)
        week += timedelta(days=7)
    return out


def _extraction(runs: pl.DataFrame | None) -> dict[str, Any]:
    if runs is None or runs.is_empty():
        return {"extraction_runs": 0, "extraction_cost_usd": 0.0, "prompt_tokens": 0, "completion_tokens": 0}

    def total(column: str) -> float:
        return float(runs[column].fill_null(0).sum()) if column in runs.columns else 0.0

    return {
        "extraction_runs": runs.height,
        "extraction_cost_usd": round(total("cost_usd"), 6),
        "prompt_tokens": int(total("prompt_tokens")),
        "completion_tokens": int(total("completion_tokens")),
    }


def _previous(history: pl.DataFrame | None) -> dict[str, Any] | None:
    if history is None or history.is_empty() or "at" not in history.columns:
        return None
    return history.sort("at").row(-1, named=True)


def numbers_for(items: pl.DataFrame, rejections: pl.DataFrame, extraction_runs: pl.DataFrame | None,
                history: pl.DataFrame | None, now: datetime, config: MemoryConfig) -> dict[str, Any]:
    """Every number the report states."""
    active = items.filter(pl.col("status") == "active") if items.height else items
    numbers: dict[str, Any] = {
        "generated_at": now.isoformat(),
        "total_items": items.height,
        "active_items": active.height,
        "items_by_status": _counts(items, "status", STATUSES),
        "active_by_category": _counts(active, "category"),
        "active_by_tier": _counts(active, "tier", TIERS),
        "untrusted_active_items": int((active["source_trust"] == "untrusted").sum()) if active.height else 0,
        **_stale(active, now, config),
        "created_per_week": _growth(items, now),
        "rejections": rejections.height if rejections is not None else 0,
        "rejections_by_reason": _counts(rejections, "reason") if rejections is not None else {},
        **_extraction(extraction_runs),
    }
    numbers["created_last_4_weeks"] = (
        int((items["created_at"] > now - timedelta(days=28)).sum()) if items.height else 0
    )
    previous = _previous(history)
    if previous is not None and previous.get("active_items") is not None:
        numbers["previous_report_at"] = str(previous["at"])
        numbers["active_items_change"] = active.height - int(previous["active_items"])
    return numbers


def history_row(report: HealthReport) -> dict[str, Any]:
    """The row to append to the report history (``history`` of the next report)."""
    n = report.numbers
    return {
        "at": parse_utc(n["generated_at"]),
        "total_items": n["total_items"],
        "active_items": n["active_items"],
        "stale_active_items": n["stale_active_items"],
        "rejections": n["rejections"],
        "extraction_cost_usd": n["extraction_cost_usd"],
    }


# --- plots ------------------------------------------------------------------------


def _figure() -> tuple[Any, Any]:
    # matplotlib here, not at the top: loading the code location needs none of it.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.5, 3.6), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure, figure.subplots()


def _integer_ticks() -> Any:
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True)


def _empty(ax: Any, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, color="0.4")
    ax.set_xticks([])
    ax.set_yticks([])


def _save(figure: Any, path: Path) -> Path:
    png = io.BytesIO()
    figure.savefig(png, format="png")
    return warehouse.write_bytes(path, png.getvalue(), durable=False)


def _bars(path: Path, counts: dict[str, int], title: str, ylabel: str, empty: str) -> Path:
    figure, ax = _figure()
    if counts and any(counts.values()):
        labels = list(counts)
        ax.bar(labels, [counts[k] for k in labels], color="#4C72B0")
        ax.set_ylabel(ylabel)
        ax.yaxis.set_major_locator(_integer_ticks())
        ax.tick_params(axis="x", labelrotation=30)
        for label in ax.get_xticklabels():
            label.set_horizontalalignment("right")
    else:
        _empty(ax, empty)
    ax.set_title(title)
    return _save(figure, path)


def _growth_plot(path: Path, weekly: dict[str, int], history: pl.DataFrame | None) -> Path:
    figure, ax = _figure()
    if weekly:
        weeks = [parse_utc(w) for w in weekly]
        ax.plot(weeks, list(weekly.values()), marker="o", color="#4C72B0", label="items created per week")
        ax.set_ylabel("items created")
        ax.yaxis.set_major_locator(_integer_ticks())
        ax.set_ylim(bottom=0)
        if history is not None and not history.is_empty() and {"at", "active_items"} <= set(history.columns):
            past = history.sort("at")
            twin = ax.twinx()
            twin.plot(past["at"].to_list(), past["active_items"].to_list(), color="#DD8452",
                      marker="s", label="active items (earlier reports)")
            twin.set_ylabel("active items")
            twin.set_ylim(bottom=0)
            lines = ax.get_lines() + twin.get_lines()
            ax.legend(lines, [line.get_label() for line in lines], loc="upper left", fontsize="small")
        figure.autofmt_xdate()
    else:
        _empty(ax, "no items yet")
    ax.set_title("Growth: items created per week")
    return _save(figure, path)


def _stale_plot(path: Path, n: dict[str, Any]) -> Path:
    return _bars(path, n["stale_buckets"],
                 f"Days since last confirmed (stale after {n['stale_after_days']} d)",
                 "active items", "no active items")


# --- markdown ---------------------------------------------------------------------


def _table(header: tuple[str, str], counts: dict[str, Any]) -> list[str]:
    lines = [f"| {header[0]} | {header[1]} |", "|---|---:|"]
    lines += [f"| {k} | {v:,} |" for k, v in counts.items()]
    return lines if counts else [*lines, "| (none) | 0 |"]


def _markdown(n: dict[str, Any], now: datetime) -> str:
    recent = dict(list(n["created_per_week"].items())[-WEEKS_IN_TABLE:])
    lines = [
        f"# Memory health report — {now.date().isoformat()}",
        "",
        f"Generated {n['generated_at']}.",
        "",
        "## Totals",
        "",
        f"- Items: {n['total_items']:,} in total, {n['active_items']:,} active.",
        f"- Untrusted active items: {n['untrusted_active_items']:,}.",
        f"- Stale active items (not confirmed for more than {n['stale_after_days']} days): "
        f"{n['stale_active_items']:,}; median days since last touch: {n['median_days_since_touch']}.",
        f"- Items created in the last 4 weeks: {n['created_last_4_weeks']:,}.",
        f"- Write-gate rejections: {n['rejections']:,}.",
        f"- Extraction: {n['extraction_runs']:,} runs, ${n['extraction_cost_usd']:.4f}, "
        f"{n['prompt_tokens']:,} prompt tokens, {n['completion_tokens']:,} completion tokens.",
    ]
    if "active_items_change" in n:
        lines.append(f"- Active items since the previous report ({n['previous_report_at']}): "
                     f"{n['active_items_change']:+,}.")
    lines += [
        "", "## Active items by category", "",
        f"![Active items by category]({PLOTS['items_by_category']})", "",
        *_table(("category", "active items"), n["active_by_category"]),
        "", "## Active items by tier", "",
        *_table(("tier", "active items"), n["active_by_tier"]),
        "", "## Items by status", "",
        *_table(("status", "items"), n["items_by_status"]),
        "", "## Staleness", "",
        f"![Days since last confirmed]({PLOTS['stale']})", "",
        *_table(("days since last reference or update", "active items"), n["stale_buckets"]),
        "", "## Growth", "",
        f"![Items created per week]({PLOTS['growth']})", "",
        *_table(("week starting", "items created"), recent),
        "", "## Rejections", "",
        f"![Rejections by reason]({PLOTS['rejections']})", "",
        *_table(("reason", "rejections"), n["rejections_by_reason"]),
        "",
    ]
    return "\n".join(lines)


def report(items: pl.DataFrame, rejections: pl.DataFrame, extraction_runs: pl.DataFrame | None,
           history: pl.DataFrame | None, now: datetime, out_dir: Path, *,
           config: MemoryConfig) -> HealthReport:
    """Write the health report and its plots into ``out_dir``.

    Args:
        items: every item (``ITEM_SCHEMA``), all statuses.
        rejections: the write gate's rejection log (``REJECTION_SCHEMA``).
        extraction_runs: one row per extraction run with ``cost_usd`` and, when known,
            ``prompt_tokens`` and ``completion_tokens``; None when not recorded.
        history: earlier reports' ``history_row``s (``at``, ``active_items``, …), or None.
        now: the clock (report date, staleness, the current week).
        out_dir: the folder for ``health.md`` and the PNGs (created if missing).
        config: the config in force (``[decay] stale_after_days``).
    """
    out_dir = location(out_dir)
    n = numbers_for(items, rejections, extraction_runs, history, now, config)
    pngs = [
        _bars(out_dir / PLOTS["items_by_category"], n["active_by_category"],
              "Active items by category", "active items", "no active items"),
        _stale_plot(out_dir / PLOTS["stale"], n),
        _growth_plot(out_dir / PLOTS["growth"], n["created_per_week"], history),
        _bars(out_dir / PLOTS["rejections"], n["rejections_by_reason"],
              "Write-gate rejections by reason", "rejections", "no rejections"),
    ]
    markdown = _markdown(n, now)
    path = warehouse.write_text(out_dir / REPORT_FILE, markdown)
    return HealthReport(markdown=markdown, path=path, png_paths=pngs, numbers=n)


def write_report(paths: DataRoot, config: MemoryConfig, now: datetime) -> HealthReport:
    """The monthly step (``health_report``): the report on the published items, the write
    gate's rejections and extraction's costs, under ``<data root>/health/<date>/``, and its
    row appended to ``health/history.parquet`` (the growth plot's past)."""
    rejections = warehouse.read_frames(warehouse.files(paths.rejections, "*.parquet"))
    history_file = paths.health / "history.parquet"
    history = warehouse.read_frame(history_file)
    result = report(ItemStore(paths).items(),
                    rejections if rejections is not None else pl.DataFrame(schema=REJECTION_SCHEMA),
                    warehouse.read_frames(warehouse.files(paths.extraction_runs, "*.parquet")), history, now,
                    paths.health / now.strftime("%Y-%m-%d"), config=config)
    row = pl.DataFrame([history_row(result)])
    warehouse.write_frame(history_file, pl.concat([history, row], how="diagonal_relaxed") if history is not None else row)
    return result


def inline_plots(markdown: str, png_paths: list[Path]) -> str:
    """The report for the Dagster UI: each plot's relative link (which the UI cannot
    follow: four broken images) replaced, in place, by the image itself as a data URI."""
    import base64

    for png in png_paths:
        data = base64.b64encode(png.read_bytes()).decode()
        markdown = markdown.replace(f"]({png.name})", f"](data:image/png;base64,{data})")
    return markdown
