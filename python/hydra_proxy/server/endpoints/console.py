"""The console at ``/dashboard``: who is looking, signing in and out, and its data.

The page and its assets are static and public (they hold no data). Everything else needs
someone signed in (usage/dashboard/session.py): ``POST /dashboard/session`` exchanges a
key for the session cookie, ``GET /dashboard/session`` says who is signed in (a member:
their limits and what is left this period), ``DELETE /dashboard/session`` signs out. The
admin key signs in as ``admin`` (everyone's usage; the page changes keys through
``/admin/keys``, which accepts the session with its anti-forgery header), a member's key
as that member (their own usage only), a key of HYDRA_PROXY_KEYS as ``viewer``
(everyone's usage, no changes). A proxy with no keys at all has an open, read-only console.
HTTP Basic credentials (the key as the password) are read too, for scripts.
"""

from __future__ import annotations

import asyncio
import hmac
import math
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any

import orjson

from ...errors import ProxyError, invalid_request
from ...team import manage
from ...team.identity import looks_like_token
from ...team.period import bounds, utc_text
from ...team.record import NamedKey
from ...usage.dashboard import PREFIX, basic_auth_key, static_response
from ...usage.dashboard.session import (
    CSRF_HEADER,
    Role,
    Session,
    binding,
    cookie_value,
    csrf_ok,
    issue,
    session_key,
    set_cookie,
    verify,
)
from ..checks.limits import parse_object, read_json_body
from ..pipeline.exchange import Exchange, is_proxy_key

SESSION = PREFIX + "/session"
# The page loads nothing from anywhere else, runs no inline script and is never framed.
SECURITY_HEADERS = [
    (b"content-security-policy",
     b"default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
]  # fmt: skip
NO_STORE = (b"cache-control", b"no-store")
_SIGN_IN_BYTES = 4096


class SignInThrottle:
    """Failed sign-ins per client address over the last minute: past `limit`, the address
    waits (a guessed key is tried at a few per minute, not thousands per second). Bounded:
    the oldest address is forgotten past `addresses`."""

    def __init__(self, limit: int = 10, window: float = 60.0, addresses: int = 4096) -> None:
        self.limit, self.window, self.addresses = limit, window, addresses
        self._failed: OrderedDict[str, deque[float]] = OrderedDict()

    def wait(self, client: str, now: float) -> int:
        """Seconds `client` must wait before its next try (0: none)."""
        times = self._failed.get(client)
        if times is None:
            return 0
        while times and times[0] <= now - self.window:
            times.popleft()
        if len(times) < self.limit:
            return 0
        return max(1, math.ceil(times[0] + self.window - now))

    def failed(self, client: str, now: float) -> None:
        times = self._failed.pop(client, None) or deque(maxlen=self.limit)
        times.append(now)
        self._failed[client] = times
        if len(self._failed) > self.addresses:
            self._failed.popitem(last=False)


FAILED_SIGN_INS = SignInThrottle()


@dataclass(frozen=True)
class Viewer:
    """Who is looking: ``admin`` (`name`: as the audit log names them), ``member``
    (`name`: the key's), ``viewer`` or ``open`` (no keys); `session` when signed in
    through the console (None: Basic credentials, or open)."""

    role: str
    name: str | None = None
    session: Session | None = None


def _key(exchange: Exchange) -> bytes:
    return session_key(exchange.worker.signing_key)


@dataclass(frozen=True)
class Credential:
    """What a key signs in as: `role`, `name` (an admin's audit name, a member's key name),
    the session's `binding` to it, and when it stops working (an identity token's expiry;
    None: not before the session's own end)."""

    role: Role
    name: str | None
    binding: str
    until: float | None = None
    team: str | None = None


_TOKEN = "token:"
"""A binding to an identity token: the session ends when the token does (its cookie's
expiry), and with the member's record when it has one."""


def _credential(exchange: Exchange, presented: bytes) -> Credential | None:
    """What a key signs in as (None: no key of this proxy); a ProxyError naming why a
    member's key or token is refused (revoked, expired)."""
    worker, team = exchange.worker, exchange.worker.team
    now = time.time()
    token = team is not None and team.identity is not None and looks_like_token(presented)
    until = None
    if token:
        assert team is not None and team.identity is not None
        until = team.identity.verify(presented, now).expires
    actor = team.admin_actor(presented) if team is not None else None
    if actor is not None:
        bound = _TOKEN + binding(presented) if token else binding(presented)
        return Credential("admin", actor, bound, until)
    if worker.proxy_keys and is_proxy_key(worker.proxy_keys, presented):
        return Credential("viewer", None, binding(presented))
    if team is not None and team.recognizes(presented):
        key = team.authenticate(presented, now).key
        bound = _TOKEN + binding(presented) if token else binding(key.secret_hash)
        return Credential("member", key.name, bound, until, key.team)
    return None


def _still_bound(exchange: Exchange, session: Session, now: float) -> bool:
    """Whether the credential a session was made with still stands."""
    worker, team = exchange.worker, exchange.worker.team
    if session.role == "viewer":
        return any(hmac.compare_digest(binding(k), session.binding) for k in worker.proxy_keys)
    if team is None:
        return False
    token = session.binding.startswith(_TOKEN)
    if token and team.identity is None:
        return False
    if session.role == "admin":
        if token:
            return True
        admin = team.admin_key
        return admin is not None and hmac.compare_digest(binding(admin), session.binding)
    key = team.keyring.by_name.get(session.name or "")
    if key is None:
        return token  # a token's member need not have a record
    usable = key.revoked is None and (key.expires is None or key.expires > now)
    return usable and (token or hmac.compare_digest(binding(key.secret_hash), session.binding))


def viewer(exchange: Exchange) -> Viewer | None:
    """Who is looking (None: nobody signed in, on a proxy with keys)."""
    worker = exchange.worker
    if not worker.proxy_keys and worker.team is None:
        return Viewer("open")
    now = time.time()
    value = cookie_value(exchange.header(b"cookie"))
    if value is not None:
        session = verify(_key(exchange), value, now)
        if session is not None and _still_bound(exchange, session, now):
            return Viewer(session.role, session.name, session)
    presented = basic_auth_key(exchange.header(b"authorization"))
    if presented is not None:
        try:
            found = _credential(exchange, presented)
        except ProxyError:
            return None
        if found is not None:
            return Viewer(found.role, found.name)
    return None


def console_admin(exchange: Exchange) -> str | None:
    """Who the admin of the request's console session is, as the audit log names them
    (None: no admin's session); a change (any method but GET) must carry the session's
    anti-forgery header (a 403 otherwise)."""
    if cookie_value(exchange.header(b"cookie")) is None:
        return None
    seen = viewer(exchange)
    if seen is None or seen.session is None or seen.role != "admin":
        return None
    if exchange.scope["method"] not in ("GET", "HEAD") and not csrf_ok(
        seen.session, exchange.header(CSRF_HEADER)
    ):
        raise ProxyError(
            403,
            "a change from the console needs its x-hydra-csrf header (sign in again)",
            error_type="permission_error",
        )
    return f"{seen.name} (console)"


def _member_page(exchange: Exchange, name: str, team_name: str | None) -> dict[str, Any]:
    """A member's own page: their limits, what they spent this period and what is left
    (the key's budget and their team's; a member of an identity token with no key record
    has their team's only). Blocking: from a thread."""
    team = exchange.worker.team
    assert team is not None
    store, now = team.store, time.time()
    try:
        doc: dict[str, Any] = manage.listing(store, now, name)["keys"][0]
    except manage.NoSuchKey:
        unrecorded = NamedKey(name, "", now, team=team_name)
        start, end = bounds(unrecorded.limits.period, now)
        doc = {**unrecorded.public(), "created": None, "state": "active", "alert": None,
               "spent_usd": round(store.spent("key_name", name, start)[0], 6),
               "period_resets": utc_text(end)}  # fmt: skip
    budget = doc["budget_usd"]
    doc["left_usd"] = None if budget is None else round(max(0.0, budget - doc["spent_usd"]), 6)
    doc["team_limits"] = None
    for t in store.teams() if doc["team"] else ():
        if t.name == doc["team"]:
            start, end = bounds(t.limits.period, now)
            spent, _ = store.spent("team", t.name, start)
            left = None if t.limits.budget_usd is None else max(0.0, t.limits.budget_usd - spent)
            doc["team_limits"] = {**t.public(), "spent_usd": round(spent, 6),
                                  "left_usd": left, "period_resets": utc_text(end)}  # fmt: skip
    return doc


async def _who(exchange: Exchange, seen: Viewer) -> dict[str, Any]:
    worker = exchange.worker
    doc: dict[str, Any] = {
        "role": seen.role,
        "name": seen.name if seen.role == "member" else None,
        "csrf": seen.session.csrf if seen.session is not None else None,
        "expires": utc_text(seen.session.expires) if seen.session is not None else None,
        "admin_api": seen.role == "admin" and seen.session is not None,
        "ledger": worker.usage is not None and worker.usage.ledger is not None,
    }
    if seen.role == "member" and seen.name is not None:
        team = seen.session.team if seen.session is not None else None
        doc["member"] = await asyncio.to_thread(_member_page, exchange, seen.name, team)
    return doc


async def _reply(exchange: Exchange, status: int, doc: Any, *extra: tuple[bytes, bytes]) -> None:
    await exchange.respond(status, orjson.dumps(doc), headers=[NO_STORE, *SECURITY_HEADERS, *extra])


def _refused(message: str) -> dict[str, Any]:
    return {"error": {"type": "authentication_error", "message": message}}


async def sign_in(exchange: Exchange) -> None:
    raw = await read_json_body(
        exchange.scope, exchange.receive, _SIGN_IN_BYTES, exchange.worker.settings.body_timeout,
        "the sign-in bound, 4 KiB",
    )  # fmt: skip
    key = parse_object(raw, 4).get("key")
    if not isinstance(key, str) or not key.strip():
        raise invalid_request("key: the admin key or your member key is required", "key")
    if not exchange.worker.proxy_keys and exchange.worker.team is None:
        await _reply(exchange, 200, await _who(exchange, Viewer("open")))
        return
    now = time.time()
    client = (exchange.scope.get("client") or ("", 0))[0]
    wait = FAILED_SIGN_INS.wait(client, now)
    if wait:
        raise ProxyError(
            429, f"too many failed sign-ins from this address: retry in {wait} s",
            error_type="rate_limit_error", retry_after=str(wait),
        )  # fmt: skip
    try:
        found = _credential(exchange, key.strip().encode())
        if found is None:
            raise ProxyError(401, "unknown key (not a key of this proxy)",
                             error_type="authentication_error")  # fmt: skip
    except ProxyError as exc:
        if exc.status in (401, 403):
            FAILED_SIGN_INS.failed(client, now)
            team = exchange.worker.team
            if exc.status == 401 and team is not None:  # no faster a guess than the admin API
                await team.admin_refused()
        raise
    value, session = issue(
        _key(exchange), found.role, found.name, found.binding, now, found.until, found.team
    )
    exchange.log["console"] = f"sign-in {found.role}" + (f" {found.name}" if found.name else "")
    secure = exchange.scope.get("scheme") == "https"
    await _reply(
        exchange,
        200,
        await _who(exchange, Viewer(found.role, found.name, session)),
        (b"set-cookie", set_cookie(value, secure=secure, max_age=int(session.expires - now))),
    )


def static_page(path: str) -> tuple[int, str, bytes]:
    page = static_response(path)
    if page is None:
        return (
            404,
            "application/json",
            orjson.dumps(
                {"error": {"type": "not_found_error", "message": f"no console page {path!r}"}}
            ),
        )
    return page


async def handle(exchange: Exchange) -> None:
    """Every request under ``/dashboard``."""
    method: str = exchange.scope["method"]
    path: str = exchange.scope["path"]
    if path == SESSION:
        if method == "POST":
            await sign_in(exchange)
            return
        seen = viewer(exchange)
        if method == "DELETE":
            if (
                seen is not None
                and seen.session is not None
                and not csrf_ok(seen.session, exchange.header(CSRF_HEADER))
            ):
                raise ProxyError(403, "signing out needs the x-hydra-csrf header",
                                 error_type="permission_error")  # fmt: skip
            secure = exchange.scope.get("scheme") == "https"
            await _reply(exchange, 200, {"signed_out": True},
                         (b"set-cookie", set_cookie("", secure=secure, max_age=0)))  # fmt: skip
            return
        if method not in ("GET", "HEAD"):
            raise ProxyError(
                405, f"method {method} not allowed", error_type="invalid_request_error"
            )
        if seen is None:
            await _reply(exchange, 401, _refused("not signed in"))
            return
        await _reply(exchange, 200, await _who(exchange, seen))
        return
    if method not in ("GET", "HEAD"):
        raise ProxyError(405, f"method {method} not allowed", error_type="invalid_request_error")
    worker = exchange.worker
    query = exchange.scope.get("query_string", b"").decode("latin-1")
    if path != PREFIX + "/data.json":  # the page and its assets: no data in them
        status, content_type, body = await asyncio.to_thread(static_page, path)
        await exchange.respond(status, body, content_type.encode(), SECURITY_HEADERS)
        return
    seen = viewer(exchange)
    if seen is None:
        await _reply(exchange, 401, _refused("sign in with the admin key or your member key"))
        return
    if worker.usage is None or worker.usage.ledger is None:
        raise ProxyError(404, "the usage ledger is off", error_type="not_found_error")
    only = seen.name if seen.role == "member" else None
    status, content_type, body = await asyncio.to_thread(worker.usage.dashboard, path, query, only)
    await exchange.respond(status, body, content_type.encode(), [NO_STORE, *SECURITY_HEADERS])
