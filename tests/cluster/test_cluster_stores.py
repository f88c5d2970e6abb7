"""The shared stores keep the `Counters` contract as the in-process one does (the host
store's SQLite file opened twice, as two workers do; Redis on a real redis-server), hold a
bound under concurrent processes, and the failover does what on_store_failure says."""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hydra_proxy.cluster.failover import Failover, StoreUnavailable, mask_url
from hydra_proxy.cluster.host import HostCounters
from hydra_proxy.counters import LocalCounters
from support.cluster_rig import RedisServer, redis_available, redis_server

pytest.importorskip("hiredis", reason="hiredis not installed (extra 'cluster')")
needs_redis = pytest.mark.skipif(redis_available() is not None, reason=redis_available() or "")


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    if redis_available() is not None:
        pytest.skip(redis_available() or "")
    with redis_server() as server:
        yield server


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def stores(tmp_path: Path, redis: RedisServer | None) -> dict[str, Callable[[], Any]]:
    from hydra_proxy.cluster.redis_store import RedisCounters

    made: dict[str, Callable[[], Any]] = {
        "host": lambda: HostCounters(tmp_path / "c.sqlite3"),
    }
    if redis is not None:
        made["redis"] = lambda: RedisCounters(redis.url)
    return made


@pytest.fixture(params=["host", "redis"])
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """Two handles on one store: what two workers (or replicas) hold."""
    server = request.getfixturevalue("redis") if request.param == "redis" else None
    if server is not None:
        server.command("FLUSHALL")
    make = stores(tmp_path, server)[request.param]
    yield make(), make()


def test_slots_bound_across_handles_released_and_renewed(pair: tuple[Any, Any]) -> None:
    one, other = pair

    async def scenario() -> None:
        assert await one.acquire("p", 2, "a", ttl=1.5)
        assert await other.acquire("p", 2, "b", ttl=1.5)
        assert not await other.acquire("p", 2, "c", ttl=1.5)
        await one.release("p", "a")
        assert await other.acquire("p", 2, "c", ttl=1.5)
        await asyncio.sleep(1.0)
        await other.renew([("p", "c")], ttl=1.5)  # b is not renewed: it lapses
        await asyncio.sleep(0.7)
        assert await one.acquire("p", 2, "d", ttl=1.5)
        assert not await one.acquire("p", 2, "e", ttl=1.5)

    run(scenario())


def test_windows_budgets_and_rests_are_shared(pair: tuple[Any, Any]) -> None:
    one, other = pair

    async def scenario() -> None:
        for store in (one, other, one):
            assert await store.hit("rpm", 3, 1, period=60) == 0.0
        wait = await other.hit("rpm", 3, 1, period=60)
        assert 59.0 < wait <= 60.0  # the first hit leaves the window in a minute
        await one.add("tpm", 500, period=60)
        assert await other.hit("tpm", 1000, 600, period=60) > 0
        assert await other.hit("tpm", 1000, 500, period=60) == 0.0

        ends = time.time() + 100
        await one.seed("b", 0.50, expires=ends)
        await other.seed("b", 0.90, expires=ends)  # seeded already: kept
        assert await one.reserve("b", 0.30, cap=1.0, holder="r1")
        assert not await other.reserve("b", 0.30, cap=1.0, holder="r2")
        await one.settle("b", "r1", spent=0.10, expires=ends)
        assert await other.spent("b") == pytest.approx((0.60, 0.0))
        assert await other.reserve("b", 0.40, cap=1.0, holder="r2")
        assert await one.spent("b") == pytest.approx((0.60, 0.40))

        now = time.time()
        await one.rest("k", now + 30)
        await other.rest("k", now + 10)  # a later end wins
        assert await other.rested_until("k") == pytest.approx(now + 30, abs=0.01)
        assert await one.rested_until("unknown") == 0.0

    run(scenario())


def _contend(args: tuple[str, str, int]) -> int:
    """One process taking and giving back slots of a bound of 3 as fast as it can; how
    many it held at once at most, with the others (each acquire reports the holders)."""
    kind, where, rounds = args

    async def work() -> int:
        if kind == "host":
            store: Any = HostCounters(where)
        else:
            from hydra_proxy.cluster.redis_store import RedisCounters

            store = RedisCounters(where)
        taken = 0
        for i in range(rounds):
            holder = f"{multiprocessing.current_process().pid}-{i}"
            if await store.acquire("contended", 3, holder, 5.0):
                taken += 1
                await store.release("contended", holder)
        return taken

    return asyncio.run(work())


@pytest.mark.parametrize("kind", ["host", "redis"])
def test_four_processes_never_hold_more_than_the_bound(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    where = str(tmp_path / "c.sqlite3")
    if kind == "redis":
        where = request.getfixturevalue("redis").url

    # Holders that never give back fill the bound but one: the 4 processes race for it.
    async def hold_two() -> None:
        store: Any = HostCounters(where) if kind == "host" else None
        if store is None:
            from hydra_proxy.cluster.redis_store import RedisCounters

            store = RedisCounters(where)
        assert await store.acquire("contended", 3, "stays-1", 60.0)
        assert await store.acquire("contended", 3, "stays-2", 60.0)

    run(hold_two())
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        taken = pool.map(_contend, [(kind, where, 150)] * 4)
    assert sum(taken) > 0

    async def count() -> int:
        if kind == "host":
            return int(await HostCounters(where).held("contended"))
        from hydra_proxy.cluster.redis_store import RedisCounters

        return len(await RedisCounters(where).held("contended"))

    assert run(count()) == 2  # every contended slot given back, the two kept


class _Leases:
    def __init__(self) -> None:
        self.held: list[tuple[str, str]] = []

    def __call__(self) -> list[tuple[str, str]]:
        return list(self.held)


async def _failover(redis: RedisServer, mode: str) -> AsyncIterator[Failover]:
    from hydra_proxy.cluster.redis_store import RedisCounters

    leases = _Leases()
    failover = Failover(
        RedisCounters(redis.url), LocalCounters(), mode=mode, replica="r1", leases=leases, ttl=3
    )
    failover.replicas = 2
    yield failover
    await failover.close()


@needs_redis
def test_closed_mode_refuses_while_redis_is_down_and_shares_again(redis: RedisServer) -> None:
    async def scenario() -> None:
        async for failover in _failover(redis, "closed"):
            assert await failover.acquire("p", 4, "a", 3)
            redis.stop()
            with pytest.raises(StoreUnavailable) as refused:
                await failover.acquire("p", 4, "b", 3)
            assert refused.value.status == 503 and refused.value.error_type == "overloaded_error"
            with pytest.raises(StoreUnavailable):
                await failover.hit("rpm", 30, 1, 60)
            await failover.settle("budget", "x", 0.25, time.time() + 100)  # kept to replay
            assert failover.outages == 1 and not failover.up
            redis.start()
            deadline = time.monotonic() + 10
            while not failover.up and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert failover.up
            assert await failover.acquire("p", 4, "c", 3)
            assert await failover.spent("budget") == pytest.approx((0.25, 0.0))

    run(scenario())


@needs_redis
def test_local_mode_divides_the_bound_by_the_replicas_and_counts_running_slots(
    redis: RedisServer,
) -> None:
    async def scenario() -> None:
        async for failover in _failover(redis, "local"):
            leases: Any = failover.leases
            assert await failover.acquire("p", 4, "running", 3)
            leases.held.append(("p", "running"))
            redis.stop()
            # 4 / 2 replicas = 2 here, one of them held by the stream already running.
            assert await failover.acquire("p", 4, "b", 3)
            assert not await failover.acquire("p", 4, "c", 3)
            assert failover.degraded == 2
            redis.start()

    run(scenario())


def test_a_redis_url_is_logged_without_its_password() -> None:
    assert mask_url("redis://:hunter2@db:6379/0") == "redis://***@db:6379/0"
    assert mask_url("redis://user:hunter2@db:6379/0") == "redis://user:***@db:6379/0"
    assert mask_url("redis://db:6379/0") == "redis://db:6379/0"


@needs_redis
def test_the_check_that_finds_redis_down_is_not_refused_by_its_own_lease(
    redis: RedisServer,
) -> None:
    """A process lists a lease before its ask returns (a heartbeat meanwhile renews it):
    the switch to local counts the running leases, but not the one still asking, which
    would fill a bound of one per replica until its TTL (a queue's wait of lease_ttl)."""

    async def scenario() -> None:
        async for failover in _failover(redis, "local"):
            leases: Any = failover.leases
            leases.held.append(("p", "asking"))
            redis.stop()
            # 2 / 2 replicas = 1 here, and no stream runs: the request takes it.
            assert await failover.acquire("p", 2, "asking", 3)
            assert not await failover.acquire("p", 2, "next", 3)
            redis.start()

    run(scenario())


@needs_redis
def test_a_budget_the_store_lost_is_unseeded_until_the_ledger_seeds_it(
    redis: RedisServer,
) -> None:
    from hydra_proxy.cluster.redis_store import RedisCounters
    from hydra_proxy.counters import Unseeded

    redis.command("FLUSHALL")

    async def scenario() -> None:
        store = RedisCounters(redis.url)
        ends = time.time() + 100
        with pytest.raises(Unseeded):  # never seeded: the period is new to the store
            await store.reserve("b", 0.30, cap=1.0, holder="r0")
        await store.seed("b", 0.50, expires=ends)
        assert await store.reserve("b", 0.30, cap=1.0, holder="r1")
        await store.settle("b", "r1", spent=0.20, expires=ends)
        redis.command("FLUSHALL")  # a Redis restarted without its data
        await store.settle("b", "in-flight", spent=0.05, expires=ends)
        with pytest.raises(Unseeded):
            await store.reserve("b", 0.30, cap=1.0, holder="r2")
        await store.seed("b", 0.70, expires=ends)  # what the ledger says
        assert await store.spent("b") == pytest.approx((0.70, 0.0))
        assert not await store.reserve("b", 0.35, cap=1.0, holder="r3")
        assert await store.reserve("b", 0.30, cap=1.0, holder="r3")
        await store.close()

    run(scenario())
