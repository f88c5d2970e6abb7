"""Usage records built from the recorded provider streams in tests/fixtures (real usage)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from hydra_proxy.usage.pricing import default_table
from hydra_proxy.usage.record import Tokens, UsageRecord
from hydra_proxy.usage.upstream_usage import tokens_from_anthropic, tokens_from_chat

FIXTURES = Path(__file__).parents[1] / "fixtures"


@dataclass(frozen=True)
class FixtureUsage:
    name: str
    protocol: str  # the upstream's: "anthropic" or "chat"
    model: str
    tokens: Tokens


def _events(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_bytes().splitlines():
        line = line.strip()
        if line.startswith(b"data:"):
            line = line[5:].strip()
        if line.startswith(b"{"):
            out.append(orjson.loads(line))
    return out


def read_fixture(path: Path) -> FixtureUsage | None:
    """The model and the final usage a recorded stream reports (None: it reports none)."""
    events = _events(path)
    if not events:
        return None
    if events[0].get("type") == "message_start":
        message = events[0]["message"]
        usage = dict(message.get("usage") or {})
        for event in events:
            if event.get("type") == "message_delta" and event.get("usage"):
                usage.update(event["usage"])
        return FixtureUsage(path.name, "anthropic", message["model"], tokens_from_anthropic(usage))
    final = [e for e in events if e.get("usage")]
    if not final:
        return None
    # Groq puts its usage under x_groq as well; the top-level one is Chat Completions'.
    return FixtureUsage(path.name, "chat", final[-1]["model"], tokens_from_chat(final[-1]["usage"]))


def fixture_usages() -> list[FixtureUsage]:
    found = []
    for folder in ("anthropic", "chat"):
        for path in sorted((FIXTURES / folder).iterdir()):
            if path.suffix in (".sse", ".jsonl"):
                usage = read_fixture(path)
                if usage is not None:
                    found.append(usage)
    return found


def make_records(count: int, seed: int, start: float = 1_764_000_000.0) -> list[UsageRecord]:
    """``count`` varied records over the fixtures' usage, priced with the shipped table."""
    rng = random.Random(seed)
    usages = fixture_usages()
    prices = default_table()
    records = []
    for i in range(count):
        u = usages[i % len(usages)]
        status = rng.choice((200, 200, 200, 200, 429, 502))
        records.append(
            UsageRecord(
                time=start + i * 37.5 + seed,
                request_id=f"req_{seed}_{i}",
                protocol="anthropic" if u.protocol == "chat" else "chat",
                route=rng.choice(("*", "claude-*", "gpt-*")),
                provider="openai" if u.protocol == "chat" else "anthropic",
                requested_model="claude-sonnet-4-5" if u.protocol == "chat" else "gpt-4o",
                target_model=u.model,
                input_tokens=u.tokens.input,
                output_tokens=u.tokens.output,
                cache_read_tokens=u.tokens.cache_read,
                cache_write_tokens=u.tokens.cache_write,
                reasoning_tokens=u.tokens.reasoning,
                cost_usd=prices.cost(u.model, u.tokens),
                latency_ms=rng.uniform(50, 9000),
                ttfb_ms=rng.uniform(20, 900) if status == 200 else None,
                status=status,
                error_type=None if status == 200 else "rate_limit_error",
                key_id=rng.choice(("a1b2c3d4", "0f0f0f0f", None)),
                stream=rng.random() < 0.8,
            )
        )
    return records
