"""``/admin/config``: the live configuration over HTTP, allowed to admins only:

- ``GET``: the stored overlay and its version, the version this worker (its pid) runs,
  and the providers and routes in force (keys masked);
- ``PUT`` with an overlay document (``{"providers": {...}, "routes": [...]}``): it replaces
  the stored one; ``PATCH`` with a JSON merge patch of it (``null`` removes a member);
  ``DELETE``: no overlay (the file alone). ``?version=N`` refuses the change (409) unless
  the stored version is still N.

A change is checked as a start checks the file (the merged document validated, provider
keys, client keys, the bind, the signing key): refused, the answer lists every problem with
where it is (``live config vN`` and the overlay's path, or the file and its line). Stored,
it is a new version, audited, and every worker and replica sharing the store takes it up
within the refresh interval (team.live_config).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any
from urllib.parse import parse_qs

import orjson

from ..config import ConfigError
from ..config.loading import environment
from ..config.overlay import MAX_OVERLAY_BYTES, Overlay, effective, merge_patch
from ..errors import ProxyError, invalid_request
from ..server.checks.limits import check_content_type, parse_object, read_json_body
from ..server.pipeline.exchange import Exchange
from . import audit, live_config
from .store import KeyStoreError

PATH = "/admin/config"


def _expected(exchange: Exchange) -> int | None:
    query = parse_qs(exchange.scope.get("query_string", b"").decode("latin-1"))
    unknown = set(query) - {"version"}
    if unknown:
        raise invalid_request(f"unknown parameters: {', '.join(sorted(unknown))}")
    if "version" not in query:
        return None
    text = query["version"][-1]
    if not text.isdigit():
        raise invalid_request("version: the stored version the change is made against", "version")
    return int(text)


def _refused(exc: ConfigError) -> bytes:
    problems = [
        {"message": p.message, "where": p.file, "line": p.line, "hint": p.hint}
        for p in exc.problems
    ]
    message = "the live config is refused: " + " | ".join(
        str(p).replace("\n  -> ", " -> ") for p in exc.problems
    )
    error = {"message": message, "type": "invalid_request_error", "code": "config_refused"}
    return orjson.dumps({"error": {**error, "problems": problems}})


async def admin_config(exchange: Exchange, actor: str) -> None:
    worker = exchange.worker
    team = worker.team
    assert team is not None
    method: str = exchange.scope["method"]
    if exchange.scope["path"] != PATH or method not in ("GET", "PUT", "PATCH", "DELETE"):
        raise ProxyError(
            405, f"no admin endpoint {method} {exchange.scope['path']}",
            error_type="invalid_request_error",
        )  # fmt: skip
    store = team.store
    settings = worker.settings
    expected = _expected(exchange)
    patch: dict[str, Any] | None = None
    if method in ("PUT", "PATCH"):
        check_content_type(exchange.scope)
        raw = await read_json_body(
            exchange.scope, exchange.receive, MAX_OVERLAY_BYTES, settings.body_timeout,
            "the live config's bound, 256 KiB",
        )  # fmt: skip
        patch = parse_object(raw, 32)

    def run() -> tuple[int, dict[str, Any]]:
        stored = live_config.current(store)
        if method == "GET":
            return 200, {
                "version": stored.version,
                "overlay": stored.document,
                "applied_version": settings.overlay_version,
                "worker": os.getpid(),  # which worker process answered
                "file": settings.config_file,
                "effective": effective(settings),
            }
        if expected is not None and expected != stored.version:
            raise live_config.VersionConflict(
                f"the live config is at version {stored.version}, not {expected}"
            )
        if method == "PUT":
            document = patch or {}
        elif method == "PATCH":
            document = merge_patch(stored.document, patch)
        else:
            document = {}
        flags = dict(settings.flags)
        if settings.config_file is not None:
            flags["config"] = settings.config_file
        # Everything a start checks, against this worker's file and environment.
        live_config.with_overlay(flags, environment(), Overlay(stored.version + 1, document))
        with audit.acting_as(actor):
            new = live_config.write(store, document, stored.version, time.time())
        return 200, {"version": new.version, "overlay": new.document}

    try:
        status, doc = await asyncio.to_thread(run)
    except ConfigError as exc:
        await exchange.respond(400, _refused(exc), headers=[(b"cache-control", b"no-store")])
        return
    except live_config.VersionConflict as exc:
        raise ProxyError(409, str(exc), error_type="invalid_request_error") from None
    except KeyStoreError as exc:
        raise ProxyError(503, str(exc), error_type="api_error") from None
    await exchange.respond(status, orjson.dumps(doc), headers=[(b"cache-control", b"no-store")])
