"""Micro benchmarks: what a named key's checks cost per request, against the translation
of a 250-event stream (the least CPU a streamed request costs the proxy).

Per request with a named key the server runs: `TeamKeys.authenticate` (a SHA-256 of the
presented secret, a dict lookup), `Checks.rights` (globs on the requested and upstream
names), `Checks.admit` (the counters: tpm, budget reservation for the key and its team,
a stream slot, rpm; the estimate is the request's input tokens, warm in the estimate's
cache of the ingress, which the relay reads too), and at the end `TeamKeys.settle` (the cost from the price table,
the reservations settled, the slot released, the tokens counted). Every limit is set, on
the key and its team: the dearest case. A request without a named key pays three
attribute tests (Exchange.authenticate_client, the admission hook, the settlement hook).

    python -m pytest benches/test_team_keys.py --benchmark-only
"""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from hydra_proxy.config import Provider
from hydra_proxy.config.routes import Attempt, RequestTraits, Route, RouteDecision, RouteOptions
from hydra_proxy.counters import LocalCounters
from hydra_proxy.team.checks import Checks
from hydra_proxy.team.keyring import Keyring
from hydra_proxy.team.record import Limits, NamedKey, Team
from hydra_proxy.team.secret import new_secret, secret_hash
from hydra_proxy.team.service import TeamKeys
from hydra_proxy.team.store import SqliteKeyStore
from hydra_proxy.tokens import estimate_input_tokens
from hydra_proxy.transducers import select
from hydra_proxy.usage.pricing import default_table
from hydra_proxy.usage.record import Tokens

EVENTS = 250
PER_ROUND = 200  # checks per round: one event loop run for many (its own cost is not ours)
MODEL = "gpt-4o-2024-08-06"
REQUEST: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "messages": [{"role": "user", "content": "Refactor this function and explain the change."}],
}


def chat_stream(events: int) -> bytes:
    """A Chat Completions stream of `events` text deltas, its usage and [DONE]."""
    chunks = []
    for i in range(events):
        delta = {"role": "assistant", "content": f"tok{i} "} if i == 0 else {"content": f"tok{i} "}
        chunks.append({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": MODEL,
                       "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})  # fmt: skip
    chunks.append({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": MODEL,
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 20, "completion_tokens": events}})  # fmt: skip
    body = b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks)
    return body + b"data: [DONE]\n\n"


def test_baseline_translate_250_events(benchmark: Any) -> None:
    body = chat_stream(EVENTS)
    cls = select().AnthropicViaChatStream

    def translate() -> int:
        t = cls("msg_bench", "claude-sonnet-4-5", 20, signing_key=b"bench-key")
        return len(t.feed(body)) + len(t.finish())

    assert benchmark(translate) > 0
    benchmark.extra_info["events"] = EVENTS


def _team_keys(tmp: Path, every_limit: bool = True) -> tuple[TeamKeys, bytes]:
    """A key with every limit set on it and its team, or (every_limit False) the usual one:
    a budget and a request rate on the key, no team."""
    secret = new_secret()
    team = Team("core", Limits(budget_usd=1e9, rpm=10**9, tpm=10**12))
    if every_limit:
        key = NamedKey(
            "alice", secret_hash(secret), 0.0, team="core",
            limits=Limits(budget_usd=1e9, rpm=10**9, tpm=10**12), streams=10**6,
            models=("claude-*", "gpt-*"),
        )  # fmt: skip
    else:
        key = NamedKey("alice", secret_hash(secret), 0.0,
                       limits=Limits(budget_usd=1e9, rpm=10**9))  # fmt: skip

    async def seed(column: str, name: str, since: float) -> float:
        return 0.0

    checks = Checks(LocalCounters(), default_table(), seed, allow_unpriced=False)
    keys = TeamKeys(SqliteKeyStore(tmp / "k.sqlite3"), Keyring([key], [team], 1), checks,
                    admin_key=None)  # fmt: skip
    return keys, secret.encode()


@pytest.mark.parametrize("limits", ["every-limit", "budget-and-rpm"])
def test_key_checks_per_request(benchmark: Any, tmp_path: Path, limits: str) -> None:
    """authenticate + rights + admit + settle (divide by PER_ROUND)."""
    keys, secret = _team_keys(tmp_path, every_limit=limits == "every-limit")
    provider = Provider("openai", "chat", "https://api.openai.com/v1")
    decision = RouteDecision(
        Route("claude-*", "openai"), 0, (Attempt(provider, MODEL, RouteOptions()),), REQUEST["model"]
    )  # fmt: skip
    # The ingress caches the request's input estimate, which the relay needs for its first
    # event anyway: the check takes it earlier, it does not count it again.
    counted = estimate_input_tokens(REQUEST)
    tokens = Tokens(20, EVENTS)
    ids = itertools.count()
    loop = asyncio.new_event_loop()

    # The ingress makes the traits (and caches the estimate): not the checks' cost.
    traits = RequestTraits(REQUEST["model"], max_tokens=1024, estimate=lambda: counted)

    async def requests() -> None:
        for _ in range(PER_ROUND):
            now = time.time()
            member = keys.authenticate(secret, now)
            routed = keys.checks.rights(member.key, decision)
            held = await keys.checks.admit(member.key, member.team, routed, traits,
                                           f"req{next(ids)}", now)  # fmt: skip
            await keys.settle(held, MODEL, tokens)

    loop.run_until_complete(requests())  # the period's seed, once
    try:
        benchmark.pedantic(lambda: loop.run_until_complete(requests()), rounds=60, iterations=1)
    finally:
        loop.close()
    benchmark.extra_info["checks_per_round"] = PER_ROUND
    spent, reserved = asyncio.run(keys.checks.counters.spent("key:alice:budget"))
    assert reserved == 0 and spent > 0  # every reservation was settled to a real cost
