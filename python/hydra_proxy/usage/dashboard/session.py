"""The console's sign-in session: a key exchanged once for a cookie page scripts cannot read.

The cookie is signed, not stored (every worker and replica that shares the signing key
verifies it): who signed in (``admin``, a member's key name, or ``viewer`` for a key of
HYDRA_PROXY_KEYS), when the session ends (at most `LIFETIME`), and a binding to the
credential itself (a digest of the admin key, of the member's secret hash, or the proxy
key's id), so that changing the admin key, or rotating or revoking a member's key, ends its
sessions. It is ``HttpOnly`` (no script reads it), ``SameSite=Strict`` (no other site's
page sends it) and ``Secure`` over TLS. A change made with it must also carry the session's
anti-forgery token in the `CSRF_HEADER` header, which a cross-site form cannot send.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from dataclasses import dataclass
from typing import Literal

import orjson

COOKIE = "hydra_console"
CSRF_HEADER = b"x-hydra-csrf"
LIFETIME = 8 * 3600
"""Seconds a session lasts; then the key is asked for again."""
_DOMAIN = b"hydra-console-session\x00"
_CSRF = b"csrf\x00"

Role = Literal["admin", "member", "viewer"]


@dataclass(frozen=True)
class Session:
    role: Role
    name: str | None
    """The member's key name (role "member")."""
    expires: float
    binding: str
    csrf: str
    team: str | None = None
    """A member's team (one signed in with an identity token may have no key record)."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def session_key(signing_key: bytes) -> bytes:
    """The key sessions are signed with, derived from the proxy's signing key."""
    return hmac.new(bytes(signing_key), _DOMAIN, hashlib.sha256).digest()


def binding(credential: bytes | str) -> str:
    raw = credential.encode() if isinstance(credential, str) else credential
    return hashlib.sha256(_DOMAIN + raw).hexdigest()[:32]


def _csrf(key: bytes, value: str) -> str:
    return hmac.new(key, _CSRF + value.encode(), hashlib.sha256).hexdigest()[:32]


def issue(
    key: bytes,
    role: Role,
    name: str | None,
    bound: str,
    now: float,
    until: float | None = None,
    team: str | None = None,
) -> tuple[str, Session]:
    """A new session (ending at `until` when that comes before its `LIFETIME`): the
    cookie's value and what it holds."""
    expires = float(int(min(now + LIFETIME, until if until is not None else now + LIFETIME)))
    doc = {"r": role, "n": name, "e": expires, "b": bound, "t": team}
    payload = _b64(orjson.dumps(doc))
    signature = _b64(hmac.new(key, payload.encode(), hashlib.sha256).digest())
    value = f"v1.{payload}.{signature}"
    return value, Session(role, name, expires, bound, _csrf(key, value), team)


def verify(key: bytes, value: str, now: float) -> Session | None:
    """The session of a cookie value (None: forged, malformed or over)."""
    parts = value.split(".")
    if len(parts) != 3 or parts[0] != "v1" or len(value) > 1024:
        return None
    expected = _b64(hmac.new(key, parts[1].encode(), hashlib.sha256).digest())
    if not hmac.compare_digest(expected, parts[2]):
        return None
    try:
        doc = orjson.loads(_unb64(parts[1]))
    except (binascii.Error, ValueError, orjson.JSONDecodeError):
        return None
    if not isinstance(doc, dict) or doc.get("r") not in ("admin", "member", "viewer"):
        return None
    expires = doc.get("e")
    if not isinstance(expires, float | int) or expires <= now:
        return None
    name, bound, team = doc.get("n"), doc.get("b"), doc.get("t")
    if not isinstance(bound, str) or not all(v is None or isinstance(v, str) for v in (name, team)):
        return None
    return Session(doc["r"], name, float(expires), bound, _csrf(key, value), team)


def cookie_value(cookie_header: bytes | None) -> str | None:
    """The console's cookie among a Cookie header's."""
    if not cookie_header:
        return None
    for part in cookie_header.decode("latin-1").split(";"):
        name, sep, value = part.strip().partition("=")
        if sep and name == COOKIE:
            return value.strip()
    return None


def set_cookie(value: str, *, secure: bool, max_age: int = LIFETIME) -> bytes:
    attrs = [f"{COOKIE}={value}", "Path=/", f"Max-Age={max_age}", "HttpOnly", "SameSite=Strict"]
    if secure:
        attrs.append("Secure")
    return "; ".join(attrs).encode()


def csrf_ok(session: Session, sent: bytes | None) -> bool:
    return sent is not None and hmac.compare_digest(session.csrf.encode(), sent.strip())
