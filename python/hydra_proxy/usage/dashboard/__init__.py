"""The usage page: ``GET /dashboard`` (HTML, its JS and CSS) and ``/dashboard/data.json``.

:func:`dashboard_response` is the whole server side, a pure function of the path, query and
ledger; it reads the ledger (blocking I/O), so the server runs it in a thread. The assets
ship in ``static/`` (no CDN, no build step). The page is behind the proxy keys when they are
set: a browser cannot add an ``x-api-key`` header, so :func:`basic_auth_key` reads the key
from HTTP Basic credentials (any user name, the key as password) and the server answers a
missing one with 401 and :data:`AUTHENTICATE`.
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
from ..report import aggregate, parse_since, total

__all__ = ["AUTHENTICATE", "PREFIX", "basic_auth_key", "dashboard_response"]

PREFIX = "/dashboard"
AUTHENTICATE = (b"www-authenticate", b'Basic realm="hydra-proxy", charset="UTF-8"')
DEFAULT_SINCE = "7d"
LATEST = 50
MAX_RECORDS = 200_000  # a page over more records counts the newest ones (and says so)

_STATIC_TYPES = {
    "index.html": "text/html; charset=utf-8",
    "dashboard.js": "text/javascript; charset=utf-8",
    "dashboard.css": "text/css; charset=utf-8",
}

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
    }


def data(
    ledger: Ledger, since_text: str, now: float, key_name: str | None = None
) -> dict[str, Any]:
    """The page's data: totals, rows by model and by day, the latest requests (`key_name`:
    that named key's only)."""
    since = parse_since(since_text, now)
    records = ledger.query(since=since, limit=MAX_RECORDS, key_name=key_name)
    return {
        "scope": key_name,
        "since": since,
        "generated": now,
        "records": len(records),
        "truncated": len(records) >= MAX_RECORDS,
        "total": total(records).as_json(),
        "by_model": [r.as_json() for r in aggregate(records, "model")],
        "by_day": [r.as_json() for r in aggregate(records, "day")],
        "latest": [_record_json(r) for r in records[:LATEST]],
    }


def dashboard_response(
    path: str,
    query: str | Mapping[str, str],
    ledger: Ledger,
    now: float | None = None,
    key_name: str | None = None,
) -> Response:
    """``(status, content_type, body)`` for a GET under ``/dashboard``."""
    if path in (PREFIX, PREFIX + "/"):
        return 200, _STATIC_TYPES["index.html"], _static("index.html")
    if path.startswith(PREFIX + "/static/"):
        name = path[len(PREFIX + "/static/") :]
        if name not in _STATIC_TYPES:  # a fixed list: no path ever reaches the file system
            return _error(404, f"no dashboard asset {name!r}")
        return 200, _STATIC_TYPES[name], _static(name)
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
