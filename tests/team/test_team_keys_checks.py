"""The checks of named keys in process, on a clock the test moves (`LocalCounters`): the
sliding rpm and tpm windows exact at their bounds and their retry-after, budgets that
reset at the UTC period's end, reservations released on refusal, unpriced models refused or
admitted by the setting (never counted as free), model rights over a fallback chain, and
the key store on SQLite and PostgreSQL (secrets stored as hashes only, versions, spend
read from the ledger's rows)."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from hydra_proxy.config.providers import Provider
from hydra_proxy.config.routes import Attempt, RequestTraits, Route, RouteDecision, RouteOptions
from hydra_proxy.counters import LocalCounters
from hydra_proxy.errors import ProxyError
from hydra_proxy.team import manage
from hydra_proxy.team.checks import Checks, Pass
from hydra_proxy.team.period import bounds
from hydra_proxy.team.record import Limits, NamedKey, Team
from hydra_proxy.team.secret import secret_hash
from hydra_proxy.team.store import open_key_store
from hydra_proxy.usage.backends import open_ledger
from hydra_proxy.usage.pricing import default_table, usd
from hydra_proxy.usage.record import UsageRecord
from support.postgres_server import postgres_server, wait_ready, why_unavailable

PRICES = default_table().with_overrides(
    {
        "priced-a": {"input": 10_000, "output": 20_000},
        "priced-b": {"input": 20_000, "output": 40_000},
    }
)
_holders = itertools.count()
T0 = datetime(2026, 12, 31, 23, 59, 0, tzinfo=timezone.utc).timestamp()


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def decision(*models: str) -> RouteDecision:
    provider = Provider("a", "chat", "http://upstream.invalid/v1")
    attempts = tuple(Attempt(provider, m, RouteOptions()) for m in models)
    return RouteDecision(Route("priced-*", "a"), 0, attempts, "priced-x")


def traits(max_tokens: int = 10, input_tokens: int = 8) -> RequestTraits:
    return RequestTraits("priced-x", max_tokens=max_tokens, estimate=lambda: input_tokens)


def make(clock: Clock, seeded: float = 0.0, *, allow_unpriced: bool = False) -> Checks:
    async def seed(column: str, name: str, since: float) -> float:
        return seeded

    return Checks(LocalCounters(clock), PRICES, seed, allow_unpriced=allow_unpriced)


def key(**limits: Any) -> NamedKey:
    return NamedKey("alice", "h", 0.0, limits=Limits(**limits))


def admit(checks: Checks, k: NamedKey, clock: Clock, team: Team | None = None,
          d: RouteDecision | None = None, t: RequestTraits | None = None) -> Pass:  # fmt: skip
    holder = f"req{next(_holders)}"  # unique per request, as request ids are
    held = checks.admit(k, team, d or decision("priced-a"), t or traits(), holder, clock.now)
    return asyncio.run(held)


def refused(checks: Checks, k: NamedKey, clock: Clock, **kw: Any) -> ProxyError:
    with pytest.raises(ProxyError) as info:
        admit(checks, k, clock, **kw)
    return info.value


def test_rpm_sliding_window() -> None:
    clock = Clock()
    checks = make(clock)
    k = key(rpm=2)
    admit(checks, k, clock)
    clock.now += 10
    admit(checks, k, clock)
    clock.now += 10
    error = refused(checks, k, clock)
    assert error.status == 429 and error.retry_after == "40"  # the first leaves at +60
    clock.now += 39.5
    assert refused(checks, k, clock).retry_after == "1"
    clock.now += 0.5
    admit(checks, k, clock)


def test_tpm_counts_settled_and_in_flight_tokens() -> None:
    # A request reserves its expected tokens (8 of input, max_tokens 10) in the window at
    # once; its settlement puts the real count in their place.
    clock = Clock()
    checks = make(clock)
    k = key(tpm=100)
    held = admit(checks, k, clock)
    asyncio.run(held.settle(0.0, 99, clock.now))
    held2 = admit(checks, k, clock)  # 99 < 100
    refused(checks, k, clock)  # 99 + the 18 in flight: no room
    asyncio.run(held2.settle(0.0, 1, clock.now))
    error = refused(checks, k, clock)  # 100 counted: the bound is reached
    assert "limit of 100 tokens per minute" in error.message and error.retry_after == "60"


def test_a_refused_request_gives_its_tpm_reservation_back() -> None:
    clock = Clock()
    checks = make(clock)
    k = key(tpm=100, budget_usd=0.01)  # tpm admits it, the budget refuses it
    refused(checks, k, clock)
    assert asyncio.run(checks.counters.hit("key:alice:tpm", 0, 0, 60)) == 0.0  # nothing left


def test_budget_resets_at_the_period_end() -> None:
    clock = Clock()  # one minute before 2027 (UTC)
    checks = make(clock, seeded=0.70)  # the ledger says $0.70 spent this month
    k = key(budget_usd=1.00, period="month")
    need = 8 * 0.01 + 10 * 0.02  # $0.28 at priced-a
    held = admit(checks, k, clock)  # 0.70 + 0.28 <= 1.00
    error = refused(checks, k, clock)  # and one more would not fit beside it
    assert error.status == 402 and "$0.70 spent and $0.28 in flight" in error.message
    assert "resets at 2027-01-01T00:00:00Z" in error.message
    asyncio.run(held.settle(0.25, 15, clock.now))
    error = refused(checks, k, clock)
    assert "$0.95 spent" in error.message and "in flight" not in error.message
    assert f"up to {usd(need)}" in error.message
    clock.now += 60  # 2027-01-01T00:00:00Z: a new month, seeded again from the ledger
    checks.seed_from_ledger = make(clock, seeded=0.0).seed_from_ledger
    admit(checks, k, clock)


def test_refusal_releases_what_was_taken() -> None:
    clock = Clock()
    checks = make(clock)
    k = dataclasses.replace(key(budget_usd=1.0, rpm=1), streams=1)
    admit(checks, k, clock)  # holds its stream slot and $0.28
    error = refused(checks, k, clock)
    assert "concurrent streams" in error.message
    spent, reserved = asyncio.run(checks.counters.spent("key:alice:budget"))
    assert (spent, round(reserved, 6)) == (0.0, 0.28)  # the refused one's reservation left


def test_team_budget_and_key_budget() -> None:
    clock = Clock()
    checks = make(clock)
    team = Team("core", Limits(budget_usd=0.50))
    k = NamedKey("alice", "h", 0.0, team="core", limits=Limits(budget_usd=10))
    admit(checks, k, clock, team=team)
    error = refused(checks, k, clock, team=team)
    assert "team 'core' is over its budget of $0.50" in error.message
    _, key_reserved = asyncio.run(checks.counters.spent("key:alice:budget"))
    assert round(key_reserved, 6) == 0.28  # the key's reservation of the refused one left


def test_unpriced_models() -> None:
    clock = Clock()
    k = key(budget_usd=5)
    error = refused(make(clock), k, clock, d=decision("priced-a", "no-price-model"))
    assert error.status == 403 and "'no-price-model' has no price" in error.message
    checks = make(clock, allow_unpriced=True)
    held = admit(checks, k, clock, d=decision("no-price-model"))
    assert held.budgets == []  # admitted, its cost unknown (the ledger says so), not $0


def test_rights_drop_attempts_the_key_may_not_use() -> None:
    checks = make(Clock())
    k = NamedKey("alice", "h", 0.0, models=("priced-*",))
    both = decision("priced-a", "other-b")
    assert [a.model for a in checks.rights(k, both).attempts] == ["priced-a"]
    with pytest.raises(ProxyError) as info:
        checks.rights(k, decision("other-b"))
    assert info.value.status == 403


def test_reservation_prices_the_dearest_attempt() -> None:
    clock = Clock()
    checks = make(clock)
    k = key(budget_usd=0.55)
    # priced-b costs twice priced-a: 0.56 does not fit in 0.55, though priced-a would.
    error = refused(checks, k, clock, d=decision("priced-a", "priced-b"))
    assert "up to $0.56." in error.message
    admit(checks, k, clock, d=decision("priced-a"))


def test_periods() -> None:
    wed = datetime(2026, 12, 2, 18, 0, tzinfo=timezone.utc).timestamp()

    def iso(t: float) -> str:
        return datetime.fromtimestamp(t, timezone.utc).isoformat()

    assert [iso(t) for t in bounds("day", wed)] == [
        "2026-12-02T00:00:00+00:00",
        "2026-12-03T00:00:00+00:00",
    ]
    assert [iso(t) for t in bounds("week", wed)] == [
        "2026-11-30T00:00:00+00:00",
        "2026-12-07T00:00:00+00:00",
    ]
    assert [iso(t) for t in bounds("month", wed)] == [
        "2026-12-01T00:00:00+00:00",
        "2027-01-01T00:00:00+00:00",
    ]


_pg_missing = why_unavailable()


@pytest.fixture(scope="module")
def pg() -> Iterator[str]:
    if _pg_missing:
        pytest.skip(_pg_missing)
    pytest.importorskip("psycopg", reason="psycopg not installed (extra 'postgres')")
    with postgres_server() as url:
        wait_ready(url)
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'usage.sqlite3'}"
    url: str = request.getfixturevalue("pg")
    return url


def test_store(ledger_url: str) -> None:
    store = open_key_store(ledger_url)
    name = f"k{abs(hash(ledger_url)) % 10**8}"
    version = store.version()
    _, secret = manage.create(store, name, T0, budget=2, team="core", models="claude-*,gpt-*")
    assert store.version() == version + 1
    stored = store.key(name)
    assert stored is not None and stored.secret_hash == secret_hash(secret)
    assert stored.models == ("claude-*", "gpt-*") and stored.limits.budget_usd == 2.0
    with pytest.raises(manage.KeyChangeError):
        manage.create(store, name, T0)
    with pytest.raises(manage.KeyChangeError):
        manage.create(store, "bad name!", T0)
    rotated, new = manage.rotate(store, name, T0 + 1, grace=60)
    assert rotated.previous_hash == secret_hash(secret) and rotated.previous_until == T0 + 61
    assert manage.update(store, name, rpm=5, budget="none").limits == Limits(None, "month", 5)
    store.touch({name: T0 + 2})
    assert store.key(name).last_used == T0 + 2  # type: ignore[union-attr]
    # The spend of the period is the ledger's rows of the key (a row without a price is
    # counted apart, never as 0).
    ledger = open_ledger(ledger_url)
    for cost in (0.25, None, 0.5):
        ledger.record(UsageRecord(T0 + 3, f"r{cost}", "anthropic", "*", "a", "m", "m",
                                  cost_usd=cost, key_name=name, team="core"))  # fmt: skip
    ledger.record(UsageRecord(T0 - 10**7, "old", "anthropic", "*", "a", "m", "m", cost_usd=9.0,
                              key_name=name))  # fmt: skip
    ledger.close()
    start, _ = bounds("month", T0 + 3)
    assert store.spent("key_name", name, start) == (0.75, 1)
    assert store.spent("team", "core", start)[0] >= 0.75
    listing = manage.listing(store, T0 + 3, name)["keys"][0]
    assert listing["state"] == "active" and "hash" not in str(listing)
    assert secret not in str(manage.listing(store, T0 + 3)) and new not in str(listing)
    manage.revoke(store, name, T0 + 4)
    assert manage.listing(store, T0 + 4, name)["keys"][0]["state"] == "revoked"
    store.close()
