"""The changes to keys, shared by ``hydra-proxy keys`` and ``/admin/keys``: create, set,
revoke, rotate, set a team's limits or a spend alert, and the listing with each key's spend
this period."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from ..usage.report import utc_timestamp
from . import alerts, audit
from .period import PERIODS, bounds, utc_text
from .record import NamedKey, Team
from .secret import new_secret, secret_hash
from .store import KeyStore

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
DEFAULT_GRACE = 24 * 3600.0


class KeyChangeError(ValueError):
    """A change that cannot be made: what is wrong, said to the user."""


class NoSuchKey(KeyChangeError):
    pass


def check_name(name: str, what: str = "key") -> str:
    if not NAME.fullmatch(name):  # whole: "$" would let a trailing newline through
        raise KeyChangeError(
            f"{what} name {name!r}: 1-64 letters, digits, '.', '_', '@' or '-', "
            "starting with a letter or digit"
        )
    return name


def parse_expires(text: str | None) -> float | None:
    """An ISO date or time (UTC when it names no zone); "" or "never": no expiry."""
    if text is None or text.strip().lower() in ("", "never", "none"):
        return None
    try:
        return utc_timestamp(text)
    except ValueError:
        raise KeyChangeError(
            f"expires {text!r}: use a date like 2027-01-31 or 2027-01-31T12:00"
        ) from None


def parse_models(text: str | list[str] | None) -> tuple[str, ...]:
    items = text.split(",") if isinstance(text, str) else list(text or ())
    return tuple(m.strip() for m in items if m and m.strip())


def _positive(name: str, value: Any, kind: type) -> Any:
    if value is None:
        return None
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise KeyChangeError(f"{name} {value!r}: not a number") from None
    if number < 0 or (kind is int and number == 0):
        raise KeyChangeError(f"{name} {value!r}: must be above 0")
    return number


def _period(value: str | None) -> str:
    period = value or "month"
    if period not in PERIODS:
        raise KeyChangeError(f"period {period!r}: use one of {', '.join(PERIODS)}")
    return period


ACTIONS = (
    "key.create", "key.set", "key.revoke", "key.rotate", "team.set", "alert.set", "alert.remove",
)  # fmt: skip
"""Every change made here, as the audit log names it."""

CHANGES = ("team", "budget", "period", "rpm", "tpm", "streams", "models", "expires")
"""What `set` may change ("" or "none" clears a limit)."""


def _cleared(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() in ("", "none")


def create(store: KeyStore, name: str, now: float, **options: Any) -> tuple[NamedKey, str]:
    """A new key and its secret (the only time the secret exists outside its hash)."""
    check_name(name)
    secret = new_secret()
    key = apply(NamedKey(name=name, secret_hash=secret_hash(secret), created=now), options)
    with store.transaction():
        if store.key(name) is not None:
            raise KeyChangeError(f"a key named {name!r} exists already (rotate it, or revoke it)")
        store.add(key)
        audit.record(store, "key.create", subject(key), None, key.public(), now)
    return key, secret


def apply(key: NamedKey, options: dict[str, Any]) -> NamedKey:
    """`key` with the given changes (None: unchanged)."""
    unknown = set(options) - set(CHANGES)
    if unknown:
        raise KeyChangeError(f"unknown settings: {', '.join(sorted(unknown))}")
    limits = key.limits
    changes: dict[str, Any] = {}
    lim: dict[str, Any] = {}
    for option, value in options.items():
        if value is None:
            continue
        clear = _cleared(value)
        if option == "team":
            changes["team"] = None if clear else check_name(str(value), "team")
        elif option == "budget":
            lim["budget_usd"] = None if clear else _positive("budget", value, float)
        elif option == "period":
            lim["period"] = _period(str(value))
        elif option in ("rpm", "tpm"):
            lim[option] = None if clear else _positive(option, value, int)
        elif option == "streams":
            changes["streams"] = None if clear else _positive("streams", value, int)
        elif option == "models":
            changes["models"] = () if clear else parse_models(value)
        elif option == "expires":
            changes["expires"] = parse_expires(None if clear else str(value))
    return dataclasses.replace(key, limits=dataclasses.replace(limits, **lim), **changes)


def existing(store: KeyStore, name: str) -> NamedKey:
    key = store.key(name)
    if key is None:
        raise NoSuchKey(f"no key named {name!r}")
    return key


def subject(key: NamedKey) -> str:
    """What the audit log calls a key."""
    return f"key:{key.name}"


def update(store: KeyStore, name: str, **options: Any) -> NamedKey:
    with store.transaction():
        before = existing(store, name)
        key = apply(before, options)
        if key != before:
            store.replace(key)
            audit.record(store, "key.set", subject(key), before.public(), key.public())
    return key


def revoke(store: KeyStore, name: str, now: float) -> NamedKey:
    with store.transaction():
        key = before = existing(store, name)
        if key.revoked is None:
            key = dataclasses.replace(key, revoked=now)
            store.replace(key)
            audit.record(store, "key.revoke", subject(key), before.public(), key.public(), now)
    return key


def rotate(
    store: KeyStore, name: str, now: float, grace: float = DEFAULT_GRACE
) -> tuple[NamedKey, str]:
    """A new secret; the current one keeps working for `grace` seconds."""
    secret = new_secret()
    with store.transaction():
        before = existing(store, name)
        if before.revoked is not None:
            raise KeyChangeError(f"key {name!r} is revoked: create a new one")
        key = dataclasses.replace(
            before,
            secret_hash=secret_hash(secret),
            previous_hash=before.secret_hash if grace > 0 else None,
            previous_until=now + grace if grace > 0 else None,
        )
        store.replace(key)
        audit.record(store, "key.rotate", subject(key), before.public(), key.public(), now)
    return key, secret


def set_team(store: KeyStore, name: str, **options: Any) -> Team:
    check_name(name, "team")
    with store.transaction():
        current = next((t for t in store.teams() if t.name == name), None)
        limits = current.limits if current is not None else Team(name).limits
        probe = apply(NamedKey("team", "", 0.0, limits=limits), options)
        team = Team(name, probe.limits)
        if team != current:
            store.set_team(team)
            before = None if current is None else current.public()
            audit.record(store, "team.set", f"team:{name}", before, team.public())
    return team


def set_alert(
    store: KeyStore,
    kind: str,
    name: str,
    thresholds: Any = None,
    webhook: Any = None,
    format: Any = None,
) -> dict[str, Any]:
    """A key's or a team's spend alert (no thresholds: none; no webhook: the one it has);
    the alert as listed."""
    if kind == "key":
        existing(store, name)
    elif not any(t.name == name for t in store.teams()):
        check_name(name, "team")
        members = store.keys()
        if not any(k.team == name for k in members):
            raise NoSuchKey(f"no team named {name!r}")
    subject_name = alerts.subject(kind, name)
    with store.transaction():
        before = alerts.load(store).get(subject_name)
        shown = before.public() if before is not None else None
        if thresholds is None:
            removed = alerts.remove(store, subject_name)
            if removed:
                audit.record(store, "alert.remove", subject_name, shown, None)
            return {"kind": kind, "name": name, "alert": None, "removed": removed}
        if webhook is None:  # the one set before (listings never show it whole)
            webhook = before.webhook if before is not None else None
        alert = alerts.make(kind, name, thresholds, webhook, format)
        if alert != before:
            alerts.save(store, alert)
            # The webhook by its host only, as listings show it: a Slack URL is a secret.
            audit.record(store, "alert.set", subject_name, shown, alert.public())
    return {"kind": kind, "name": name, "alert": alert.public()}


def state(key: NamedKey, now: float) -> str:
    if key.revoked is not None:
        return "revoked"
    if key.expires is not None and key.expires <= now:
        return "expired"
    return "active"


def listing(store: KeyStore, now: float, name: str | None = None) -> dict[str, Any]:
    """Every key (or one) with its spend this period, and every team with its spend."""
    keys = [existing(store, name)] if name is not None else store.keys()
    set_alerts = alerts.load(store)
    out_keys = []
    for key in keys:
        start, end = bounds(key.limits.period, now)
        spent, unpriced = store.spent("key_name", key.name, start)
        doc = key.public()
        alert = set_alerts.get(alerts.subject("key", key.name))
        refused = store.refused("key_name", key.name, start)
        doc.update(state=state(key, now), spent_usd=round(spent, 6), unpriced_requests=unpriced,
                   refused_requests=refused, period_resets=utc_text(end),
                   alert=alert and alert.public())  # fmt: skip
        out_keys.append(doc)
    teams = []
    for team in store.teams() if name is None else ():
        start, end = bounds(team.limits.period, now)
        spent, unpriced = store.spent("team", team.name, start)
        alert = set_alerts.get(alerts.subject("team", team.name))
        teams.append({**team.public(), "spent_usd": round(spent, 6),
                      "unpriced_requests": unpriced, "period_resets": utc_text(end),
                      "alert": alert and alert.public()})  # fmt: skip
    return {"keys": out_keys, "teams": teams}
