"""The proxy's own Redis client (cluster/resp.py) against redis-py's asyncio client with
hiredis, per check, side by side in one run: the same Lua script (a slot taken, the
store's ACQUIRE) and its release, on one redis-server on loopback, uvloop.

    python benches/redis_clients.py [--checks 4000] [--rounds 5] [--out FILE]

Per check: wall time p50 and p99 (one check at a time, as a request's admission does)
and CPU per check at 1 and at 32 checks at once (a busy worker). The clients take turns
in blocks of 100 checks, so a shared machine's drift and bursts fall on both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from hydra_proxy.cluster.redis_store import ACQUIRE  # noqa: E402
from support.cluster_rig import redis_server  # noqa: E402

Check = Callable[[str], Awaitable[Any]]
BLOCK = 100  # checks of one client before the other's turn


def own_client(url: str) -> tuple[Check, Callable[[], Awaitable[None]]]:
    from hydra_proxy.cluster.resp import Resp

    resp = Resp(url, timeout=1.0)

    async def check(holder: str) -> None:
        await resp.script(ACQUIRE, ["hydra:{bench-own}:s"], [1_000_000, holder, 10.0])
        await resp.execute("ZREM", "hydra:{bench-own}:s", holder)

    return check, resp.close


def redis_py(url: str) -> tuple[Check, Callable[[], Awaitable[None]]]:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url, socket_timeout=1.0, socket_connect_timeout=1.0)
    script = client.register_script(ACQUIRE)

    async def check(holder: str) -> None:
        await script(keys=["hydra:{bench-py}:s"], args=[1_000_000, holder, 10.0])
        await client.zrem("hydra:{bench-py}:s", holder)

    return check, client.aclose


async def one_at_a_time(check: Check, count: int, tag: str) -> tuple[list[float], float]:
    samples = []
    cpu = time.process_time()
    for i in range(count):
        started = time.perf_counter()
        await check(f"{tag}{i}")
        samples.append(time.perf_counter() - started)
    return samples, (time.process_time() - cpu) / count


async def many_at_once(check: Check, count: int, tag: str, width: int = 32) -> float:
    async def lane(lane_id: int) -> None:
        for i in range(count // width):
            await check(f"{tag}{lane_id}:{i}")

    cpu = time.process_time()
    await asyncio.gather(*(lane(n) for n in range(width)))
    return (time.process_time() - cpu) / (count // width * width)


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def bench(url: str, checks: int, rounds: int) -> dict[str, dict[str, float]]:
    clients = {"own (cluster/resp.py)": own_client(url), "redis-py 8 + hiredis": redis_py(url)}
    latency: dict[str, list[float]] = {name: [] for name in clients}
    cpu1: dict[str, list[float]] = {name: [] for name in clients}
    cpu32: dict[str, list[float]] = {name: [] for name in clients}
    for check, _ in clients.values():  # warm: connections, scripts loaded
        await one_at_a_time(check, 200, "warm")
        await many_at_once(check, 320, "warm")
    # Small blocks in turn: a burst of load from elsewhere on a shared machine falls on
    # both clients alike, tails included.
    blocks = max(1, checks // BLOCK)
    for r in range(rounds):
        for b in range(blocks):
            for name, (check, _) in clients.items():
                samples, cpu = await one_at_a_time(check, BLOCK, f"r{r}:{b}:")
                latency[name] += samples
                cpu1[name].append(cpu)
        for name, (check, _) in clients.items():
            cpu32[name].append(await many_at_once(check, checks, f"m{r}"))
    for _, close in clients.values():
        await close()
    return {
        name: {
            "p50_us": pct(latency[name], 0.50) * 1e6,
            "p99_us": pct(latency[name], 0.99) * 1e6,
            "cpu_us": statistics.median(cpu1[name]) * 1e6,
            "cpu32_us": statistics.median(cpu32[name]) * 1e6,
        }
        for name in clients
    }


def report(results: dict[str, dict[str, float]], checks: int, rounds: int) -> str:
    own, other = results.values()
    lines = [
        f"check = EVALSHA of the slot script + ZREM, {checks} x {rounds} rounds per client,",
        f"in turns of {BLOCK}; wall per check one at a time (p50, p99), CPU per check at 1 and",
        "32 at once",
        "",
        f"  {'client':26s} {'p50':>9s} {'p99':>9s} {'CPU c=1':>9s} {'CPU c=32':>9s}",
    ]
    for name, r in results.items():
        lines.append(
            f"  {name:26s} {r['p50_us']:7.1f}us {r['p99_us']:7.1f}us "
            f"{r['cpu_us']:7.1f}us {r['cpu32_us']:7.1f}us"
        )
    lines.append(
        "  own / redis-py            "
        + " ".join(f"{own[k] / other[k]:8.2f}x" for k in ("p50_us", "p99_us", "cpu_us", "cpu32_us"))
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checks", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path)
    options = parser.parse_args()
    import uvloop

    with redis_server() as redis:
        results = uvloop.run(bench(redis.url, options.checks, options.rounds))
    text = report(results, options.checks, options.rounds)
    print(text)
    if options.out is not None:
        options.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
