"""Every request that waits for a slot says so: two replicas on one Redis with a provider
bound of 1, six requests at once on both; each but the one admitted first waited (its
replica's own gate may have had room while the store was full), and each of those has
``queue=`` and ``wait_ms=`` in its access-log line and is counted in /metrics."""

from __future__ import annotations

import http.client
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from support.cluster_rig import CountingUpstream, redis_available, redis_server, stream_chat
from support.servers import ProxyServer

pytest.importorskip("hiredis", reason="hiredis not installed (extra 'cluster')")
pytestmark = pytest.mark.skipif(redis_available() is not None, reason=redis_available() or "")

WAIT_COUNT = re.compile(r'^hydra_admission_wait_seconds_count\{gate="openai"\} (\S+)$', re.M)


def waits_counted(port: int) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/metrics")
    found = WAIT_COUNT.search(conn.getresponse().read().decode())
    return float(found.group(1)) if found else 0.0


def test_every_request_that_waited_for_a_shared_slot_logs_its_wait() -> None:
    with redis_server() as redis, CountingUpstream(pieces=6, delay=0.05) as upstream:
        env = {
            "HYDRA_REDIS_URL": redis.url,
            "HYDRA_PROVIDER_STREAMS": "1",
            "HYDRA_QUEUE_TIMEOUT": "60",
            "HYDRA_USAGE_LEDGER": "off",
        }
        replicas = [
            ProxyServer(upstream.url + "/v1", "--log-level", "info", env=env) for _ in range(2)
        ]
        with replicas[0], replicas[1], ThreadPoolExecutor(6) as pool:
            ports = [r.port for r in replicas]
            done = list(
                pool.map(
                    lambda i: stream_chat(
                        ports[i % 2], f"w{i}", {"x-claude-code-session-id": f"s{i}"}
                    ),
                    range(6),
                )
            )
            assert all(r["status"] == 200 and r["complete"] for r in done)
            assert upstream.most == 1
            counted = sum(waits_counted(p) for p in ports)
            lines = [
                line
                for r in replicas
                for line in r.log_text().splitlines()
                if "hydra_proxy.access: POST /v1/chat/completions" in line
            ]
    assert len(lines) == 6
    waited = [line for line in lines if re.search(r" queue=\d+ wait_ms=[\d.]+ ", line)]
    assert len(waited) == 5, lines
    assert counted == 5
