"""Key rests shared by every worker: a rest one worker learns (a 429, a rejected key) is
written to the store, and each worker reads the rests of its pools' keys every
`SYNC_INTERVAL` seconds, so the others stop sending to a rested key within that.

A key is named in the store by a digest of its value (never the key itself), so replicas
with the same keys, in any order, agree on the name.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable

from ..config.keys import Key, KeyPool
from ..counters import Counters

log = logging.getLogger("hydra_proxy.cluster")

SYNC_INTERVAL = 1.0


def rest_name(provider: str, key: Key) -> str:
    digest = hashlib.sha256(key.value.encode()).hexdigest()[:16]
    return f"rest:{provider}:{digest}"


class SharedKeyPool(KeyPool):
    """A `KeyPool` whose rests are published to the store as they are learnt."""

    def __init__(
        self, provider: str, keys: list[Key], publish: Callable[[str, float], None]
    ) -> None:
        super().__init__(provider, keys)
        self.names = [rest_name(provider, k) for k in self.keys]
        self._publish = publish

    def _rested(self, key: Key, seconds: float) -> None:
        if seconds > 0:
            self._publish(self.names[key.index], time.time() + seconds)


class RestSync:
    """Publishes this worker's rests and reads the others'."""

    def __init__(
        self, counters: Counters, many: Callable[[list[str]], Awaitable[list[float]]] | None
    ) -> None:
        self.counters = counters
        self.many = many  # a store's batched read of many rests, when it has one
        self.pools: list[SharedKeyPool] = []
        self._task: asyncio.Task[None] | None = None
        self._pending: set[asyncio.Task[None]] = set()

    def share(self, pools: dict[str, KeyPool]) -> dict[str, KeyPool]:
        """The pools, those of several keys made shared (a lone key has no other to use)."""
        shared: dict[str, KeyPool] = {}
        for name, pool in pools.items():
            if len(pool) > 1:
                shared_pool = SharedKeyPool(pool.provider, list(pool.keys), self.publish)
                self.pools.append(shared_pool)
                shared[name] = shared_pool
            else:
                shared[name] = pool
        return shared

    def publish(self, name: str, until: float) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop: a synchronous caller (tests)
            return
        task = loop.create_task(self._publish(name, until))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _publish(self, name: str, until: float) -> None:
        try:
            await self.counters.rest(name, until)
        except Exception as exc:  # the others learn it from their own 429
            log.warning("cluster: a key rest could not be shared (%s)", type(exc).__name__)

    def start(self) -> None:
        if self.pools and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def sync_once(self) -> None:
        names = [n for pool in self.pools for n in pool.names]
        if self.many is not None:
            ends = await self.many(names)
        else:
            ends = [await self.counters.rested_until(n) for n in names]
        wall, mono = time.time(), time.monotonic()
        at = 0
        for pool in self.pools:
            for key in pool.keys:
                until = ends[at]
                at += 1
                if until > wall:
                    pool.learn(key, until - wall, mono)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(SYNC_INTERVAL)
            try:
                await self.sync_once()
            except Exception as exc:
                log.debug("cluster: rest sync failed (%s)", exc)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)
