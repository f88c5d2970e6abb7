"""Members from the team's identity provider: a JWT it signed (RS256 or ES256), verified
against its key set (a JWKS file, or an https URL fetched and cached), accepted wherever a
named ``hk-`` key is.

A verified token names a member (``member_claim``, default ``sub``) and may name a team
(``team_claim``) and make its holder an admin (``admin_claim`` holding ``admin_value``).
The member then has the limits of the key store's record of that name (its budget, rates,
models, team; revoked or expired, the token is refused too); a member with no record has
its team's limits, and a token whose team has no record is refused: every member is
counted against limits an admin set.

The key set is read when the worker starts, again every ``jwks_refresh`` seconds, and when
a token names a key id the set does not hold (at most once per `REFETCH_INTERVAL`,
whatever the key ids tokens make up): a URL
is fetched off the event loop, on the key store's refresh tick, so the request that met an
unknown key id is answered 503 with ``retry-after`` (its retry finds the new key), and
after a fetch that did not bring it, 401. A fetch is bounded in time and size. Verified
tokens are remembered until they expire (a bounded cache, emptied when the key set
changes): a member's every request does not pay for a signature check.
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..config.check import is_loopback
from ..errors import ProxyError
from .keyring import Keyring
from .record import NamedKey, Team
from .refusals import unauthorized

log = logging.getLogger("hydra_proxy.identity")

ALGORITHMS = {"RSA": "RS256", "EC": "ES256"}
"""The signatures accepted, by the key type that makes them (never "none", never HMAC)."""
MAX_TOKEN_BYTES = 16 * 1024
MAX_JWKS_BYTES = 1 << 20
FETCH_TIMEOUT = 5.0
REFETCH_INTERVAL = 30.0
"""The least time between two reads of the key set asked for by unknown key ids."""
CACHE_SIZE = 4096
DEFAULTS: dict[str, Any] = {
    "member_claim": "sub",
    "team_claim": None,
    "admin_claim": None,
    "admin_value": None,
    "leeway": 30.0,
    "jwks_refresh": 300.0,
}


class IdentityError(Exception):
    """The key set cannot be read or is not a key set: what, and where."""


@dataclass(frozen=True)
class IdentityConfig:
    """``[identity]`` as the workers use it."""

    jwks: str
    issuer: str
    audience: str
    member_claim: str = "sub"
    team_claim: str | None = None
    admin_claim: str | None = None
    admin_value: str | None = None
    leeway: float = 30.0
    jwks_refresh: float = 300.0

    @classmethod
    def of(cls, table: Mapping[str, Any]) -> IdentityConfig | None:
        """From the checked ``[identity]`` table (None: no identity provider)."""
        if not table.get("jwks"):
            return None
        values = {**DEFAULTS, **table}
        return cls(**{k: values[k] for k in cls.__dataclass_fields__ if k in values})

    @property
    def is_url(self) -> bool:
        return self.jwks.startswith(("https://", "http://"))


def source_problem(jwks: str) -> str | None:
    """Why `jwks` cannot be a key set's place (None: it can)."""
    if jwks.startswith(("https://", "http://")):
        parts = urllib.parse.urlsplit(jwks)
        if not parts.hostname:
            return f"jwks {jwks!r}: a URL without a host"
        if parts.scheme == "http" and not is_loopback(parts.hostname):
            return f"jwks {jwks!r}: a key set from another host must come over https"
        return None
    path = Path(jwks).expanduser()
    if not path.is_file():
        return f"jwks {jwks!r}: no such file (a JWKS file, or an https:// URL)"
    return None


def _read(source: str) -> bytes:
    """The key set's bytes, at most `MAX_JWKS_BYTES` (blocking: a file, or one GET)."""
    if source.startswith(("https://", "http://")):
        request = urllib.request.Request(source, headers={"accept": "application/json"})
        deadline = time.monotonic() + FETCH_TIMEOUT
        chunks: list[bytes] = []
        size = 0
        try:
            with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT) as reply:
                # The timeout bounds each read; the deadline, the whole (a slow drip).
                while size <= MAX_JWKS_BYTES and time.monotonic() < deadline:
                    chunk = reply.read(64 * 1024)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
                else:
                    if size <= MAX_JWKS_BYTES:
                        raise IdentityError(
                            f"cannot fetch the key set {source}: over {FETCH_TIMEOUT:g} s"
                        )
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise IdentityError(f"cannot fetch the key set {source}: {exc}") from exc
        data = b"".join(chunks)
    else:
        try:
            with open(Path(source).expanduser(), "rb") as file:
                data = file.read(MAX_JWKS_BYTES + 1)
        except OSError as exc:
            raise IdentityError(f"cannot read the key set {source}: {exc}") from exc
    if len(data) > MAX_JWKS_BYTES:
        raise IdentityError(f"the key set {source} is over {MAX_JWKS_BYTES} bytes")
    return data


def parse_key_set(data: bytes, source: str) -> dict[str | None, tuple[Any, str]]:
    """Each usable key of a JWKS by its key id: (the public key, the one algorithm it
    verifies). Keys of other types or uses are left out; none usable is an error."""
    import jwt

    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise IdentityError(f"the key set {source} is not JSON: {exc}") from None
    entries = doc.get("keys") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise IdentityError(f'the key set {source} has no "keys" array')
    keys: dict[str | None, tuple[Any, str]] = {}
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
            continue
        algorithm = ALGORITHMS.get(str(entry.get("kty")))
        if algorithm is None or entry.get("alg", algorithm) != algorithm:
            continue
        if entry.get("kty") == "EC" and entry.get("crv") != "P-256":
            continue
        try:
            key = jwt.PyJWK.from_dict(entry, algorithm).key
        except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError) as exc:
            log.warning("the key set %s: key %r left out: %s", source, entry.get("kid"), exc)
            continue
        keys[entry.get("kid")] = (key, algorithm)
    if not keys:
        raise IdentityError(f"the key set {source} holds no RS256 or ES256 signing key")
    return keys


@dataclass(frozen=True)
class Claims:
    """What a verified token says."""

    member: str
    team: str | None
    admin: bool
    expires: float


class KeysPending(ProxyError):
    """A token signed by a key id the key set may hold once it is read again."""

    def __init__(self) -> None:
        super().__init__(
            503,
            "hydra-proxy: the token is signed by a key the identity provider's key set did not "
            "hold; it is being read again: retry",
            error_type="overloaded_error",
            retry_after="1",
        )


def _claim(claims: Mapping[str, Any], path: str) -> Any:
    """A claim by name, or by a dotted path into nested objects (realm_access.roles)."""
    if path in claims:
        return claims[path]
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def looks_like_token(presented: bytes) -> bool:
    """A compact JWS (three base64url parts, a JSON header): never an ``hk-`` key."""
    return presented[:2] == b"ey" and presented.count(b".") == 2


class Identity:
    """The identity provider as a worker checks tokens against it."""

    def __init__(self, config: IdentityConfig) -> None:
        self.config = config
        self._keys: dict[str | None, tuple[Any, str]] = {}
        self._lock = threading.Lock()
        self._read_at = 0.0
        self._asked_at = 0.0
        """When an unknown key id last had the key set read again."""
        self._wanted = False
        self._verified: OrderedDict[bytes, Claims] = OrderedDict()
        self._members: dict[tuple[str, str | None], NamedKey] = {}
        self._members_of: Keyring | None = None

    # -- the key set ------------------------------------------------------------------------

    def load(self, now: float | None = None) -> None:
        """Read the key set (blocking); the keys in use stay when it fails."""
        source = self.config.jwks
        now = time.time() if now is None else now
        self._read_at = now
        self._wanted = False
        keys = parse_key_set(_read(source), source)
        with self._lock:
            if keys.keys() != self._keys.keys() or any(
                keys[k][0] != self._keys[k][0] for k in keys
            ):
                self._verified.clear()
            self._keys = keys

    def refresh(self, now: float) -> None:
        """On the store's refresh tick: read the key set when it is due, or when a token
        asked for a key it lacks (at most once per `REFETCH_INTERVAL`)."""
        due = now - self._read_at >= self.config.jwks_refresh
        # Without any key (the provider was away): again after a fetch's timeout.
        missing = not self._keys and now - self._read_at >= FETCH_TIMEOUT
        if not (due or self._wanted or missing):
            return
        try:
            self.load(now)
        except IdentityError as exc:
            log.warning("%s (the keys read before stay in use)", exc)

    # -- a token ----------------------------------------------------------------------------

    def verify(self, token: bytes, now: float) -> Claims:
        """The claims of a token signed by the provider, for this proxy, unexpired; a 401
        naming why it is refused (503 while the key set is read again for it)."""
        cached = self._verified.get(token)
        if cached is not None and now < cached.expires + self.config.leeway:
            return cached
        if len(token) > MAX_TOKEN_BYTES:
            raise unauthorized(f"the token is over {MAX_TOKEN_BYTES} bytes")
        import jwt

        text = token.decode("ascii", "replace")
        try:
            header = jwt.get_unverified_header(text)
        except jwt.DecodeError as exc:
            raise unauthorized(f"not a readable token: {exc}") from None
        kid = header.get("kid")
        found = self._key(kid if isinstance(kid, str) else None, now)
        key, algorithm = found
        if header.get("alg") != algorithm:
            raise unauthorized(
                f"the token's algorithm {header.get('alg')!r} is not its key's ({algorithm}); "
                f"accepted: {', '.join(ALGORITHMS.values())}"
            )
        config = self.config
        try:
            claims = jwt.decode(
                text,
                key,
                algorithms=[algorithm],
                audience=config.audience,
                issuer=config.issuer,
                leeway=config.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise unauthorized("the token has expired: sign in again") from None
        except jwt.InvalidAudienceError:
            raise unauthorized(
                f"the token is not for this proxy (audience {config.audience!r})"
            ) from None
        except jwt.InvalidIssuerError:
            raise unauthorized(f"the token was not issued by {config.issuer!r}") from None
        except jwt.InvalidSignatureError:
            raise unauthorized("the token's signature does not verify") from None
        except jwt.PyJWTError as exc:
            raise unauthorized(f"the token is refused: {exc}") from None
        verified = self._claims(claims)
        with self._lock:
            self._verified[token] = verified
            while len(self._verified) > CACHE_SIZE:
                self._verified.popitem(last=False)
        return verified

    def _key(self, kid: str | None, now: float) -> tuple[Any, str]:
        keys = self._keys
        found = keys.get(kid) if kid is not None or len(keys) != 1 else next(iter(keys.values()))
        if found is not None:
            return found
        if self._wanted or not keys:  # a read is coming (or the first has not succeeded)
            raise KeysPending()
        if now - self._asked_at >= REFETCH_INTERVAL:
            self._asked_at = now
            if self.config.is_url:  # fetched on the next tick, off the event loop
                self._wanted = True
                raise KeysPending()
            try:  # a local file: read now
                self.load(now)
            except IdentityError as exc:
                log.warning("%s (the keys read before stay in use)", exc)
            found = self._keys.get(kid)
            if found is not None:
                return found
        raise unauthorized(
            f"the token is signed by key {kid!r}, which the identity provider does not list"
        )

    def _claims(self, claims: Mapping[str, Any]) -> Claims:
        from .manage import KeyChangeError, check_name

        config = self.config
        member = _claim(claims, config.member_claim)
        team = _claim(claims, config.team_claim) if config.team_claim else None
        for what, value in (("member", member), ("team", team)):
            if value is None and what == "team":
                continue
            claim = config.member_claim if what == "member" else config.team_claim
            if not isinstance(value, str):
                raise unauthorized(f"the token's claim {claim!r} (the {what}) is not a name")
            try:
                check_name(value, what)
            except KeyChangeError as exc:
                raise unauthorized(f"the token's claim {claim!r}: {exc}") from None
        admin = False
        if config.admin_claim is not None:
            granted = _claim(claims, config.admin_claim)
            admin = granted == config.admin_value or (
                isinstance(granted, list) and config.admin_value in granted
            )
        return Claims(member, team, admin, float(claims["exp"]))

    # -- a member ---------------------------------------------------------------------------

    def member(self, claims: Claims, keyring: Keyring) -> tuple[NamedKey, Team | None]:
        """The key record a token's member is counted as, and its team."""
        key = keyring.by_name.get(claims.member)
        if key is None:
            key = self._unrecorded(claims, keyring)
        team = keyring.teams.get(key.team) if key.team is not None else None
        return key, team

    def _unrecorded(self, claims: Claims, keyring: Keyring) -> NamedKey:
        """A member without a record of its own: its team's limits. The same object for
        every request until the keys change (the checks remember subjects by identity)."""
        config = self.config
        if claims.team is None:
            why = (
                f"the token names no team (claim {config.team_claim!r})"
                if config.team_claim
                else "the proxy reads no team from tokens ([identity] team_claim)"
            )
            raise ProxyError(
                403,
                f"hydra-proxy: member {claims.member!r} has no key record and {why}; ask the "
                "proxy's admin to add one",
                error_type="permission_error",
            )
        if claims.team not in keyring.teams:
            raise ProxyError(
                403,
                f"hydra-proxy: team {claims.team!r} has no record in the key store, so its "
                "members have no limits; ask the proxy's admin to set them "
                f"(hydra-proxy keys team {claims.team} ...)",
                error_type="permission_error",
            )
        with self._lock:
            if self._members_of is not keyring or len(self._members) > CACHE_SIZE:
                self._members, self._members_of = {}, keyring
            slot = (claims.member, claims.team)
            key = self._members.get(slot)
            if key is None:
                key = self._members[slot] = NamedKey(
                    name=claims.member, secret_hash="", created=0.0, team=claims.team
                )
        return key
