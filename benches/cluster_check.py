"""What a cluster check costs: a slot taken and given back, per store, and what a bounded
request adds to TTFB and to the proxy's CPU through a real `serve`, against the same
request with no bound (one run, ratios).

    python benches/cluster_check.py [--requests 300] [--checks 3000] [--rounds 3]

Stores: this process's counters, the host store (SQLite WAL on tmpfs) and Redis on
loopback (a redis-server the benchmark starts). Requests: Chat streams from the mock
(16 instant chunks) at concurrency 1, through `serve` with no bound, with a provider
bound counted in-process, in the host store (`--workers 2`) and in Redis.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import http.client
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from hydra_proxy.cluster.host import HostCounters, new_path  # noqa: E402
from hydra_proxy.cluster.redis_store import RedisCounters  # noqa: E402
from hydra_proxy.counters import LocalCounters  # noqa: E402
from hydra_proxy.mock import MockServer  # noqa: E402
from support.cluster_rig import CountingUpstream, redis_server, stream_chat  # noqa: E402
from support.servers import ProxyServer  # noqa: E402


async def check_cost(store: object, checks: int) -> tuple[float, float]:
    """Microseconds of wall time and of CPU per acquire + release of a slot of a bound of 4."""
    acquire, release = store.acquire, store.release  # type: ignore[attr-defined]
    for i in range(100):
        await acquire("bench", 4, f"w{i}", 10.0)
        await release("bench", f"w{i}")
    started, cpu = time.perf_counter(), time.process_time()
    for i in range(checks):
        await acquire("bench", 4, f"h{i}", 10.0)
        await release("bench", f"h{i}")
    wall = (time.perf_counter() - started) / checks * 1e6
    return wall, (time.process_time() - cpu) / checks * 1e6


def on_worker_loop(coro: Any) -> Any:
    """Run on the loop granian's workers use (uvloop when installed)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


def cpu_seconds(pid: int) -> float:
    """CPU time of `pid` and its children (the workers), every thread, in nanoseconds'
    resolution (/proc/PID/task/TID/schedstat)."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_bytes()
            if int(entry) != pid and int(stat[stat.rindex(b")") + 2 :].split()[1]) != pid:
                continue
            for task in os.listdir(f"/proc/{entry}/task"):
                total += int(Path(f"/proc/{entry}/task/{task}/schedstat").read_text().split()[0])
        except OSError:
            continue
    return total / 1e9


def requests_ttfb(port: int, count: int) -> list[float]:
    body = orjson.dumps(
        {"model": "gpt-4o", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    )
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    ttfbs = []
    for _ in range(count):
        started = time.perf_counter()
        conn.request("POST", "/v1/chat/completions", body, {"content-type": "application/json"})
        reply = conn.getresponse()
        reply.read(1)
        ttfbs.append(time.perf_counter() - started)
        reply.read()
        assert reply.status == 200
    conn.close()
    return ttfbs


def through_proxy(upstream: str, env: dict[str, str], args: list[str], count: int) -> tuple:
    with ProxyServer(upstream, *args, env={"HYDRA_USAGE_LEDGER": "off", **env}) as proxy:
        assert proxy.process is not None
        requests_ttfb(proxy.port, 50)  # warm: connections, tokenizer, caches
        before = cpu_seconds(proxy.process.pid)
        ttfb = requests_ttfb(proxy.port, count)
        cpu = cpu_seconds(proxy.process.pid) - before
    return statistics.median(ttfb) * 1000, cpu / count * 1000


def paced_cpu(upstream: str, env: dict[str, str], args: list[str], count: int) -> float:
    """Proxy CPU (ms) per paced stream (64 events, 20 ms apart), 16 at once."""
    from concurrent.futures import ThreadPoolExecutor

    with ProxyServer(upstream, *args, env={"HYDRA_USAGE_LEDGER": "off", **env}) as proxy:
        assert proxy.process is not None
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda i: stream_chat(proxy.port, f"w{i}", {}), range(16)))
            before = cpu_seconds(proxy.process.pid)
            done = list(pool.map(lambda i: stream_chat(proxy.port, f"p{i}", {}), range(count)))
            cpu = cpu_seconds(proxy.process.pid) - before
        assert all(r["status"] == 200 and r["complete"] for r in done)
    return cpu / count * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--checks", type=int, default=3000)
    parser.add_argument("--paced", type=int, default=160)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    with redis_server() as redis:
        path = new_path()
        atexit.register(shutil.rmtree, path.parent, True)
        stores = {
            "in-process": LocalCounters(),
            "host store (SQLite WAL)": HostCounters(path),
            "redis (loopback)": RedisCounters(redis.url),
        }
        print("check = acquire + release of one slot, in one process: wall, CPU")
        for name, store in stores.items():
            wall, cpu = on_worker_loop(check_cost(store, options.checks))
            print(f"  {name:26s} {wall:7.1f} us  {cpu:7.1f} us CPU")

        bound = {"HYDRA_PROVIDER_STREAMS": "4"}
        runs = {
            "no bound, 1 worker": ({}, []),
            "bound in-process, 1 worker": (bound, []),
            "bound in redis, 1 worker": ({**bound, "HYDRA_REDIS_URL": redis.url}, []),
            "no bound, 2 workers": ({}, ["--workers", "2"]),
            "bound in host store, 2 workers": (bound, ["--workers", "2"]),
        }
        # Rounds in turn, each configuration once per round, medians: a shared machine's
        # drift falls on every configuration alike.
        instant: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
        with MockServer() as mock:
            for _ in range(options.rounds):
                for name, (env, args) in runs.items():
                    instant[name].append(
                        through_proxy(mock.url + "/v1", env, args, options.requests)
                    )
        results = {
            name: (statistics.median(t for t, _ in got), statistics.median(c for _, c in got))
            for name, got in instant.items()
        }
        # A bound above the streams at once: the checks' cost, not a queue's wait.
        wide = {"HYDRA_PROVIDER_STREAMS": "64"}
        paced_runs = {
            "no bound, 1 worker": ({}, []),
            "bound in-process, 1 worker": (wide, []),
            "bound in redis, 1 worker": ({**wide, "HYDRA_REDIS_URL": redis.url}, []),
        }
        paced_got: dict[str, list[float]] = {name: [] for name in paced_runs}
        with CountingUpstream(pieces=64, delay=0.02) as paced:
            for _ in range(options.rounds):
                for name, (env, args) in paced_runs.items():
                    paced_got[name].append(paced_cpu(paced.url + "/v1", env, args, options.paced))
        paced_results = {name: statistics.median(got) for name, got in paced_got.items()}
    print(
        f"\n{options.requests} streams at c=1 (mock: 16 instant chunks), median of "
        f"{options.rounds} rounds: p50 TTFB, CPU/stream"
    )
    for name, (ttfb, cpu) in results.items():
        base = results["no bound, 2 workers" if "2 workers" in name else "no bound, 1 worker"]
        print(
            f"  {name:32s} {ttfb:6.2f} ms ({ttfb - base[0]:+.2f})  {cpu:6.2f} ms CPU "
            f"({(cpu / base[1] - 1) * 100:+.1f}%)"
        )
    print(f"\n{options.paced} paced streams (64 events, 20 ms apart), 16 at once: CPU/stream")
    base_cpu = paced_results["no bound, 1 worker"]
    for name, cpu in paced_results.items():
        print(f"  {name:32s} {cpu:6.2f} ms CPU ({(cpu / base_cpu - 1) * 100:+.1f}%)")


if __name__ == "__main__":
    main()
