"""Key pools: several keys for one provider, rotated round-robin, rested after failures.

A request that names its client's session keeps the key its session had, until that key
rests (provider state lives per key or account: prompt caches, Responses reasoning items
another account cannot decrypt). A session's first key, and the one it moves to, is the
ready key its id ranks first (highest-random-weight hashing), so every worker process
picks the same one; the pool remembers the last `MAX_SESSIONS` sessions.

Pure and clock-injected (``now`` is any monotonic clock in seconds): the server keeps one
pool per provider per worker process and calls ``acquire`` before each attempt and
``report`` after it. A key never appears in a repr or a log line: `Key.masked` does.

A rest follows its cause, so one client's request cannot take the pool down:

- the key is rejected (HTTP 401, or an error body of the provider's authentication type,
  such as Gemini's 400 ``API_KEY_INVALID``): ``AUTH_COOLDOWN``, retried now and then;
- a 429 with a retry hint (``retry-after``, Gemini's RetryInfo): that long, bounded; one
  without: a short backoff that grows with each 429 in a row (``BACKOFF_FIRST`` doubling
  up to ``BACKOFF_MAX``), never an invented long pause that would stall every request;
- a 403 or 404 about a model or a request ("You do not have access to model X"): no rest.
  The key serves every other request as before; this one gets the upstream's answer;
- anything else (an upstream fault, a connect error): no rest.
"""

from __future__ import annotations

import email.utils
import hashlib
import logging
import math
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from ..gemini.errors import AUTH_REASONS
from ..upstream_errors import ErrorBody, read_error_body
from .providers import Provider

log = logging.getLogger("hydra_proxy.keys")

# Rest after a 429: the upstream's retry-after, bounded.
MIN_RATE_LIMIT_COOLDOWN = 1.0
MAX_RATE_LIMIT_COOLDOWN = 600.0
# A 429 without a retry hint: this first, doubled for each further one in a row, at most
# BACKOFF_MAX; a success starts it over.
BACKOFF_FIRST = 1.0
BACKOFF_MAX = 32.0
# Rest of a rejected key (401, an authentication error): likely revoked; retried now and
# then.
AUTH_COOLDOWN = 3600.0
# Sessions a pool remembers the key of (the least recently used are forgotten).
MAX_SESSIONS = 4096
# Error types and codes by which providers say "this key", whatever the status.
_AUTH_KINDS = frozenset(
    {
        "authentication_error",
        "invalid_api_key",
        "unauthenticated",
        "UNAUTHENTICATED",
        "invalid_authentication",
    }
)


def mask(key: str) -> str:
    """An id a user can recognise a key by: ``sk-…abcd`` (never more than 4 characters of
    the secret; short keys show none)."""
    if len(key) < 12:
        return "…"
    prefix = key.split("-", 1)[0] + "-" if "-" in key[:6] else ""
    return f"{prefix}…{key[-4:]}"


@dataclass(frozen=True)
class Key:
    """One key of a pool: the variable it came from, its masked id, the secret."""

    index: int
    env: str
    value: str = field(repr=False)

    @property
    def masked(self) -> str:
        return mask(self.value)

    def __str__(self) -> str:
        return f"{self.env} ({self.masked})"


def parse_retry_after(value: str | float | None, now_wall: float | None = None) -> float | None:
    """Seconds from a retry-after value (delta-seconds or an HTTP date); None if absent
    or unreadable."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            date = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        wall = time.time() if now_wall is None else now_wall
        return max(date.timestamp() - wall, 0.0)
    return seconds if math.isfinite(seconds) else None


@dataclass
class _State:
    ready_at: float = 0.0
    auth_failed: bool = False
    rate_limits: int = 0  # 429s without a retry hint in a row (the backoff's exponent)


def _rank(session: str, key: Key) -> bytes:
    """How a session ranks a key (highest-random-weight hashing over the key's variable
    name, never its secret): sessions spread evenly over the keys."""
    return hashlib.sha256(f"{session}\0{key.env}\0{key.index}".encode()).digest()


def rejects_key(status: int | None, body: ErrorBody | bytes = b"") -> bool:
    """Whether an upstream error says the key itself is bad (not the model or request);
    `body` as read once by the caller, or its bytes."""
    if status == 401:
        return True
    if status is None or not body or status not in (400, 403):
        return False
    read = body if isinstance(body, ErrorBody) else read_error_body(body[:65536])
    return bool(read.kind in _AUTH_KINDS or read.code in _AUTH_KINDS or read.reasons & AUTH_REASONS)


class KeyPool:
    """Round-robin over the keys that are not resting."""

    def __init__(self, provider: str, keys: list[Key]) -> None:
        self.provider = provider
        self.keys = tuple(keys)
        self._state = [_State() for _ in keys]
        self._next = 0
        self._sessions: OrderedDict[str, int] = OrderedDict()

    @classmethod
    def for_provider(cls, provider: Provider) -> KeyPool:
        """The pool of every key the provider's variables hold (empty: keyless or unset)."""
        keys = [Key(i, var, value) for i, (var, value) in enumerate(provider.api_keys())]
        return cls(provider.name, keys)

    def __len__(self) -> int:
        return len(self.keys)

    def __repr__(self) -> str:
        return f"KeyPool({self.provider!r}, {[k.masked for k in self.keys]})"

    def acquire(self, now: float, session: str | None = None) -> Key | None:
        """The next ready key in turn, or the key `session` had while it is ready; None
        when the pool is empty or every key rests (then `soonest` says which key is ready
        first and when)."""
        if session is not None:
            return self._session_key(now, session)
        count = len(self.keys)
        for step in range(count):
            i = (self._next + step) % count
            if self._state[i].ready_at <= now:
                self._next = (i + 1) % count
                return self.keys[i]
        return None

    def _session_key(self, now: float, session: str) -> Key | None:
        """The session's key while it is ready; else the ready key its session id ranks
        first (the same in every worker process, which share no memory), kept from now on."""
        kept = self._sessions.get(session)
        if kept is not None and self._state[kept].ready_at <= now:
            self._sessions.move_to_end(session)
            return self.keys[kept]
        ready = [i for i in range(len(self.keys)) if self._state[i].ready_at <= now]
        if not ready:
            return None
        i = max(ready, key=lambda j: _rank(session, self.keys[j]))
        self._sessions[session] = i
        self._sessions.move_to_end(session)
        if len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return self.keys[i]

    def soonest(self, now: float) -> tuple[Key, float] | None:
        """The key that is ready first and the seconds until then (None: empty pool). The
        caller decides: wait that long, try the next provider, or answer 429 with
        ``retry-after`` of that many seconds."""
        if not self.keys:
            return None
        i = min(range(len(self.keys)), key=lambda j: self._state[j].ready_at)
        return self.keys[i], max(self._state[i].ready_at - now, 0.0)

    def learn(self, key: Key, seconds: float, now: float) -> None:
        """Rest `key` for `seconds` from `now` as another worker learnt (a later end wins)."""
        state = self._state[key.index]
        state.ready_at = max(state.ready_at, now + seconds)

    def report(
        self,
        key: Key,
        status: int | None,
        retry_after: str | float | None,
        now: float,
        body: ErrorBody | bytes = b"",
    ) -> float:
        """Record how an attempt with `key` went (`status`: the upstream's HTTP status,
        None for a connect error; `body`: its error body, which may say the key is bad).
        Returns the seconds the key now rests (0: none)."""
        state = self._state[key.index]
        if status is not None and 200 <= status < 300:
            if state.auth_failed:
                log.info("%s key %s works again", self.provider, key)
            state.ready_at = 0.0
            state.auth_failed = False
            state.rate_limits = 0
            return 0.0
        if status == 429:
            seconds = parse_retry_after(retry_after)
            if seconds is None:
                seconds = min(BACKOFF_FIRST * 2.0 ** min(state.rate_limits, 16), BACKOFF_MAX)
                state.rate_limits += 1
            else:
                state.rate_limits = 0
            seconds = min(max(seconds, MIN_RATE_LIMIT_COOLDOWN), MAX_RATE_LIMIT_COOLDOWN)
        elif rejects_key(status, body):
            seconds = AUTH_COOLDOWN
            if not state.auth_failed:  # once per key, until it works again
                log.warning(
                    "%s rejected key %s with HTTP %d: resting it for %d s (check the key)",
                    self.provider,
                    key,
                    status,
                    AUTH_COOLDOWN,
                )
            state.auth_failed = True
        else:
            # A model or request the account may not use (403/404), an upstream fault:
            # not the key's, which keeps serving every other request.
            return 0.0
        state.ready_at = max(state.ready_at, now + seconds)
        self._rested(key, seconds)
        return seconds

    def _rested(self, key: Key, seconds: float) -> None:
        """`report` made `key` rest for `seconds` (a shared pool tells the other workers)."""


def key_pools(providers: dict[str, Provider]) -> dict[str, KeyPool]:
    """One pool per provider (create per worker process; pools hold mutable state)."""
    return {name: KeyPool.for_provider(p) for name, p in providers.items()}
