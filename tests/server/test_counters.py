"""The counters interface on the in-process store: slots with leases, sliding windows,
budget reservations and rests, on a clock the test moves."""

from __future__ import annotations

import asyncio

from hydra_proxy.counters import LocalCounters


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def test_slots_are_bounded_released_and_lapse_without_a_heartbeat() -> None:
    clock = Clock()
    store = LocalCounters(clock)

    async def scenario() -> None:
        assert await store.acquire("p", 2, "a", ttl=10)
        assert await store.acquire("p", 2, "b", ttl=10)
        assert not await store.acquire("p", 2, "c", ttl=10)
        await store.release("p", "a")
        assert await store.acquire("p", 2, "c", ttl=10)
        clock.now += 8
        await store.renew([("p", "c")], ttl=10)  # b is not renewed
        clock.now += 5
        assert await store.acquire("p", 2, "d", ttl=10)  # b lapsed, c still held
        assert not await store.acquire("p", 2, "e", ttl=10)

    run(scenario())


def test_a_window_counts_up_to_its_limit_and_says_when_the_next_fits() -> None:
    clock = Clock()
    store = LocalCounters(clock)

    async def scenario() -> None:
        for _ in range(3):
            assert await store.hit("rpm", 3, 1, period=60) == 0.0
            clock.now += 10
        wait = await store.hit("rpm", 3, 1, period=60)
        assert wait == 30.0  # the first hit (at t=0) leaves the window at t=60; now t=30
        clock.now += wait
        assert await store.hit("rpm", 3, 1, period=60) == 0.0
        await store.add("tpm", 500, period=60)
        assert await store.hit("tpm", 1000, 600, period=60) > 0
        assert await store.hit("tpm", 1000, 500, period=60) == 0.0

    run(scenario())


def test_budget_reservations_never_pass_the_cap_and_settle_to_the_real_spend() -> None:
    clock = Clock()
    store = LocalCounters(clock)

    async def scenario() -> None:
        await store.seed("b", 0.50, expires=clock.now + 100)
        assert await store.reserve("b", 0.30, cap=1.0, holder="r1")
        assert not await store.reserve("b", 0.30, cap=1.0, holder="r2")
        await store.settle("b", "r1", spent=0.10, expires=clock.now + 100)
        assert await store.spent("b") == (0.60, 0.0)
        assert await store.reserve("b", 0.40, cap=1.0, holder="r2")
        await store.settle("b", "r2", spent=0.0, expires=clock.now + 100)  # failed: released
        assert await store.spent("b") == (0.60, 0.0)
        clock.now += 101  # the period ended
        assert await store.spent("b") == (0.0, 0.0)

    run(scenario())


def test_a_rest_keeps_its_latest_end() -> None:
    clock = Clock()
    store = LocalCounters(clock)

    async def scenario() -> None:
        await store.rest("k", clock.now + 30)
        await store.rest("k", clock.now + 10)
        assert await store.rested_until("k") == clock.now + 30
        clock.now += 31
        assert await store.rested_until("k") == 0.0

    run(scenario())
