"""``/admin/keys``: the keys managed over HTTP, allowed only with the admin key
(``HYDRA_ADMIN_KEY``, in ``x-api-key`` or ``Authorization: Bearer``):

- ``GET /admin/keys``: every key and team, with the spend of their period;
- ``POST /admin/keys`` ``{"name": ..., "team", "budget", "period", "rpm", "tpm",
  "streams", "models", "expires"}``: a new key; the answer holds its secret, once;
- ``GET /admin/keys/NAME``; ``PATCH /admin/keys/NAME`` (the same fields; ``null`` leaves
  one as it is, ``"none"`` clears it); ``DELETE /admin/keys/NAME``: revoked;
- ``POST /admin/keys/NAME/rotate`` ``{"grace_seconds": 86400}``: a new secret, the old one
  valid for the grace period;
- ``PUT /admin/keys/_teams/TEAM`` ``{"budget", "period", "rpm", "tpm"}``: a team's limits;
- ``PUT /admin/keys/NAME/alert`` (or ``/admin/keys/_teams/TEAM/alert``) ``{"thresholds":
  [50, 80, 100], "webhook": "https://...", "format": "json" | "slack"}``: a spend alert at
  those percentages of the budget (team/alerts.py); ``DELETE`` the same path: none.

The console (``/dashboard``) calls it with the admin's session cookie instead of the key,
and its anti-forgery header on every change (server/endpoints/console.py).

Every change is written to the audit log, read with ``GET /admin/audit`` (``since``:
``24h`` or a date, ``subject``: ``key:NAME`` or ``team:NAME``, ``limit``), newest first.

A change is applied to this worker's keys at once; other workers see it within their
refresh interval. No answer but a creation's or a rotation's holds a secret.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

import orjson

from ..errors import ProxyError, invalid_request
from ..server.checks.limits import check_content_type, parse_object, read_json_body
from ..server.pipeline.exchange import Exchange
from ..usage.report import parse_since
from . import alerts, audit, manage
from .service import TeamKeys
from .store import KeyStore, KeyStoreError

PREFIX = "/admin/keys"
AUDIT = "/admin/audit"
TEAMS = "_teams"


async def _body(exchange: Exchange) -> dict[str, Any]:
    settings = exchange.worker.settings
    check_content_type(exchange.scope)
    raw = await read_json_body(
        exchange.scope, exchange.receive, 1 << 16, settings.body_timeout, "the admin bound, 64 KiB"
    )
    return parse_object(raw, 8)


def _fields(doc: dict[str, Any], allowed: tuple[str, ...]) -> dict[str, Any]:
    unknown = set(doc) - set(allowed)
    if unknown:
        raise invalid_request(f"unknown fields: {', '.join(sorted(unknown))}")
    return doc


async def _alert_body(exchange: Exchange) -> dict[str, Any]:
    return _fields(await _body(exchange), ("thresholds", "webhook", "format"))


def _alert_target(parts: list[str]) -> tuple[str, str] | None:
    """("key", NAME) for NAME/alert, ("team", TEAM) for _teams/TEAM/alert, else None."""
    if len(parts) == 2 and parts[1] == "alert" and parts[0] != TEAMS:
        return "key", parts[0]
    if len(parts) == 3 and parts[0] == TEAMS and parts[2] == "alert":
        return "team", parts[1]
    return None


async def admin(exchange: Exchange) -> tuple[TeamKeys, str]:
    """The worker's keys and who the admin is (their audit name), or the refusal (after
    a failed attempt's wait: TeamKeys.admin_refused): the admin key, or the admin's
    console session (server/endpoints/console.py)."""
    from ..server.endpoints.console import console_admin

    team = exchange.worker.team
    if team is None or not team.has_admins:
        raise ProxyError(
            404,
            "the admin API is off: set HYDRA_ADMIN_KEY (or [identity] admin_claim)",
            error_type="not_found_error",
        )
    actor = team.admin_actor(exchange.presented_key())
    if actor is not None:
        exchange.log["admin"] = "key"
        return team, actor
    actor = console_admin(exchange)
    if actor is not None:
        exchange.log["admin"] = "console"
        return team, actor
    await team.admin_refused()
    raise ProxyError(401, "the admin API needs the admin key", error_type="authentication_error")


# A change's work (run in a thread) and the status it answers with.
_Change = tuple[Callable[[], Any], int]


async def _listing(exchange: Exchange, store: KeyStore, parts: list[str], now: float) -> _Change:
    if parts:
        return lambda: manage.listing(store, now, parts[0])["keys"][0], 200
    return lambda: manage.listing(store, now), 200


async def _create(exchange: Exchange, store: KeyStore, parts: list[str], now: float) -> _Change:
    doc = _fields(await _body(exchange), ("name", *manage.CHANGES))
    name = doc.pop("name", None)
    if not isinstance(name, str):
        raise invalid_request("name: the key's name (a string) is required", "name")

    def call() -> Any:
        key, secret = manage.create(store, name, now, **doc)
        return {**manage.listing(store, now, key.name)["keys"][0], "secret": secret}

    return call, 201


async def _update(exchange: Exchange, store: KeyStore, parts: list[str], now: float) -> _Change:
    doc = _fields(await _body(exchange), manage.CHANGES)

    def call() -> Any:
        manage.update(store, parts[0], **doc)
        return manage.listing(store, now, parts[0])["keys"][0]

    return call, 200


async def _revoke(exchange: Exchange, store: KeyStore, parts: list[str], now: float) -> _Change:
    return lambda: manage.revoke(store, parts[0], now).public(), 200


async def _rotate(exchange: Exchange, store: KeyStore, parts: list[str], now: float) -> _Change:
    doc = _fields(await _body(exchange), ("grace_seconds",))
    grace = doc.get("grace_seconds", manage.DEFAULT_GRACE)
    if not isinstance(grace, int | float) or isinstance(grace, bool) or grace < 0:
        raise invalid_request("grace_seconds: a number of seconds, at least 0")

    def call() -> Any:
        key, secret = manage.rotate(store, parts[0], now, float(grace))
        return {**key.public(), "secret": secret}

    return call, 200


async def _set_team(exchange: Exchange, store: KeyStore, parts: list[str], now: float) -> _Change:
    doc = _fields(await _body(exchange), ("budget", "period", "rpm", "tpm"))
    return lambda: manage.set_team(store, parts[1], **doc).public(), 200


async def _set_alert(exchange: Exchange, store: KeyStore, parts: list[str], now: float) -> _Change:
    target = _alert_target(parts)
    assert target is not None
    doc = await _alert_body(exchange) if exchange.scope["method"] == "PUT" else {}
    return lambda: manage.set_alert(store, *target, **doc), 200


def _resource(parts: list[str]) -> str | None:
    """Which of the admin API's resources a path under /admin/keys names."""
    if _alert_target(parts) is not None:
        return "alert"
    if not parts:
        return "keys"
    if len(parts) == 1:
        return "key"
    if len(parts) == 2 and parts[0] == TEAMS:
        return "team"
    if len(parts) == 2 and parts[1] == "rotate":
        return "rotate"
    return None


# (resource, method) -> the handler reading the request into its change.
_HANDLERS: dict[
    tuple[str, str], Callable[[Exchange, KeyStore, list[str], float], Awaitable[_Change]]
] = {
    ("keys", "GET"): _listing,
    ("keys", "POST"): _create,
    ("key", "GET"): _listing,
    ("key", "PATCH"): _update,
    ("key", "DELETE"): _revoke,
    ("rotate", "POST"): _rotate,
    ("team", "PUT"): _set_team,
    ("alert", "PUT"): _set_alert,
    ("alert", "DELETE"): _set_alert,
}


async def admin_keys(exchange: Exchange) -> None:
    team, actor = await admin(exchange)
    method: str = exchange.scope["method"]
    parts = [p for p in exchange.scope["path"][len(PREFIX) :].split("/") if p]
    handler = _HANDLERS.get((_resource(parts) or "", method))
    if handler is None:
        raise ProxyError(
            405 if len(parts) <= 2 else 404,
            f"no admin endpoint {method} {exchange.scope['path']}",
            error_type="invalid_request_error",
        )
    call, status = await handler(exchange, team.store, parts, time.time())

    def run() -> Any:
        with audit.acting_as(actor):
            result = call()
        if method != "GET":
            team.reload()  # this worker: at once
        return result

    try:
        doc = await asyncio.to_thread(run)
    except manage.NoSuchKey as exc:
        raise ProxyError(404, str(exc), error_type="not_found_error") from None
    except (manage.KeyChangeError, alerts.AlertError) as exc:
        raise invalid_request(str(exc)) from None
    except KeyStoreError as exc:
        raise ProxyError(503, str(exc), error_type="api_error") from None
    await exchange.respond(status, orjson.dumps(doc), headers=[(b"cache-control", b"no-store")])


async def admin_audit(exchange: Exchange) -> None:
    """``GET /admin/audit?since=24h&subject=key:alice&limit=100``: the newest entries first."""
    team, _ = await admin(exchange)
    if exchange.scope["method"] != "GET" or exchange.scope["path"] != AUDIT:
        raise ProxyError(
            405, f"no admin endpoint {exchange.scope['method']} {exchange.scope['path']}",
            error_type="invalid_request_error",
        )  # fmt: skip
    query = parse_qs(exchange.scope.get("query_string", b"").decode("latin-1"))
    unknown = set(query) - {"since", "subject", "limit"}
    if unknown:
        raise invalid_request(f"unknown parameters: {', '.join(sorted(unknown))}")
    since = None
    if "since" in query:
        try:
            since = parse_since(query["since"][-1], time.time())
        except ValueError as exc:
            raise invalid_request(str(exc).replace("--since", "since"), "since") from None
    limit = query.get("limit", [str(audit.DEFAULT_LIMIT)])[-1]
    if not limit.isdigit() or not 1 <= int(limit) <= audit.MAX_LIMIT:
        raise invalid_request(f"limit: a whole number from 1 to {audit.MAX_LIMIT}", "limit")
    subject = query["subject"][-1] if "subject" in query else None
    store = team.store
    try:
        found = await asyncio.to_thread(audit.entries, store, since, subject, int(limit))
    except KeyStoreError as exc:
        raise ProxyError(503, str(exc), error_type="api_error") from None
    doc = {"entries": [e.public() for e in found]}
    await exchange.respond(200, orjson.dumps(doc), headers=[(b"cache-control", b"no-store")])


async def admin_config(exchange: Exchange) -> None:
    """``/admin/config``: the live configuration (team.admin_config)."""
    _, actor = await admin(exchange)
    from .admin_config import admin_config as handle

    await handle(exchange, actor)


HANDLERS: dict[str, Callable[[Exchange], Awaitable[None]]] = {
    PREFIX: admin_keys,
    AUDIT: admin_audit,
    "/admin/config": admin_config,
}
"""Each admin endpoint by its path (and the paths below it)."""


def handler_for(path: str) -> Callable[[Exchange], Awaitable[None]] | None:
    for prefix, handler in HANDLERS.items():
        if path == prefix or path.startswith(prefix + "/"):
            return handler
    return None
