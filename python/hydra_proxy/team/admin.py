"""``/admin/keys``: the keys managed over HTTP, allowed only with the admin key
(``HYDRA_ADMIN_KEY``, in ``x-api-key`` or ``Authorization: Bearer``):

- ``GET /admin/keys``: every key and team, with the spend of their period;
- ``POST /admin/keys`` ``{"name": ..., "team", "budget", "period", "rpm", "tpm",
  "streams", "models", "expires"}``: a new key; the answer holds its secret, once;
- ``GET /admin/keys/NAME``; ``PATCH /admin/keys/NAME`` (the same fields; ``null`` leaves
  one as it is, ``"none"`` clears it); ``DELETE /admin/keys/NAME``: revoked;
- ``POST /admin/keys/NAME/rotate`` ``{"grace_seconds": 86400}``: a new secret, the old one
  valid for the grace period;
- ``PUT /admin/keys/_teams/TEAM`` ``{"budget", "period", "rpm", "tpm"}``: a team's limits.

A change is applied to this worker's keys at once; other workers see it within their
refresh interval. No answer but a creation's or a rotation's holds a secret.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import orjson

from ..errors import ProxyError, invalid_request
from ..server.exchange import Exchange
from ..server.limits import check_content_type, parse_object, read_json_body
from . import manage
from .store import KeyStoreError

PREFIX = "/admin/keys"
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


async def admin_keys(exchange: Exchange) -> None:
    team = exchange.worker.team
    if team is None or team.admin_key is None:
        raise ProxyError(
            404, "the admin API is off: set HYDRA_ADMIN_KEY", error_type="not_found_error"
        )
    if not team.is_admin(exchange.presented_key()):
        await team.admin_refused()
        raise ProxyError(
            401, "the admin API needs the admin key", error_type="authentication_error"
        )
    method: str = exchange.scope["method"]
    parts = [p for p in exchange.scope["path"][len(PREFIX) :].split("/") if p]
    store = team.store
    now = time.time()
    status = 200
    call: Callable[[], Any]
    if not parts and method == "GET":
        call = lambda: manage.listing(store, now)  # noqa: E731
    elif not parts and method == "POST":
        doc = _fields(await _body(exchange), ("name", *manage.CHANGES))
        name = doc.pop("name", None)
        if not isinstance(name, str):
            raise invalid_request("name: the key's name (a string) is required", "name")

        def call() -> Any:
            key, secret = manage.create(store, name, now, **doc)
            return {**manage.listing(store, now, key.name)["keys"][0], "secret": secret}

        status = 201
    elif len(parts) == 2 and parts[0] == TEAMS and method == "PUT":
        doc = _fields(await _body(exchange), ("budget", "period", "rpm", "tpm"))
        call = lambda: manage.set_team(store, parts[1], **doc).public()  # noqa: E731
    elif len(parts) == 1 and method == "GET":
        call = lambda: manage.listing(store, now, parts[0])["keys"][0]  # noqa: E731
    elif len(parts) == 1 and method == "PATCH":
        doc = _fields(await _body(exchange), manage.CHANGES)

        def call() -> Any:
            manage.update(store, parts[0], **doc)
            return manage.listing(store, now, parts[0])["keys"][0]

    elif len(parts) == 1 and method == "DELETE":
        call = lambda: manage.revoke(store, parts[0], now).public()  # noqa: E731
    elif len(parts) == 2 and parts[1] == "rotate" and method == "POST":
        doc = _fields(await _body(exchange), ("grace_seconds",))
        grace = doc.get("grace_seconds", manage.DEFAULT_GRACE)
        if not isinstance(grace, int | float) or isinstance(grace, bool) or grace < 0:
            raise invalid_request("grace_seconds: a number of seconds, at least 0")

        def call() -> Any:
            key, secret = manage.rotate(store, parts[0], now, float(grace))
            return {**key.public(), "secret": secret}

    else:
        raise ProxyError(
            405 if len(parts) <= 2 else 404,
            f"no admin endpoint {method} {exchange.scope['path']}",
            error_type="invalid_request_error",
        )

    def run() -> Any:
        result = call()
        if method != "GET":
            team.reload()  # this worker: at once
        return result

    try:
        doc = await asyncio.to_thread(run)
    except manage.NoSuchKey as exc:
        raise ProxyError(404, str(exc), error_type="not_found_error") from None
    except manage.KeyChangeError as exc:
        raise invalid_request(str(exc)) from None
    except KeyStoreError as exc:
        raise ProxyError(503, str(exc), error_type="api_error") from None
    await exchange.respond(status, orjson.dumps(doc), headers=[(b"cache-control", b"no-store")])
