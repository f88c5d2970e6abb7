"""The store on every kind of Redis a team runs, each a real server started here: one
redis-server over TLS with an ACL user, the primary a Sentinel names, and a Redis Cluster
of three primaries. The same contract holds on each (slots, windows, budgets, rests, the
heartbeat); a login refused or a CA not trusted is an unreachable store, not an error of
the request; MOVED is followed in the cluster; a proxy on the cluster bounds its
streams."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from hydra_proxy.cluster.redis_store import RedisCounters, key
from hydra_proxy.cluster.resp import StoreConnectionError, key_slot
from support.cluster_rig import CountingUpstream, stream_chat
from support.redis_kinds import (
    SERVICE,
    RedisCluster,
    SentinelSet,
    TlsRedis,
    redis_cluster,
    sentinel_set,
    tls_redis,
    why_unavailable,
)
from support.servers import ProxyServer

pytest.importorskip("hiredis", reason="hiredis not installed (extra 'cluster')")
_missing = why_unavailable()
pytestmark = pytest.mark.skipif(_missing is not None, reason=_missing or "")


@pytest.fixture(scope="module")
def tls() -> Iterator[TlsRedis]:
    with tls_redis() as server:
        yield server


SENTINEL_PASSWORD = "sentinel-pass-0"


@pytest.fixture(scope="module")
def sentinel() -> Iterator[SentinelSet]:
    with sentinel_set(password=SENTINEL_PASSWORD) as found:
        yield found


@pytest.fixture(scope="module")
def cluster() -> Iterator[RedisCluster]:
    with redis_cluster() as found:
        yield found


def store_of(kind: str, request: pytest.FixtureRequest) -> RedisCounters:
    if kind == "tls+acl":
        tls: TlsRedis = request.getfixturevalue("tls")
        return RedisCounters(tls.url, ca_file=tls.ca_file)
    if kind == "sentinel":
        found: SentinelSet = request.getfixturevalue("sentinel")
        return RedisCounters(
            f"redis://{SERVICE}/0",
            sentinels=found.sentinels,
            service=SERVICE,
            sentinel_password=SENTINEL_PASSWORD,
        )
    cluster: RedisCluster = request.getfixturevalue("cluster")
    return RedisCounters(cluster.url, cluster=True)


KINDS = ["tls+acl", "sentinel", "cluster"]


@pytest.mark.parametrize("kind", KINDS)
def test_the_counters_contract_holds_on_every_kind_of_redis(
    kind: str, request: pytest.FixtureRequest
) -> None:
    one, other = store_of(kind, request), store_of(kind, request)
    tag = f"{kind}-{time.time_ns()}"
    # Names whose keys fall on different nodes of a cluster.
    names = [f"{tag}:{i}" for i in range(6)]

    async def scenario() -> None:
        for name in names:
            assert await one.acquire(name, 2, "a", ttl=30)
            assert await other.acquire(name, 2, "b", ttl=30)
            assert not await one.acquire(name, 2, "c", ttl=30)
        await one.release(names[0], "a")
        assert await other.acquire(names[0], 2, "c", ttl=30)
        assert await one.beat([(n, "a") for n in names[1:]], 30, f"{tag}-replica") >= 1
        assert sorted(await one.held(names[1])) == ["a", "b"]

        for store in (one, other, one):
            assert await store.hit(tag + ":rpm", 3, 1, period=60) == 0.0
        assert await other.hit(tag + ":rpm", 3, 1, period=60) > 59.0

        ends = time.time() + 100
        await one.seed(tag + ":b", 0.50, expires=ends)
        assert await one.reserve(tag + ":b", 0.30, cap=1.0, holder="r1")
        assert not await other.reserve(tag + ":b", 0.30, cap=1.0, holder="r2")
        await other.settle(tag + ":b", "r1", spent=0.10, expires=ends)
        assert await one.spent(tag + ":b") == pytest.approx((0.60, 0.0))

        await one.rest(names[2], time.time() + 30)
        ends_seen = await other.rests(names)
        assert [e > 0 for e in ends_seen] == [False, False, True, False, False, False]
        await one.close()
        await other.close()

    asyncio.run(scenario())


def test_the_names_keys_share_one_slot_and_the_names_spread_over_the_nodes(
    cluster: RedisCluster,
) -> None:
    for name in ("provider:openai", "key:alice:budget", "team:core:rpm"):
        kinds = ["s", "w", "w:t", "w:n", "b", "r", "rx", "k"]
        assert len({key_slot(key(name, k)) for k in kinds}) == 1
    store = RedisCounters(cluster.url, cluster=True)

    async def owners() -> set[int]:
        await store.acquire("spread-0", 1, "x", 5)
        found = {store.resp._slots[key_slot(key(f"spread-{i}", "s"))].port for i in range(12)}  # type: ignore[union-attr]
        await store.close()
        return found

    assert len(asyncio.run(owners())) == 3  # not every name on the node of the URL


def test_a_moved_slot_is_followed_and_the_map_read_again(cluster: RedisCluster) -> None:
    """A slot map gone stale (as after a resharding): every slot believed on one node,
    which answers MOVED for the others' keys."""
    store = RedisCounters(cluster.url, cluster=True)

    async def scenario() -> None:
        names = [f"moved-{i}" for i in range(9)]
        await store.acquire("moved-warm", 5, "warm", 5)
        first = store.resp._slots[0]
        store.resp._slots = [first] * len(store.resp._slots)
        for name in names:
            assert await store.acquire(name, 5, "h", 5)
        assert len({n.port for n in store.resp._slots if n is not None}) == 3
        for name in names:
            assert await store.held(name) == ["h"]
        await store.close()

    asyncio.run(scenario())


def test_sentinels_that_want_a_password_name_no_primary_without_it(
    sentinel: SentinelSet,
) -> None:
    async def ping(password: str | None) -> BaseException | None:
        store = RedisCounters(
            f"redis://{SERVICE}/0",
            sentinels=sentinel.sentinels,
            service=SERVICE,
            sentinel_password=password,
        )
        try:
            await store.ping()
        except Exception as exc:
            return exc
        finally:
            await store.close()
        return None

    assert asyncio.run(ping(SENTINEL_PASSWORD)) is None
    refused = asyncio.run(ping(None))
    assert isinstance(refused, StoreConnectionError) and "no Sentinel named" in str(refused)
    wrong = asyncio.run(ping("wrong"))
    assert isinstance(wrong, StoreConnectionError) and "refused the login" in str(wrong)


def test_a_login_refused_or_an_untrusted_ca_is_an_unreachable_store(tls: TlsRedis) -> None:
    async def attempt(url: str, ca_file: str | None) -> BaseException | None:
        store = RedisCounters(url, ca_file=ca_file)
        try:
            await store.ping()
        except Exception as exc:
            return exc
        finally:
            await store.close()
        return None

    assert asyncio.run(attempt(tls.url, tls.ca_file)) is None
    wrong = tls.url.replace("s3cret-pass", "wrong")
    refused = asyncio.run(attempt(wrong, tls.ca_file))
    assert isinstance(refused, StoreConnectionError) and "refused the login" in str(refused)
    untrusted = asyncio.run(attempt(tls.url, None))  # the system's CAs: not this one
    assert isinstance(untrusted, StoreConnectionError) and "CERTIFICATE" in str(untrusted).upper()


def _proxy_env(extra: dict[str, str]) -> dict[str, str]:
    return {"HYDRA_PROVIDER_STREAMS": "2", "HYDRA_USAGE_LEDGER": "off", **extra}


def test_a_proxy_on_a_redis_cluster_bounds_its_streams_there(cluster: RedisCluster) -> None:
    from concurrent.futures import ThreadPoolExecutor

    env = _proxy_env({"HYDRA_REDIS_URL": cluster.url, "HYDRA_REDIS_CLUSTER": "true"})
    with (
        CountingUpstream(pieces=6, delay=0.05) as upstream,
        ProxyServer(upstream.url + "/v1", "--workers", "2", env=env) as proxy,
        ThreadPoolExecutor(6) as pool,
    ):
        done = list(pool.map(lambda i: stream_chat(proxy.port, f"c{i}", {}), range(6)))
        assert all(r["status"] == 200 and r["complete"] for r in done)
        assert upstream.most <= 2
        assert "unreachable" not in proxy.log_text()


def test_a_proxy_over_tls_with_an_acl_user_streams(tls: TlsRedis) -> None:
    env = _proxy_env({"HYDRA_REDIS_URL": tls.url, "HYDRA_REDIS_CA_FILE": tls.ca_file})
    with (
        CountingUpstream(pieces=4, delay=0.02) as upstream,
        ProxyServer(upstream.url + "/v1", env=env) as proxy,
    ):
        reply = stream_chat(proxy.port, "over tls", {})
        assert reply["status"] == 200 and reply["complete"]
        log: Any = proxy.log_text()
        assert "s3cret-pass" not in log and "unreachable" not in log


def test_a_redis_cluster_failover_is_followed_even_of_the_urls_node() -> None:
    """Three primaries with a replica each; the node the URL names is killed. The store
    is unreachable until the cluster promotes its replica, then answers again (the map
    read from the nodes still alive), its keyless ping included."""
    with redis_cluster(replicas=1) as cluster:
        store = RedisCounters(cluster.url, cluster=True)
        names = [f"failover-{i}" for i in range(9)]

        async def scenario() -> int:
            for name in names:
                assert await store.acquire(name, 5, "before", 60)
            cluster.kill(cluster.ports[0])
            failures = 0
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    await store.ping()
                    for name in names:
                        await store.acquire(name, 5, "after", 60)
                    break
                except (StoreConnectionError, TimeoutError):
                    failures += 1
                    await asyncio.sleep(0.2)
            for name in names:
                assert "after" in await store.held(name)
            await store.close()
            return failures

        assert asyncio.run(scenario()) >= 1  # it was down a while: a real failover
