"""Bounds that hold across processes: the store a worker counts its admission slots and key
rests in, when more than one process serves.

- One `serve` with several workers and no Redis: the host store (`cluster.host`), an
  SQLite file the `serve` creates and names to its workers in `HOST_STORE_ENV`.
- `[cluster] redis_url`: Redis (`cluster.redis_store`; one server, the primary Sentinel
  names, or a Redis Cluster, through `cluster.resp`) for every replica, with
  `on_store_failure` saying what the bounds do when it cannot be reached
  (`cluster.failover`), falling back to the host store (several workers) or the
  process's own counters (one).
- One process alone: no cluster (the gates count in the process, as before).

The fair queue stays per worker (`cluster.gate`); docs/DEPLOY.md says what holds across.
"""

from __future__ import annotations

import asyncio
import os
import socket
from dataclasses import dataclass, field
from typing import Any

from ..config import Settings
from ..config.keys import KeyPool
from ..counters import Counters, LocalCounters
from ..server.checks.admission import Gate
from .failover import Failover, StoreUnavailable, mask_url
from .gate import LeasedCounters, Leases, SharedGate
from .host import HostCounters, new_path
from .redis_store import RedisCounters
from .rests import RestSync

__all__ = [
    "HOST_STORE_ENV",
    "REPLICA_ENV",
    "Cluster",
    "StoreUnavailable",
    "prepare_serve",
    "unreachable",
]

# Set by `serve` (server/transport/run.py) for its workers: the host store's file, and the id of
# this replica (host name and the serve's pid) that lease holders carry.
HOST_STORE_ENV = "HYDRA_HOST_STORE"
REPLICA_ENV = "HYDRA_REPLICA_ID"


def prepare_serve(settings: Settings, environ: Any = os.environ) -> str | None:
    """In the `serve` process, before its workers start: the host store's folder to
    remove at exit (None: one worker, no host store)."""
    environ[REPLICA_ENV] = f"{socket.gethostname()}:{os.getpid()}"
    if settings.workers < 2:
        environ.pop(HOST_STORE_ENV, None)
        return None
    path = new_path()
    environ[HOST_STORE_ENV] = str(path)
    return str(path.parent)


def redis_counters(settings: Settings) -> RedisCounters:
    """The Redis store `[cluster]` names (redis_url set)."""
    assert settings.redis_url
    return RedisCounters(
        settings.redis_url,
        timeout=settings.redis_timeout,
        ca_file=settings.redis_ca_file,
        sentinels=settings.sentinels,
        service=settings.sentinel_service,
        sentinel_password=settings.sentinel_password,
        cluster=settings.redis_cluster,
    )


def unreachable(settings: Settings) -> str | None:
    """Why the Redis `[cluster]` names cannot be used now (None: it answers, or none is
    set): asked once by `serve` before it listens."""
    if not settings.redis_url:
        return None
    from .resp import ReplyError, StoreConnectionError

    async def ping() -> None:
        store = redis_counters(settings)
        try:
            await store.ping()
        finally:
            await store.close()

    try:
        asyncio.run(ping())
    except (StoreConnectionError, ReplyError, OSError, TimeoutError) as exc:
        return f"the Redis at {mask_url(settings.redis_url)} cannot be reached: {exc}"
    return None


@dataclass
class Cluster:
    """This worker's side of the shared bounds."""

    counters: Counters
    leases: Leases
    rests: RestSync
    failover: Failover | None = None
    host: HostCounters | None = None
    where: str = ""
    _metrics: Any = field(default=None, repr=False)

    @classmethod
    def for_worker(cls, settings: Settings, environ: Any = os.environ) -> Cluster | None:
        """The worker's cluster (None: this process serves alone)."""
        host_path = environ.get(HOST_STORE_ENV)
        if not settings.redis_url and not host_path:
            return None
        replica = environ.get(REPLICA_ENV) or f"{socket.gethostname()}:{os.getpid()}"
        host = HostCounters(host_path) if host_path else None
        local: Any = host if host is not None else LocalCounters()
        if not settings.redis_url:
            leases = Leases(local, settings.lease_ttl, replica)
            return cls(local, leases, RestSync(local, None), host=host, where="host store")
        redis = redis_counters(settings)
        holder: list[Leases] = []
        failover = Failover(
            redis,
            local,
            mode=settings.on_store_failure,
            replica=replica,
            leases=lambda: holder[0].all(),
            ttl=settings.lease_ttl,
        )
        leases = Leases(failover, settings.lease_ttl, replica)
        holder.append(leases)
        where = "redis " + mask_url(settings.redis_url)
        return cls(failover, leases, RestSync(failover, failover.rests), failover, host, where)

    def gate(self, name: str, limit: int, depth: int, label: str, key: str) -> Gate:
        return SharedGate(name, limit, depth, label, key, self.leases)

    def member_counters(self) -> Counters:
        """The counters of the named keys' checks: the shared store, their stream slots
        leases of this process (renewed by its heartbeat)."""
        return LeasedCounters(self.leases)

    def share_rests(self, pools: dict[str, KeyPool]) -> dict[str, KeyPool]:
        return self.rests.share(pools)

    async def start(self, metrics: Any = None) -> None:
        """At worker startup: the heartbeat (the replica joins at once), the rest sync and
        the store's metrics."""
        if metrics is not None:
            self._bind(metrics)
        self.leases.start()
        await self.leases.beat_once()
        self.rests.start()

    def _bind(self, metrics: Any) -> None:
        from prometheus_client import Counter, Gauge

        registry = metrics.registry
        failures = Counter(
            "hydra_cluster_store_failures",
            "Times the shared store (Redis) became unreachable.",
            registry=registry,
        )
        degraded = Counter(
            "hydra_cluster_degraded_checks",
            "Checks answered without the shared store, by on_store_failure.",
            ("mode",),
            registry=registry,
        )
        up = Gauge(
            "hydra_cluster_store_up",
            "Whether the shared store answers (per worker; the minimum).",
            multiprocess_mode="min",
            registry=registry,
        )
        up.set(1)
        self._metrics = (failures, degraded, up)
        failover = self.failover
        if failover is not None:

            def changed(is_up: bool) -> None:
                up.set(1 if is_up else 0)
                if not is_up:
                    failures.inc()

            failover.on_change = changed
            failover.on_degraded = lambda mode: degraded.labels(mode).inc()

    async def close(self) -> None:
        await self.rests.close()
        await self.leases.close()
        if self.failover is not None:
            await self.failover.close()
        if self.host is not None:
            self.host.close()
