"""A Redis that stops answering (its process stopped: connections hang rather than fail)
is decided on within the store's timeout, not a lease's TTL, for the first request of the
outage and for one waiting in the queue, in both on_store_failure modes: with a queue
timeout far below the lease TTL, no request ends in the queue's 429."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from support.cluster_rig import (
    CountingUpstream,
    RedisServer,
    redis_available,
    redis_server,
    stream_chat,
)
from support.servers import ProxyServer

pytest.importorskip("hiredis", reason="hiredis not installed (extra 'cluster')")
pytestmark = pytest.mark.skipif(redis_available() is not None, reason=redis_available() or "")


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server
        assert server.process is not None
        server.process.send_signal(signal.SIGCONT)


@pytest.mark.parametrize("mode", ["local", "closed"])
def test_a_hung_redis_is_decided_on_at_once_not_after_a_lease(
    mode: str, redis: RedisServer
) -> None:
    env = {
        "HYDRA_REDIS_URL": redis.url,
        "HYDRA_ON_STORE_FAILURE": mode,
        "HYDRA_LEASE_TTL": "60",
        "HYDRA_QUEUE_TIMEOUT": "5",
        "HYDRA_PROVIDER_STREAMS": "1",
        "HYDRA_USAGE_LEDGER": "off",
    }
    with (
        CountingUpstream(pieces=30, delay=0.05) as upstream,
        ProxyServer(upstream.url + "/v1", env=env) as proxy,
        ThreadPoolExecutor(2) as pool,
    ):
        assert stream_chat(proxy.port, "warm", {})["status"] == 200
        holding = pool.submit(stream_chat, proxy.port, "holds the slot", {"session-id": "a"})
        while upstream.active == 0:
            time.sleep(0.01)
        waiting = pool.submit(stream_chat, proxy.port, "waits for it", {"session-id": "b"})
        time.sleep(0.3)  # in the queue, its head asking the store
        assert redis.process is not None
        redis.process.send_signal(signal.SIGSTOP)
        queued = waiting.result(60)
        assert holding.result(60)["status"] == 200
        first = stream_chat(proxy.port, "first of the outage", {"session-id": "c"})
    expected = 200 if mode == "local" else 503
    assert (queued["status"], first["status"]) == (expected, expected)
    if mode == "local":
        assert queued["complete"] and first["complete"]
