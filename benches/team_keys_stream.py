"""A named key's checks against the proxy's whole CPU for a 250-event stream, end to end.

    .venv/bin/python benches/team_keys_stream.py [--streams 200] [--rounds 3]

One proxy process (one granian worker) on the embedded mock (250 text deltas per stream,
written at once), with both kinds of client key: a HYDRA_PROXY_KEYS key and a named key
with every limit set on it and on its team (budget, rpm, tpm, streams, model globs).
Rounds alternate the two keys, each round `--streams` Anthropic streams at 8 at a time;
the proxy's CPU (utime + stime of its process tree, /proc) per stream is compared. The
difference is within the machine's noise; the in-process cost of the checks
(benches/test_team_keys.py) over the proxy's CPU per stream is the ratio that holds.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import itertools
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benches")]

from hydra_proxy.mock import MockServer  # noqa: E402
from hydra_proxy.team import manage  # noqa: E402
from hydra_proxy.team.store import open_key_store  # noqa: E402
from loadlib_proc import cpu_delta, cpu_seconds, tree  # noqa: E402
from support.servers import ProxyServer  # noqa: E402

MODEL = "gpt-4o-2024-08-06"
BODY = orjson.dumps({"model": MODEL, "max_tokens": 1024, "stream": True,
                     "messages": [{"role": "user", "content": "Say hello."}]})  # fmt: skip
PLAIN = "plain-team-key-0123456789"


def stream(port: int, key: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", "/v1/messages", BODY, {"content-type": "application/json",
                 "anthropic-version": "2023-06-01", "x-api-key": key})  # fmt: skip
    response = conn.getresponse()
    size = len(response.read())
    conn.close()
    assert response.status == 200, response.status
    return size


def check_cost(every_limit: bool, rounds: int = 20, per_round: int = 500) -> float:
    """Microseconds of the checks per request, in process (the median round)."""
    import test_team_keys as micro
    from hydra_proxy.config import Provider
    from hydra_proxy.config.routes import Attempt, RequestTraits, Route, RouteDecision, RouteOptions
    from hydra_proxy.usage.record import Tokens

    keys, secret = micro._team_keys(Path(tempfile.mkdtemp()), every_limit)
    provider = Provider("openai", "chat", "https://api.openai.com/v1")
    decision = RouteDecision(Route("*", "openai"), 0, (Attempt(provider, MODEL, RouteOptions()),),
                             MODEL)  # fmt: skip
    ids = itertools.count()
    tokens = Tokens(20, 250)
    traits = RequestTraits(MODEL, max_tokens=1024, estimate=lambda: 12)  # the ingress's

    async def run() -> None:
        for _ in range(per_round):
            now = time.time()
            member = keys.authenticate(secret, now)
            routed = keys.checks.rights(member.key, decision)
            held = await keys.checks.admit(member.key, member.team, routed, traits,
                                           f"r{next(ids)}", now)  # fmt: skip
            await keys.settle(held, MODEL, tokens)

    loop = asyncio.new_event_loop()
    times = []
    for _ in range(rounds):
        started = time.process_time()
        loop.run_until_complete(run())
        times.append((time.process_time() - started) / per_round * 1e6)
    loop.close()
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--limits", choices=("every", "usual", "none"), default="every",
        help="the named key's limits: every one on it and its team, a budget and an rpm, none",
    )  # fmt: skip
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="hydra-keys-bench-"))
    ledger = f"sqlite:{home / 'usage.sqlite3'}"
    store = open_key_store(ledger)
    manage.set_team(store, "core", budget=1e9, rpm=10**9, tpm=10**12)
    by_name: dict[str, dict[str, Any]] = {
        "every": {"team": "core", "budget": 1e9, "rpm": 10**9, "tpm": 10**12,
                  "streams": 10**6, "models": "gpt-*,claude-*"},
        "usual": {"budget": 1e9, "rpm": 10**9},
        "none": {},
    }  # fmt: skip
    limits = by_name[args.limits]
    _, named = manage.create(store, "bench", time.time(), **limits)
    store.close()
    env = {"HYDRA_USAGE_LEDGER": ledger, "HYDRA_PROXY_KEYS": PLAIN}
    cpu: dict[str, list[float]] = {"plain": [], "named": []}
    with (
        MockServer("--chunks", "250") as mock,
        ProxyServer(mock.url + "/v1", env=env) as proxy,
        ThreadPoolExecutor(8) as pool,
    ):
        assert proxy.process is not None
        pids = tree(proxy.process.pid)
        for key in (PLAIN, named):  # warm-up: connections, caches, the period's seed
            list(pool.map(stream, [proxy.port] * 50, [key] * 50))
        for _ in range(args.rounds):
            for label, key in (("plain", PLAIN), ("named", named)):
                before = cpu_seconds(pids)
                list(pool.map(stream, [proxy.port] * args.streams, [key] * args.streams))
                cpu[label].append(cpu_delta(before, cpu_seconds(pids)) / args.streams * 1e6)
    every, usual = check_cost(True), check_cost(False)
    plain, named_cpu = statistics.median(cpu["plain"]), statistics.median(cpu["named"])
    print(f"proxy CPU per 250-event stream, HYDRA_PROXY_KEYS key: {plain:,.0f} us "
          f"(rounds: {', '.join(f'{v:,.0f}' for v in cpu['plain'])})")  # fmt: skip
    print(f"proxy CPU per 250-event stream, named key, limits {args.limits}: {named_cpu:,.0f} us "
          f"(rounds: {', '.join(f'{v:,.0f}' for v in cpu['named'])})")  # fmt: skip
    print(f"named / plain: {named_cpu / plain:.3f}")
    for label, cost in (("every limit on the key and its team", every),
                        ("a budget and an rpm on the key", usual)):  # fmt: skip
        print(f"the checks in process, {label}: {cost:.1f} us per request = "
              f"{cost / plain:.2%} of the stream's proxy CPU")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
