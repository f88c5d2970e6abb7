"""What a worker holds for named keys (`TeamKeys`): the keyring, the checks, the store, and
the task that keeps the keyring current.

A worker starts it after its fork (`start`), when the store holds keys or an admin key is
set; otherwise there is none, and a request pays nothing for the feature. The keyring is
reloaded when the store's version moves (polled every `refresh` seconds, in a thread), and
at once after a change made through this worker's admin API: a key revoked there is refused
on the next request. `last_used` is written back on the same tick.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..counters import Counters, LocalCounters
from ..errors import ProxyError
from ..usage.pricing import PriceTable, default_table
from ..usage.record import Tokens
from . import alerts, refusals
from .alerts import AlertWatch, Watched
from .checks import Checks, Pass
from .identity import Identity, IdentityConfig, IdentityError, looks_like_token
from .keyring import Keyring
from .period import utc_text
from .record import NamedKey, Team
from .store import KeyStore, open_key_store, sqlite_path, store_exists

if TYPE_CHECKING:
    from ..config.settings import Settings

log = logging.getLogger("hydra_proxy.keys")

ADMIN_KEY_ENV = "HYDRA_ADMIN_KEY"
UNPRICED_ENV = "HYDRA_KEYS_UNPRICED"
REFRESH_ENV = "HYDRA_KEYS_REFRESH"
# A failed admin authentication is answered after this long, one at a time per worker:
# at most one guess a second, and no request but the guesses waits.
ADMIN_FAILURE_DELAY = 1.0
WINDOW_ENV = "HYDRA_KEYS_RATE_WINDOW"
UNPRICED_MODES = ("refuse", "allow")
ADMIN_KEY_ACTOR = "admin-key"
"""Who the audit log names for a change made with HYDRA_ADMIN_KEY."""


@dataclass(frozen=True)
class Member:
    """The named key a request presented, and its team's limits."""

    key: NamedKey
    team: Team | None


class TeamKeys:
    def __init__(
        self,
        store: KeyStore,
        keyring: Keyring,
        checks: Checks,
        *,
        admin_key: bytes | None,
        refresh: float = 1.0,
        identity: Identity | None = None,
        alert_watch: AlertWatch | None = None,
    ) -> None:
        self.store = store
        self.identity = identity
        """The identity provider whose tokens name members too (None: keys only)."""
        self.keyring = keyring
        self.checks = checks
        self.admin_key = admin_key
        self.refresh = refresh
        self.alerts = alert_watch
        self.used: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None
        self._admin_failures = asyncio.Lock()

    # -- a request -------------------------------------------------------------------------

    def recognizes(self, presented: bytes) -> bool:
        """Whether `presented` is a member's credential: a named key, or a token of the
        identity provider (checked by `authenticate`)."""
        return presented[:3] == b"hk-" or (
            self.identity is not None and looks_like_token(presented)
        )

    def authenticate(self, presented: bytes, now: float) -> Member:
        """The member a named key (or an identity token) belongs to; a 401 naming why it
        is refused."""
        if self.identity is not None and presented[:3] != b"hk-":
            claims = self.identity.verify(presented, now)
            key, team = self.identity.member(claims, self.keyring)
            require_usable(key, now)
            self.used[key.name] = now
            return Member(key, team)
        found = self.keyring.find(presented)
        if found is None:
            raise refusals.unauthorized("unknown key (no key with this secret exists)")
        key = found.key
        require_usable(key, now)
        if found.previous and (key.previous_until is None or key.previous_until <= now):
            until = utc_text(key.previous_until or 0)
            raise refusals.unauthorized(
                f"key {key.name!r} was rotated: this secret stopped working at {until}"
            )
        self.used[key.name] = now
        team = self.keyring.teams.get(key.team) if key.team is not None else None
        return Member(key, team)

    @property
    def has_admins(self) -> bool:
        """An admin key is set, or identity tokens can make admins."""
        return self.admin_key is not None or (
            self.identity is not None and self.identity.config.admin_claim is not None
        )

    def admin_actor(self, presented: bytes | None) -> str | None:
        """Who an admin credential is, as the audit log names them (None: no admin's)."""
        if presented is None:
            return None
        if self.admin_key is not None and hmac.compare_digest(presented, self.admin_key):
            return ADMIN_KEY_ACTOR
        if self.identity is not None and looks_like_token(presented):
            try:
                claims = self.identity.verify(presented, time.time())
            except ProxyError:
                return None
            return f"jwt:{claims.member}" if claims.admin else None
        return None

    def is_admin(self, presented: bytes | None) -> bool:
        return self.admin_actor(presented) is not None

    async def admin_refused(self) -> None:
        """Wait out a failed admin authentication before it is answered: the failures of
        this worker pass one at a time, ADMIN_FAILURE_DELAY apart (an asyncio sleep: the
        worker's other requests go on)."""
        async with self._admin_failures:
            await asyncio.sleep(ADMIN_FAILURE_DELAY)

    async def settle(self, held: Pass, model: str | None, tokens: Tokens | None) -> None:
        """The request ended: its reservations become what its record costs."""
        if tokens is None:
            tokens = Tokens()
        cost = 0.0
        if model is not None and tokens.total:
            cost = self.checks.prices.cost(model, tokens) or 0.0
        try:
            await held.settle(cost, tokens.total, time.time())
        except Exception:  # a store away must not fail the request's end (it has ended)
            log.exception("settling key %r failed", held.holder)
        if self.alerts is not None and self.alerts.alerts and held.budgets:
            self.alerts.touched(self._watched(held))  # looked at later, off this request

    def _watched(self, held: Pass) -> list[Watched]:
        found = []
        for s in held.subjects:
            if s.limits.budget_usd is not None:
                kind, _, name = s.counter.partition(":")
                key = self.keyring.by_name.get(name) if kind == "key" else None
                team = key.team if key is not None else None
                found.append(Watched(s.counter, s.limits.budget_usd, s.limits.period, team))
        return found

    # -- the keyring -----------------------------------------------------------------------

    def reload(self) -> None:
        """Read the keys again (blocking: from a thread)."""
        version = self.store.version()
        self.keyring = Keyring(self.store.keys(), self.store.teams(), version)
        if self.alerts is not None:
            self.alerts.configure(alerts.load(self.store))

    def _tick(self) -> None:
        used, self.used = self.used, {}
        try:
            if self.identity is not None:
                self.identity.refresh(time.time())
            self.store.touch(used)
            if self.store.version() != self.keyring.version:
                self.reload()
        except Exception as exc:  # the store away: the keys in memory keep serving
            log.warning("key store refresh failed: %s", exc)

    async def _refresh(self) -> None:
        while True:
            await asyncio.sleep(self.refresh)
            await asyncio.to_thread(self._tick)

    def start_refresh(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._refresh())
        if self.alerts is not None:
            self.alerts.start()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if self.alerts is not None:
            await self.alerts.close()
        await asyncio.to_thread(self._tick)
        self.store.close()


def require_usable(key: NamedKey, now: float) -> None:
    """A 401 when the key's record is revoked or expired."""
    if key.revoked is not None:
        raise refusals.unauthorized(f"key {key.name!r} was revoked at {utc_text(key.revoked)}")
    if key.expires is not None and key.expires <= now:
        raise refusals.unauthorized(f"key {key.name!r} expired at {utc_text(key.expires)}")


def refresh_interval(environ: Mapping[str, str]) -> float:
    """Seconds between looks at the key store (and at the live config's version)."""
    return float(environ.get(REFRESH_ENV, "1") or 1)


def admin_key(environ: Mapping[str, str]) -> bytes | None:
    value = environ.get(ADMIN_KEY_ENV, "").strip()
    return value.encode() if value else None


def allow_unpriced(environ: Mapping[str, str]) -> bool:
    mode = environ.get(UNPRICED_ENV, "refuse").strip().lower()
    if mode not in UNPRICED_MODES:
        raise ValueError(f"{UNPRICED_ENV}={mode}: use one of {', '.join(UNPRICED_MODES)}")
    return mode == "allow"


def store_place(ledger_url: str | None) -> str:
    """Where the named keys are kept, for a log line (a PostgreSQL URL without its
    credentials)."""
    url = ledger_url or ""
    if url.startswith(("postgresql://", "postgres://")):
        return url.split("://", 1)[0] + "://" + url.rsplit("@", 1)[-1].split("://")[-1]
    return str(sqlite_path(url))


def count_keys(ledger_url: str | None) -> int:
    """The named keys in the store (0: none, or a store that cannot be read)."""
    if not store_exists(ledger_url):
        return 0
    store = open_key_store(ledger_url)
    try:
        return len(store.keys())
    except Exception:
        return 0
    finally:
        store.close()


def key_mode(settings: Settings, environ: Mapping[str, str]) -> str:
    """Which keys a request needs, and why: the first thing a serving proxy logs."""
    from ..config.loading import PROXY_KEYS_ENV

    if settings.key_passthrough:
        return "key passthrough: each client sends its own provider key upstream"
    where = store_place(settings.usage_ledger)
    ledger_off = (
        "; HYDRA_USAGE_LEDGER=off turns off usage records, not these keys"
        if settings.usage_ledger is None
        else ""
    )
    proxy_keys = [k for k in environ.get(PROXY_KEYS_ENV, "").split(",") if k.strip()]
    named = count_keys(settings.usage_ledger)
    refresh = environ.get(REFRESH_ENV, "1") or "1"
    if named:
        extra = f", and {len(proxy_keys)} {PROXY_KEYS_ENV}" if proxy_keys else ""
        return f"named keys: {named} in {where}{extra}; every request needs a key{ledger_off}"
    if admin_key(environ) is not None:
        return f"named keys: none yet in {where}, {ADMIN_KEY_ENV} is set; every request needs a key"
    if proxy_keys:
        return f"proxy keys: {len(proxy_keys)} in {PROXY_KEYS_ENV}; every request needs one"
    return (
        f"no keys: any client on {settings.host} is served; the first named key created in "
        f"{where} turns keys on within {refresh} s"
    )


def configured(settings: Settings, environ: Mapping[str, str]) -> bool:
    """Whether workers will require named keys: an admin key is set, or the store holds a
    key (a store that cannot be read holds none: its workers would say so at start)."""
    if admin_key(environ) is not None or IdentityConfig.of(settings.identity) is not None:
        return True
    if not store_exists(settings.usage_ledger):
        return False
    store = open_key_store(settings.usage_ledger)
    try:
        return bool(store.keys())
    except Exception:
        return False
    finally:
        store.close()


def start(
    settings: Settings,
    prices: PriceTable | None,
    counters: Counters | None = None,
    environ: Mapping[str, str] = os.environ,
) -> TeamKeys | None:
    """The worker's named keys (None: the store holds none, no admin key is set and no
    identity provider)."""
    admin = admin_key(environ)
    identity_config = IdentityConfig.of(settings.identity)
    wanted = admin is not None or identity_config is not None
    if not wanted and not store_exists(settings.usage_ledger):
        return None
    store = open_key_store(settings.usage_ledger)
    keys = store.keys()
    if not wanted and not keys:
        store.close()
        return None
    identity = None
    if identity_config is not None:
        identity = Identity(identity_config)
        try:
            identity.load()
        except IdentityError as exc:  # tokens wait (503) while the tick tries again
            log.warning("%s: identity tokens are refused until it can be read", exc)
    if prices is None:
        prices = default_table()
        if settings.pricing:
            prices = prices.with_overrides(settings.pricing)

    ledger_on = settings.usage_ledger is not None

    async def seed(column: str, name: str, since: float) -> float:
        if not ledger_on:  # no ledger: what this worker counts since it started
            return 0.0
        spent, _ = await asyncio.to_thread(store.spent, column, name, since)
        return spent

    checks = Checks(
        counters if counters is not None else LocalCounters(),
        prices,
        seed,
        allow_unpriced=allow_unpriced(environ),
        window=float(environ.get(WINDOW_ENV, "60") or 60),
    )
    keyring = Keyring(keys, store.teams(), store.version())
    refresh = refresh_interval(environ)
    counters_in_use = checks.counters

    async def counter_spent(name: str) -> float:
        return (await counters_in_use.spent(name))[0]

    watch = AlertWatch(store, counter_spent, ledger_on=ledger_on, environ=environ)
    watch.configure(alerts.load(store))
    return TeamKeys(
        store, keyring, checks, admin_key=admin, refresh=refresh, identity=identity,
        alert_watch=watch,
    )  # fmt: skip
