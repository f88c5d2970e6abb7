"""The shared gate: its bound is the store's, its queue is the worker's round-robin of
sessions, a waiter that leaves takes nothing with it, and a slot freed by another
process reaches this worker's waiters by the poll."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hydra_proxy.cluster.gate import Leases, SharedGate
from hydra_proxy.cluster.host import HostCounters
from hydra_proxy.counters import LocalCounters
from hydra_proxy.server.checks.admission import Refused


def gate(leases: Leases, limit: int = 1, depth: int = 16) -> SharedGate:
    return SharedGate("provider 'p'", limit, depth, "p", "provider:p", leases)


def test_waiters_are_served_round_robin_by_session() -> None:
    async def scenario() -> list[str]:
        g = gate(Leases(LocalCounters(), 10.0, "r"))
        loop = asyncio.get_running_loop()
        first = await g.take("a", loop.time() + 10)
        order: list[str] = []

        async def request(session: str, name: str) -> None:
            slot = await g.take(session, loop.time() + 10)
            order.append(name)
            await asyncio.sleep(0.01)
            slot.release()

        tasks = [
            asyncio.ensure_future(request(s, n))
            for s, n in (("a", "a2"), ("a", "a3"), ("a", "a4"), ("b", "b1"), ("c", "c1"))
        ]
        await asyncio.sleep(0.01)
        first.release()
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(scenario()) == ["a2", "b1", "c1", "a3", "a4"]


def test_a_waiter_that_leaves_or_times_out_holds_no_slot() -> None:
    async def scenario() -> None:
        store = LocalCounters()
        g = gate(Leases(store, 10.0, "r"))
        loop = asyncio.get_running_loop()
        held = await g.take("a", loop.time() + 10)
        leaving = asyncio.ensure_future(g.take("b", loop.time() + 10))
        await asyncio.sleep(0.01)
        leaving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await leaving
        with pytest.raises(Refused, match="wait timed out"):
            await g.take("c", loop.time() + 0.05)
        held.release()
        await asyncio.sleep(0.01)  # the release reaches the store
        assert g.waiting == 0 and g.active == 0
        assert await store.acquire("provider:p", 1, "x", 10.0)  # nothing leaked

    asyncio.run(scenario())


def test_a_slot_freed_by_another_process_reaches_a_waiter_here(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"

    async def scenario() -> float:
        elsewhere = HostCounters(path)  # another worker, holding the only slot
        assert await elsewhere.acquire("provider:p", 1, "other", 10.0)
        g = gate(Leases(HostCounters(path), 10.0, "r"))
        loop = asyncio.get_running_loop()
        waiting = asyncio.ensure_future(g.take("a", loop.time() + 5))
        await asyncio.sleep(0.1)
        assert not waiting.done() and g.waiting == 1
        freed = loop.time()
        await elsewhere.release("provider:p", "other")
        slot = await waiting
        took = loop.time() - freed
        slot.release()
        return took

    assert asyncio.run(scenario()) < 0.2  # within a poll or two
