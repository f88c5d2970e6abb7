"""The usage report: records aggregated by model, route, provider, key, team, agent (a
session's teammates apart from its lead) or day (pure)."""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from .pricing import usd
from .record import UsageRecord

__all__ = ["GROUPINGS", "Grouping", "ReportRow", "aggregate", "parse_since", "render_table"]

Grouping = Literal["model", "route", "provider", "key", "team", "agent", "day"]
GROUPINGS: tuple[Grouping, ...] = ("model", "route", "provider", "key", "team", "agent", "day")
LEAD = "lead"  # the agent of the requests without an agent id: a session's lead


def day_of(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d")


_KEYS: dict[Grouping, Callable[[UsageRecord], str]] = {
    "model": lambda r: r.target_model,
    "route": lambda r: r.route,
    "provider": lambda r: r.provider,
    # A named key by its name; a HYDRA_PROXY_KEYS key by its id.
    "key": lambda r: r.key_name or r.key_id or "-",
    "team": lambda r: r.team or "-",
    "agent": lambda r: r.agent or LEAD,
    "day": lambda r: day_of(r.time),
}


@dataclass(frozen=True, slots=True)
class ReportRow:
    key: str
    requests: int
    errors: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    reasoning_tokens: int
    cost_usd: float  # the requests with a known price
    unpriced: int  # requests whose model has no price: their cost is unknown, not 0
    refused: int  # requests the proxy refused itself (no spend: shown apart)
    estimated: int  # requests whose tokens are the proxy's estimate
    p50_latency_ms: float | None
    p50_ttfb_ms: float | None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _row(key: str, records: list[UsageRecord]) -> ReportRow:
    return ReportRow(
        key=key,
        requests=len(records),
        errors=sum(r.is_error for r in records),
        input_tokens=sum(r.input_tokens for r in records),
        output_tokens=sum(r.output_tokens for r in records),
        cache_read_tokens=sum(r.cache_read_tokens for r in records),
        cache_write_tokens=sum(r.cache_write_tokens for r in records),
        reasoning_tokens=sum(r.reasoning_tokens for r in records),
        cost_usd=sum(r.cost_usd for r in records if r.cost_usd is not None),
        unpriced=sum(r.cost_usd is None and r.refusal is None for r in records),
        refused=sum(r.refusal is not None for r in records),
        estimated=sum(r.estimated for r in records),
        p50_latency_ms=_median([r.latency_ms for r in records]),
        p50_ttfb_ms=_median([r.ttfb_ms for r in records if r.ttfb_ms is not None]),
    )


def aggregate(records: Iterable[UsageRecord], by: Grouping = "model") -> list[ReportRow]:
    """One row per group: by day in date order, otherwise the costliest first."""
    key_of = _KEYS[by]
    groups: dict[str, list[UsageRecord]] = {}
    for rec in records:
        groups.setdefault(key_of(rec), []).append(rec)
    rows = [_row(k, v) for k, v in groups.items()]
    if by == "day":
        rows.sort(key=lambda r: r.key)
    else:
        rows.sort(key=lambda r: (-r.cost_usd, -r.requests, r.key))
    return rows


def total(records: Iterable[UsageRecord]) -> ReportRow:
    return _row("total", list(records))


_RELATIVE = re.compile(r"^(\d+)\s*([mhdw])$")
_UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, now: float) -> float:
    """``30m``, ``24h``, ``7d``, ``2w`` before ``now``, or an ISO date/time (UTC if naive)."""
    match = _RELATIVE.match(text.strip().lower())
    if match:
        return now - int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    try:
        return utc_timestamp(text)
    except ValueError:
        raise ValueError(
            f"--since {text!r}: expected 30m, 24h, 7d, 2w or a date like 2026-11-01"
        ) from None


def utc_timestamp(text: str) -> float:
    """An ISO date or time as Unix time, in UTC when it names no zone (ValueError if it is
    none)."""
    moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _cost(row: ReportRow) -> str:
    text = usd(row.cost_usd)[1:]
    if row.unpriced and row.unpriced == row.requests - row.refused:
        return "unknown"
    return f"{text} (+{row.unpriced} unpriced)" if row.unpriced else text


def render_table(rows: list[ReportRow], by: Grouping, totals: ReportRow | None = None) -> str:
    """A plain-text table, one line per row, totals last."""
    header = (by, "requests", "refused", "errors", "input", "output", "of it reasoning",
              "cache read", "cache write", "cost USD", "p50 ms", "p50 ttfb ms")  # fmt: skip
    lines: list[tuple[str, ...]] = [header]
    for row in [*rows, *([totals] if totals is not None else [])]:
        est = f" ({row.estimated} est.)" if row.estimated else ""
        lines.append(
            (
                row.key,
                str(row.requests),
                str(row.refused),
                str(row.errors),
                f"{row.input_tokens}{est}",
                str(row.output_tokens),
                str(row.reasoning_tokens),
                str(row.cache_read_tokens),
                str(row.cache_write_tokens),
                _cost(row),
                _ms(row.p50_latency_ms),
                _ms(row.p50_ttfb_ms),
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for n, line in enumerate(lines):
        cells = [
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(line, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
        if n == 0 or (totals is not None and n == len(lines) - 2):
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out) + "\n"
