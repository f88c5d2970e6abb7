"""The console's page (``GET /dashboard``, its HTML, JS and CSS) and its data
(``/dashboard/data.json``).

:func:`dashboard_response` is the server side of both, a pure function of the path, query
and ledger; it reads the ledger (blocking I/O), so the server runs it in a thread. The
assets ship in ``static/`` (no CDN, no build step). Who may read the data, and signing in,
is server/endpoints/console.py's; :func:`basic_auth_key` reads a key given as HTTP Basic credentials
(any user name, the key as password), how scripts read the data.
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Mapping
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

import orjson

from ..ledger import Ledger, LedgerError
from ..record import UsageRecord
from ..report import aggregate, day_of, parse_since, total

__all__ = [
    "ASSETS",
    "PREFIX",
    "STATUSES",
    "basic_auth_key",
    "dashboard_response",
    "static_response",
]

PREFIX = "/dashboard"
DEFAULT_SINCE = "7d"
LATEST = 50
MAX_RECORDS = 200_000  # a page over more records counts the newest ones (and says so)

_STATIC_TYPES = {
    "index.html": "text/html; charset=utf-8",
    "dashboard.js": "text/javascript; charset=utf-8",
    "charts.js": "text/javascript; charset=utf-8",
    "console.js": "text/javascript; charset=utf-8",
    "dashboard.css": "text/css; charset=utf-8",
}

ASSETS = tuple(_STATIC_TYPES)
"""Every file of the page (in ``static/``, shipped as package data)."""

Response = tuple[int, str, bytes]
_JSON = "application/json"


def _static(name: str) -> bytes:
    return resources.files(__name__).joinpath("static").joinpath(name).read_bytes()


def _error(status: int, message: str) -> Response:
    return (
        status,
        _JSON,
        orjson.dumps({"error": {"type": "invalid_request_error", "message": message}}),
    )


def _record_json(rec: UsageRecord) -> dict[str, Any]:
    return {
        "time": rec.time,
        "request_id": rec.request_id,
        "protocol": rec.protocol,
        "route": rec.route,
        "provider": rec.provider,
        "requested_model": rec.requested_model,
        "target_model": rec.target_model,
        "input_tokens": rec.input_tokens,
        "output_tokens": rec.output_tokens,
        "cache_read_tokens": rec.cache_read_tokens,
        "cache_write_tokens": rec.cache_write_tokens,
        "estimated": rec.estimated,
        "cost_usd": rec.cost_usd,
        "latency_ms": rec.latency_ms,
        "ttfb_ms": rec.ttfb_ms,
        "status": rec.status,
        "error_type": rec.error_type,
        "stream": rec.stream,
        "key_name": rec.key_name,
        "team": rec.team,
        "member": member_of(rec),
        "agent": rec.agent,
        "refusal": cause(rec) if is_refusal(rec) else None,
    }


def is_refusal(rec: UsageRecord) -> bool:
    """A request the proxy refused itself (a limit, a right, a budget): no spend, no model
    answered; shown by its cause, apart from the spend."""
    return rec.refusal is not None or not rec.target_model


def cause(rec: UsageRecord) -> str:
    return rec.refusal or rec.error_type or str(rec.status)


def member_of(rec: UsageRecord) -> str:
    """A named key by its name; a HYDRA_PROXY_KEYS key by its id; else "-"."""
    return rec.key_name or rec.key_id or "-"


STATUSES = ("ok", "error", "refused")


def _status_of(rec: UsageRecord) -> str:
    if is_refusal(rec):
        return "refused"
    return "error" if rec.is_error else "ok"


def _members(records: list[UsageRecord], spend: list[UsageRecord]) -> list[dict[str, Any]]:
    """Per member: the report's row of its spend, its refusals by cause, its team."""
    refused: dict[str, dict[str, int]] = {}
    teams: dict[str, str | None] = {}
    for rec in records:
        who = member_of(rec)
        teams.setdefault(who, rec.team)
        if is_refusal(rec):
            causes = refused.setdefault(who, {})
            causes[cause(rec)] = causes.get(cause(rec), 0) + 1
    rows = {row.key: row.as_json() for row in aggregate(spend, "key")}
    out = []
    for who in sorted(teams, key=lambda w: (-(rows.get(w) or {}).get("cost_usd", 0.0), w)):
        row = rows.get(who) or {**total([]).as_json(), "key": who}
        causes = refused.get(who, {})
        out.append({**row, "team": teams[who], "refused": sum(causes.values()),
                    "refusals": dict(sorted(causes.items(), key=lambda c: -c[1]))})  # fmt: skip
    return out


def _agents(spend: list[UsageRecord]) -> list[dict[str, Any]]:
    """Per member and agent within it (the lead's own requests name none): the spend."""
    groups: dict[tuple[str, str], list[UsageRecord]] = {}
    for rec in spend:
        groups.setdefault((member_of(rec), rec.agent or "lead"), []).append(rec)
    rows = []
    for (who, agent), recs in groups.items():
        row = total(recs).as_json()
        row.update(key=f"{who} / {agent}", member=who, agent=agent)
        rows.append(row)
    rows.sort(key=lambda r: (r["member"], -r["cost_usd"], r["agent"]))
    return rows


def _days(spend: list[UsageRecord]) -> list[dict[str, Any]]:
    """The cost of each member each day (UTC), in date order."""
    cost: dict[tuple[str, str], float] = {}
    for rec in spend:
        at = (day_of(rec.time), member_of(rec))
        cost[at] = cost.get(at, 0.0) + (rec.cost_usd or 0.0)
    return [{"day": d, "member": m, "cost_usd": c} for (d, m), c in sorted(cost.items())]


def _model_of(rec: UsageRecord) -> str:
    return rec.target_model or rec.requested_model


def data(
    ledger: Ledger,
    since_text: str,
    now: float,
    key_name: str | None = None,
    filters: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The page's data: totals, rows by member (with refusals by cause), by agent within a
    member, by model and by day, and the latest requests (`filters`: of one ``member``,
    ``model`` or ``status`` of `STATUSES`); `key_name`: that named key's only."""
    since = parse_since(since_text, now)
    records = ledger.query(since=since, limit=MAX_RECORDS, key_name=key_name)
    spend = [r for r in records if not is_refusal(r)]
    wanted = {k: v for k, v in (filters or {}).items() if k in ("member", "model", "status") and v}
    if wanted.get("status") not in (None, *STATUSES):
        raise ValueError(f"status {wanted['status']!r}: use one of {', '.join(STATUSES)}")
    latest = [
        r
        for r in records
        if wanted.get("member", member_of(r)) == member_of(r)
        and wanted.get("model", _model_of(r)) == _model_of(r)
        and wanted.get("status", _status_of(r)) == _status_of(r)
    ][:LATEST]
    refusals: dict[str, int] = {}
    for rec in records:
        if is_refusal(rec):
            refusals[cause(rec)] = refusals.get(cause(rec), 0) + 1
    return {
        "scope": key_name,
        "since": since,
        "generated": now,
        "records": len(records),
        "truncated": len(records) >= MAX_RECORDS,
        "total": {**total(spend).as_json(), "refused": len(records) - len(spend)},
        "refusals": refusals,
        "by_member": _members(records, spend),
        "by_agent": _agents(spend),
        "by_model": [r.as_json() for r in aggregate(spend, "model")],
        "by_day": [r.as_json() for r in aggregate(spend, "day")],
        "by_day_member": _days(spend),
        "filters": {
            "member": sorted({member_of(r) for r in records}),
            "model": sorted({_model_of(r) for r in records if _model_of(r)}),
            "status": list(STATUSES),
        },
        "latest": [_record_json(r) for r in latest],
    }


def static_response(path: str) -> Response | None:
    """The page or one of its assets (None: `path` names neither)."""
    if path in (PREFIX, PREFIX + "/"):
        return 200, _STATIC_TYPES["index.html"], _static("index.html")
    if path.startswith(PREFIX + "/static/"):
        name = path[len(PREFIX + "/static/") :]
        if name not in _STATIC_TYPES:  # a fixed list: no path ever reaches the file system
            return _error(404, f"no dashboard asset {name!r}")
        return 200, _STATIC_TYPES[name], _static(name)
    return None


def dashboard_response(
    path: str,
    query: str | Mapping[str, str],
    ledger: Ledger,
    now: float | None = None,
    key_name: str | None = None,
) -> Response:
    """``(status, content_type, body)`` for a GET under ``/dashboard``."""
    page = static_response(path)
    if page is not None:
        return page
    if path == PREFIX + "/data.json":
        if isinstance(query, str):
            params = {k: v[-1] for k, v in parse_qs(query).items()}
        else:
            params = dict(query)
        try:
            doc = data(
                ledger,
                params.get("since") or DEFAULT_SINCE,
                time.time() if now is None else now,
                key_name,
                params,
            )
        except LedgerError as exc:
            return 503, _JSON, orjson.dumps({"error": {"type": "api_error", "message": str(exc)}})
        except ValueError as exc:
            return _error(400, str(exc))
        return 200, _JSON, orjson.dumps(doc)
    return _error(404, f"no dashboard page {path!r}")


def basic_auth_key(authorization: bytes | None) -> bytes | None:
    """The password of ``Authorization: Basic ...`` (the proxy key), else None."""
    if authorization is None or authorization[:6].lower() != b"basic ":
        return None
    try:
        decoded = base64.b64decode(authorization[6:].strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    _, sep, password = decoded.partition(b":")
    return password if sep and password else None
