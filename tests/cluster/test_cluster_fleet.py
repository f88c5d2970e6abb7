"""Three proxies of two workers each behind HAProxy (deploy/haproxy.cfg), with real Redis and
PostgreSQL, all started here: a provider bound of 4 holds for the fleet under 40 sessions,
the ledger adds up exactly, sessions stay on their replica, a replica killed with SIGKILL
gives its slots back within the lease TTL without touching the others' streams, and a
Redis outage does what on_store_failure says."""

from __future__ import annotations

import asyncio
import http.client
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from hydra_proxy.cluster.redis_store import key
from support.cluster_rig import (
    COMPLETION_TOKENS,
    PROMPT_TOKENS,
    CountingUpstream,
    RedisServer,
    haproxy,
    haproxy_available,
    kill_group,
    redis_available,
    redis_server,
    stream_chat,
)
from support.postgres_server import postgres_server, wait_ready, why_unavailable
from support.servers import ProxyServer

psycopg = pytest.importorskip("psycopg", reason="psycopg not installed (extra 'postgres')")
pytest.importorskip("hiredis", reason="hiredis not installed (extra 'cluster')")
_missing = why_unavailable() or redis_available() or haproxy_available()
pytestmark = [pytest.mark.skipif(_missing is not None, reason=_missing or ""), pytest.mark.e2e]

BOUND = 4
SESSIONS = 40
LEASE_TTL = 2.0
SLOTS = key("provider:openai", "s")


@dataclass
class Fleet:
    upstream: CountingUpstream
    redis: RedisServer
    ledger: str
    replicas: list[ProxyServer]
    port: int  # HAProxy's


def replica_env(redis_url: str, ledger: str, mode: str) -> dict[str, str]:
    return {
        "HYDRA_REDIS_URL": redis_url,
        "HYDRA_LEASE_TTL": str(LEASE_TTL),
        "HYDRA_ON_STORE_FAILURE": mode,
        "HYDRA_PROVIDER_STREAMS": str(BOUND),
        "HYDRA_QUEUE_TIMEOUT": "60",
        "HYDRA_USAGE_LEDGER": ledger,
    }


@pytest.fixture(scope="module")
def fleet() -> Iterator[Fleet]:
    with postgres_server() as ledger, redis_server() as redis:
        wait_ready(ledger)
        with CountingUpstream(pieces=6, delay=0.05) as upstream:
            env = replica_env(redis.url, ledger, "local")
            replicas = [
                ProxyServer(upstream.url + "/v1", "--workers", "2", env=env, startup_timeout=60)
                for _ in range(3)
            ]
            started: list[ProxyServer] = []
            try:
                for replica in replicas:
                    started.append(replica.__enter__())
                with haproxy([r.port for r in replicas]) as port:
                    yield Fleet(upstream, redis, ledger, replicas, port)
            finally:
                for replica in started:
                    replica.__exit__(None, None, None)


def run_sessions(port: int, sessions: int, turns: int, tag: str) -> list[list[dict[str, Any]]]:
    """`sessions` agents at once, each sending `turns` streamed requests in a row."""

    def agent(i: int) -> list[dict[str, Any]]:
        headers = {"x-claude-code-session-id": f"{tag}-session-{i}"}
        return [stream_chat(port, f"{tag}{i}t{t}", headers) for t in range(turns)]

    with ThreadPoolExecutor(sessions) as pool:
        return list(pool.map(agent, range(sessions)))


def ledger_rows(url: str) -> tuple[int, int, int]:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*), coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0) "
            "FROM hydra_usage WHERE status = 200"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


def test_the_fleet_bound_holds_the_ledger_adds_up_and_sessions_stick(fleet: Fleet) -> None:
    fleet.upstream.reset_peak()
    before = ledger_rows(fleet.ledger)[0] if _table_exists(fleet.ledger) else 0
    results = run_sessions(fleet.port, SESSIONS, 2, "a")
    flat = [r for session in results for r in session]
    assert [r["status"] for r in flat] == [200] * len(flat), [r for r in flat if r["status"] != 200]
    assert all(r["complete"] for r in flat)
    # Six processes each bounded at 4 would let 24 through; the fleet lets exactly 4.
    assert fleet.upstream.most == BOUND
    # Every session on one replica, and the sessions spread over all three.
    assert all(len({r["served_by"] for r in session}) == 1 for session in results)
    assert {session[0]["served_by"] for session in results} == {"replica1", "replica2", "replica3"}
    expected = before + len(flat)
    deadline = time.monotonic() + 15
    while ledger_rows(fleet.ledger)[0] < expected and time.monotonic() < deadline:
        time.sleep(0.2)
    count, prompt, completion = ledger_rows(fleet.ledger)
    assert count == expected
    assert (prompt, completion) == (count * PROMPT_TOKENS, count * COMPLETION_TOKENS)
    assert slots_given_back(fleet)


def slots_given_back(fleet: Fleet) -> bool:
    """Every slot back in the store within a second (releases are sent in the background;
    less than the lease TTL, so a lapse cannot pass for a release)."""
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        if fleet.redis.command("ZCARD", SLOTS).strip() == b"0":
            return True
        time.sleep(0.05)
    return False


def _table_exists(url: str) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT to_regclass('hydra_usage')").fetchone()
    return row is not None and row[0] is not None


def test_a_redis_outage_falls_back_to_divided_local_bounds_then_shares_again(
    fleet: Fleet,
) -> None:
    fleet.upstream.reset_peak()
    outcome: dict[str, Any] = {}

    def load() -> None:
        outcome["results"] = run_sessions(fleet.port, SESSIONS, 2, "r")

    runner = threading.Thread(target=load)
    runner.start()
    time.sleep(1.0)
    fleet.redis.stop()  # mid-run: streams admitted through Redis are running
    # Every process has seen the outage (its next check or heartbeat) and the streams
    # admitted before it have ended: from now on each replica admits its share alone.
    time.sleep(LEASE_TTL / 3 + 0.6)
    fleet.upstream.reset_peak()
    time.sleep(1.5)
    during = fleet.upstream.most
    fleet.redis.start()  # empty: the heartbeats put the running leases back
    # Once every replica is back on Redis (a probe, a heartbeat and the wait for the
    # others), the fleet's bound holds again.
    time.sleep(LEASE_TTL / 3 + 1.5)
    fleet.upstream.reset_peak()
    runner.join(120)
    flat = [r for session in outcome["results"] for r in session]
    assert [r["status"] for r in flat] == [200] * len(flat)
    assert all(r["complete"] for r in flat)
    # local: 4 // 3 replicas = 1 per replica.
    assert during == len(fleet.replicas) * (BOUND // len(fleet.replicas))
    assert fleet.upstream.most <= BOUND
    assert slots_given_back(fleet)


def _replica_of(fleet: Fleet, session: str) -> str | None:
    return stream_chat(fleet.port, "probe", {"x-claude-code-session-id": session})["served_by"]


def test_a_replica_sent_sigterm_drains_without_cutting_its_streams(fleet: Fleet) -> None:
    draining, other = fleet.replicas[1], fleet.replicas[0]
    assert draining.process is not None
    sessions: dict[str, list[str]] = {"replica1": [], "replica2": []}
    fleet.upstream.delay = 0.0  # quick probes: which replica each session hashes to
    try:
        for i in range(60):
            served = _replica_of(fleet, f"d-session-{i}")
            if served in sessions and len(sessions[served]) < 3:
                sessions[served].append(f"d-session-{i}")
            if all(len(v) == 3 for v in sessions.values()):
                break
    finally:
        fleet.upstream.delay = 0.05
    assert all(len(v) == 3 for v in sessions.values()), sessions
    fleet.upstream.pieces = 40  # 2 s streams: running when the signal comes
    try:
        with ThreadPoolExecutor(12) as pool:
            running = [
                pool.submit(stream_chat, fleet.port, f"long{n}", {"x-claude-code-session-id": s})
                for n, s in enumerate(sessions["replica2"] + sessions["replica1"])
            ]
            time.sleep(0.7)
            os.kill(draining.process.pid, signal.SIGTERM)
            # Each worker learns of the signal in its own time: its checks turn to 503
            # (or the listener closes) within a few seconds, not at once.
            drained_health: int | None = 200
            deadline = time.monotonic() + 5
            while drained_health == 200 and time.monotonic() < deadline:
                time.sleep(0.1)
                health = http.client.HTTPConnection("127.0.0.1", draining.port, timeout=2)
                try:
                    health.request("GET", "/health")
                    drained_health = health.getresponse().status
                except OSError:
                    drained_health = None  # the listener closed already
                finally:
                    health.close()
            fleet.upstream.pieces = 6
            # New turns of the draining replica's sessions go elsewhere, or get a 503 the
            # clients retry; never a cut stream.
            later = [
                pool.submit(stream_chat, fleet.port, f"new{n}", {"x-claude-code-session-id": s})
                for n, s in enumerate(sessions["replica2"])
            ]
            long_results = [f.result() for f in running]
            later_results = [f.result() for f in later]
    finally:
        fleet.upstream.pieces = 6
    assert drained_health in (503, None)
    assert all(r["status"] == 200 and r["complete"] for r in long_results), long_results
    assert {r["served_by"] for r in long_results} == {"replica1", "replica2"}
    for r in later_results:
        assert (r["status"] == 200 and r["complete"]) or r["status"] == 503, r
    draining.process.wait(20)  # it exits once its streams are done
    fleet.upstream.delay = 0.0
    try:
        after = [_replica_of(fleet, s) for s in sessions["replica2"]]
    finally:
        fleet.upstream.delay = 0.05
    assert "replica2" not in after and other.process is not None


def test_a_replica_killed_mid_run_frees_its_slots_within_the_ttl(fleet: Fleet) -> None:
    fleet.upstream.reset_peak()
    victim = fleet.replicas[2]
    outcome: dict[str, Any] = {}

    def load() -> None:
        outcome["results"] = run_sessions(fleet.port, SESSIONS, 2, "k")

    runner = threading.Thread(target=load)
    runner.start()
    deadline = time.monotonic() + 10
    # Kill it while it holds slots of the bound.
    while time.monotonic() < deadline:
        held = fleet.redis.command("ZRANGE", SLOTS, "0", "-1").decode().split()
        mine = [h for h in held if h.split("/")[0].endswith(f":{victim.process.pid}")]
        if mine:
            break
        time.sleep(0.01)
    assert mine, "the victim never held a slot"
    assert victim.process is not None
    kill_group(victim.process.pid)
    killed = time.monotonic()
    while time.monotonic() - killed < LEASE_TTL + 1.0:
        held = fleet.redis.command("ZRANGE", SLOTS, "0", "-1").decode().split()
        if not any(h.split("/")[0].endswith(f":{victim.process.pid}") for h in held):
            break
        time.sleep(0.05)
    freed = time.monotonic() - killed
    assert freed <= LEASE_TTL + 0.5, f"the dead replica's slots held {freed:.1f} s"
    runner.join(120)
    results = outcome["results"]
    for session in results:
        served = {r["served_by"] for r in session}
        if "replica3" not in served and None not in served:
            # A session of a live replica: not one of its streams was touched.
            assert all(r["status"] == 200 and r["complete"] for r in session)
    later = [s[-1] for s in results]
    assert sum(r["status"] == 200 and r["complete"] for r in later) >= SESSIONS - 15
    assert fleet.upstream.most <= BOUND


def test_closed_mode_refuses_with_a_503_while_redis_is_down(fleet: Fleet) -> None:
    """One more proxy on the same Redis with on_store_failure = "closed"."""
    env = replica_env(fleet.redis.url, "off", "closed")
    with ProxyServer(fleet.upstream.url + "/v1", env=env) as proxy:
        assert stream_chat(proxy.port, "c1", {})["status"] == 200
        fleet.redis.stop()
        try:
            refused = stream_chat(proxy.port, "c2", {})
            assert refused["status"] == 503
            import orjson

            error = orjson.loads(refused["body"])["error"]
            assert "limits store is unreachable" in error["message"]
        finally:
            fleet.redis.start()
        deadline = time.monotonic() + 10
        status = None
        while time.monotonic() < deadline:
            status = stream_chat(proxy.port, "c3", {})["status"]
            if status == 200:
                break
            time.sleep(0.2)
        assert status == 200
        assert "cluster store redis://127.0.0.1" in proxy.log_tail()
        metrics = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
        metrics.request("GET", "/metrics")
        text = metrics.getresponse().read().decode()
        assert "hydra_cluster_store_failures_total 1.0" in text
        # The refused request, and any refused while the probe had not seen Redis back.
        refusals = re.search(r'hydra_cluster_degraded_checks_total\{mode="closed"\} (\S+)', text)
        assert refusals is not None and float(refusals.group(1)) >= 1
        assert "hydra_cluster_store_up 1.0" in text


def test_a_key_rpm_of_30_admits_exactly_30_in_the_minute_across_six_connections(
    fleet: Fleet,
) -> None:
    """The store's side of a client key's rpm: six connections to one Redis (six worker
    processes' `Counters.hit`), 60 requests at once, exactly 30 pass and the next is told
    to wait until the first leaves the window. The end-to-end rpm of a named client key
    needs the team keys' settings, which call this method."""
    from hydra_proxy.cluster.redis_store import RedisCounters

    window = key("key:alice:rpm", "w")
    fleet.redis.command("DEL", window, window + ":t")

    async def process(count: int) -> int:
        store = RedisCounters(fleet.redis.url)
        passed = 0
        for _ in range(count):
            if await store.hit("key:alice:rpm", 30, 1, 60.0) == 0.0:
                passed += 1
        await store.close()
        return passed

    async def fleet_of_six() -> tuple[list[int], float]:
        passed = await asyncio.gather(*(process(10) for _ in range(6)))
        store = RedisCounters(fleet.redis.url)
        wait = await store.hit("key:alice:rpm", 30, 1, 60.0)
        await store.close()
        return list(passed), wait

    passed, wait = asyncio.run(fleet_of_six())
    assert sum(passed) == 30
    assert 58.0 < wait <= 60.0
