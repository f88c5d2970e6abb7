"""Two replicas losing their store in the middle of a run, started here with real
servers: a redis-server restarted without its data (in both on_store_failure modes) and a
Sentinel-watched primary killed while streams run. A named key's budget ends within one
request of its limit (its spend read back from the usage ledger), every stream admitted
before the loss completes, and the replicas share their bounds again on the new store."""

from __future__ import annotations

import http.client
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hydra_proxy.mock import MockServer
from hydra_proxy.tokens import estimate_input_tokens
from support.cluster_rig import (
    CountingUpstream,
    RedisServer,
    redis_available,
    redis_server,
    stream_chat,
)
from support.redis_kinds import SERVICE, sentinel_set, why_unavailable
from support.servers import ProxyServer
from support.team_keys import call, cost, create, ledger_rows, messages, proxy, turn

pytest.importorskip("hiredis", reason="hiredis not installed (extra 'cluster')")
_missing = redis_available() or why_unavailable()
pytestmark = [pytest.mark.skipif(_missing is not None, reason=_missing or ""), pytest.mark.e2e]

LEASE_TTL = "2"


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server


def metric(port: int, name: str) -> float | None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    found = re.search(rf"^{name} (\S+)$", text, flags=re.M)
    return float(found.group(1)) if found else None


@pytest.mark.parametrize("mode", ["local", "closed"])
def test_a_redis_restarted_empty_mid_run_leaves_every_budget_within_one_request(
    mode: str, mock: MockServer, redis: RedisServer, tmp_path: Path
) -> None:
    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    body = messages()
    spend = cost("priced-a", 5, 10)  # what each admitted request costs
    need = cost("priced-b", estimate_input_tokens(body), 10)  # what it reserves
    budget = round(8 * spend + need, 4)
    # Admitted one after another while spent + need fits: 9 without any loss.
    expected = int((budget - need) / spend + 1e-9) + 1
    secret = create(ledger, "alice", budget=budget)
    redis.command("FLUSHALL")
    env = {
        "HYDRA_REDIS_URL": redis.url,
        "HYDRA_LEASE_TTL": LEASE_TTL,
        "HYDRA_ON_STORE_FAILURE": mode,
    }
    mock.clear()
    mock.script([turn(5, 10) for _ in range(60)])
    statuses: list[int] = []
    with proxy(mock, ledger, tmp_path, **env) as one, proxy(mock, ledger, tmp_path, **env) as two:
        replicas = [one, two]

        def send(i: int) -> int:
            status = call(replicas[i % 2].port, "POST", "/v1/messages", body, secret).status
            statuses.append(status)
            return status

        for i in range(4):
            assert send(i) == 200
        redis.stop()
        # Each replica finds the store down on its next check: local admits on its share
        # of what the budget had left when it last asked the store, closed refuses with
        # 503. A replica's last answer may still count the other's previous request as
        # reserved (its settlement lands just after its reply reached the client): the
        # second replica's share then no longer fits a reservation, and it refuses (402).
        during = [send(4), send(5)]
        if mode == "local":
            assert during[0] == 200 and during[1] in (200, 402), during
        else:
            assert during == [503, 503]
        redis.start()  # empty: no spend, no seeded budget
        # Until every replica is back on the new Redis (a probe, the rejoin wait, the
        # ledger read) and the budget refuses for good.
        refused_in_a_row, i, back = 0, 6, time.monotonic()
        while (refused_in_a_row < 3 or time.monotonic() - back < 6) and i < 60:
            status = send(i)
            i += 1
            time.sleep(0.1)
            refused_in_a_row = refused_in_a_row + 1 if status == 402 else 0
        assert refused_in_a_row >= 3, statuses
    admitted = statuses.count(200)
    rows = [r for r in ledger_rows(ledger, "alice", admitted) if r.status == 200]
    spent = sum(r.cost_usd or 0 for r in rows)
    assert len(rows) == admitted
    assert admitted <= expected + 1, statuses
    assert spent <= budget + spend + 1e-9, (spent, budget)


def test_two_replicas_follow_a_sentinel_failover_during_streams() -> None:
    with (
        sentinel_set() as sentinels,
        CountingUpstream(pieces=20, delay=0.05) as upstream,
    ):
        env = {
            "HYDRA_REDIS_URL": f"redis://{SERVICE}/0",
            "HYDRA_REDIS_SENTINELS": ",".join(sentinels.sentinels),
            "HYDRA_REDIS_SENTINEL_SERVICE": SERVICE,
            "HYDRA_LEASE_TTL": LEASE_TTL,
            "HYDRA_PROVIDER_STREAMS": "4",
            "HYDRA_QUEUE_TIMEOUT": "60",
            "HYDRA_USAGE_LEDGER": "off",
        }
        replicas = [ProxyServer(upstream.url + "/v1", env=env) for _ in range(2)]
        with replicas[0], replicas[1], ThreadPoolExecutor(8) as pool:
            ports = [r.port for r in replicas]
            running = [pool.submit(stream_chat, ports[i % 2], f"before-{i}", {}) for i in range(8)]
            time.sleep(0.3)  # streams admitted through the first primary are running
            killed_at = time.monotonic()
            sentinels.kill_primary()
            promoted_after = time.monotonic() - killed_at
            before = [f.result() for f in running]
            assert all(r["status"] == 200 and r["complete"] for r in before)
            # Both replicas on the promoted primary: the bound is the fleet's again.
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                if all(metric(p, "hydra_cluster_store_up") == 1.0 for p in ports):
                    break
                time.sleep(0.2)
            assert [metric(p, "hydra_cluster_store_up") for p in ports] == [1.0, 1.0]
            upstream.reset_peak()
            after = list(pool.map(lambda i: stream_chat(ports[i % 2], f"after-{i}", {}), range(8)))
            assert all(r["status"] == 200 and r["complete"] for r in after)
            assert upstream.most <= 4
        print(f"failover: promoted {promoted_after:.2f} s after the kill")


def test_a_budget_holds_through_a_sentinel_failover_and_a_primary_that_lost_its_data(
    mock: MockServer, tmp_path: Path
) -> None:
    """Two replicas on a Sentinel-watched Redis: the primary is killed while two
    requests of the key stream (the replica is promoted), then the promoted primary loses
    its data; the key's budget still ends within one request."""
    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    body = messages()
    spend = cost("priced-a", 5, 10)
    need = cost("priced-b", estimate_input_tokens(body), 10)
    budget = round(8 * spend + need, 4)
    expected = int((budget - need) / spend + 1e-9) + 1
    secret = create(ledger, "carol", budget=budget)
    mock.clear()
    mock.script([turn(5, 10, ttfb_ms=1500)] * 2 + [turn(5, 10) for _ in range(60)])
    statuses: list[int] = []
    with sentinel_set() as sentinels:
        env = {
            "HYDRA_REDIS_URL": f"redis://{SERVICE}/0",
            "HYDRA_REDIS_SENTINELS": ",".join(sentinels.sentinels),
            "HYDRA_REDIS_SENTINEL_SERVICE": SERVICE,
            "HYDRA_LEASE_TTL": LEASE_TTL,
        }
        with (
            proxy(mock, ledger, tmp_path, **env) as one,
            proxy(mock, ledger, tmp_path, **env) as two,
            ThreadPoolExecutor(2) as pool,
        ):
            ports = [one.port, two.port]

            def send(i: int) -> int:
                status = call(ports[i % 2], "POST", "/v1/messages", body, secret).status
                statuses.append(status)
                return status

            slow = [pool.submit(send, i) for i in range(2)]  # the first two turns stream
            time.sleep(0.5)
            new_primary = sentinels.kill_primary()
            assert [f.result() for f in slow] == [200, 200]
            for i in range(2, 4):
                send(i)
            sentinels.flush(new_primary)  # the promoted primary lost its data
            refused_in_a_row, i, back = 0, 4, time.monotonic()
            while (refused_in_a_row < 3 or time.monotonic() - back < 6) and i < 60:
                status = send(i)
                i += 1
                time.sleep(0.1)
                refused_in_a_row = refused_in_a_row + 1 if status == 402 else 0
            assert refused_in_a_row >= 3, statuses
    admitted = statuses.count(200)
    rows = [r for r in ledger_rows(ledger, "carol", admitted) if r.status == 200]
    assert len(rows) == admitted
    assert admitted <= expected + 1, statuses
    assert sum(r.cost_usd or 0 for r in rows) <= budget + spend + 1e-9
