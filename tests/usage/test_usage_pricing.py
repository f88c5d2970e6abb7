"""Usage records, upstream usage blocks and the price table."""

from __future__ import annotations

import orjson
import pytest

from hydra_proxy.usage.pricing import PriceTable, PricingError, default_table, usd
from hydra_proxy.usage.record import Tokens, UsageRecord, client_key_id
from hydra_proxy.usage.upstream_usage import (
    tokens_from_anthropic,
    tokens_from_chat,
    tokens_from_gemini,
    tokens_from_responses,
)
from support.usage_data import FIXTURES, fixture_usages, read_fixture


def test_fixture_usage_is_read_in_canonical_conventions() -> None:
    # DeepSeek reasoner: 18 prompt tokens none cached, 219 completion of which 205 reasoning.
    deepseek = read_fixture(FIXTURES / "chat" / "vercel-deepseek-reasoning-content.jsonl")
    assert deepseek is not None
    assert deepseek.model == "deepseek-reasoner"
    assert deepseek.tokens == Tokens(input=18, output=219, cache_read=0, reasoning=205)
    # Anthropic: message_start usage merged with message_delta's final output count.
    basic = read_fixture(FIXTURES / "anthropic" / "sdkpy-basic-text.sse")
    assert basic is not None
    assert basic.tokens == Tokens(input=11, output=6)
    assert len(fixture_usages()) >= 10


def _last_usage(name: str, key: str) -> dict[str, object]:
    found = None
    folder = "gemini" if name.startswith("vercel-google") else "responses"
    for line in (FIXTURES / folder / name).read_bytes().splitlines():
        line = line.removeprefix(b"data:").strip()
        if line.startswith(b"{"):
            event = orjson.loads(line)
            event = event.get("response", event)  # Responses: response.completed
            if isinstance(event, dict) and event.get(key):
                found = event[key]
    assert isinstance(found, dict), name
    return found


def test_responses_and_gemini_usage_from_recorded_streams() -> None:
    # gpt-4o over the Responses API, a prompt-cache hit: 1390 of 1515 input tokens cached.
    cached = tokens_from_responses(_last_usage("dd-gpt4o-stream-cached-tokens.sse", "usage"))
    assert cached == Tokens(input=125, output=8, cache_read=1390)
    # gpt-5 reasoning: 448 of the 469 output tokens spent thinking.
    gpt5 = _last_usage("pydantic-gpt5-stream-reasoning-function-call.sse", "usage")
    assert tokens_from_responses(gpt5) == Tokens(input=53, output=469, reasoning=448)
    # Gemini 3: 23 candidate tokens plus 302 thought tokens (total 334 = 9 + 23 + 302).
    gemini = _last_usage("vercel-google-reasoning-gemini3.jsonl", "usageMetadata")
    assert gemini["totalTokenCount"] == 334
    assert tokens_from_gemini(gemini) == Tokens(input=9, output=325, reasoning=302)
    price = default_table().cost("gemini-3-pro-preview", tokens_from_gemini(gemini))
    assert price == pytest.approx((9 * 2.0 + 325 * 12.0) / 1e6)
    assert tokens_from_gemini({"promptTokenCount": 100, "cachedContentTokenCount": 60}) == Tokens(
        input=40, cache_read=60
    )


def test_chat_cached_tokens_leave_the_input() -> None:
    openai = {"prompt_tokens": 1000, "completion_tokens": 50,
              "prompt_tokens_details": {"cached_tokens": 800}}  # fmt: skip
    assert tokens_from_chat(openai) == Tokens(input=200, output=50, cache_read=800)
    deepseek = {"prompt_tokens": 100, "completion_tokens": 5, "prompt_cache_hit_tokens": 64,
                "prompt_cache_miss_tokens": 36}  # fmt: skip
    assert tokens_from_chat(deepseek) == Tokens(input=36, output=5, cache_read=64)
    # Nonsense never turns into tokens: negative, bool, more cached than prompted.
    bad = {"prompt_tokens": 10, "completion_tokens": True,
           "prompt_tokens_details": {"cached_tokens": 99}}  # fmt: skip
    assert tokens_from_chat(bad) == Tokens(input=0, output=0, cache_read=10)
    anthropic = {"input_tokens": 3, "output_tokens": 9, "cache_read_input_tokens": 500,
                 "cache_creation_input_tokens": 40}  # fmt: skip
    assert tokens_from_anthropic(anthropic) == Tokens(3, 9, 500, 40)


def test_shipped_prices() -> None:
    table = default_table()
    # Sonnet 4.5: $3 in, $15 out, $0.30 cache read, $3.75 cache write per million.
    cost = table.cost(
        "claude-sonnet-4-5-20250929", Tokens(1_000_000, 1_000_000, 1_000_000, 1_000_000)
    )
    assert cost == pytest.approx(3 + 15 + 0.30 + 3.75)
    # The most specific pattern wins: opus 4.1 is the old tier, opus 4.5 the new one.
    assert table.cost("claude-opus-4-1-20250805", Tokens(input=1_000_000)) == pytest.approx(15)
    assert table.cost("claude-opus-4-5-20251101", Tokens(input=1_000_000)) == pytest.approx(5)
    # gpt-4o-mini is not gpt-4o; dated snapshots and provider prefixes resolve.
    assert table.cost("gpt-4o-mini-2024-07-18", Tokens(output=1_000_000)) == pytest.approx(0.60)
    assert table.cost("gpt-4o-2024-08-06", Tokens(output=1_000_000)) == pytest.approx(10)
    assert table.cost("openai/gpt-4.1", Tokens(input=1_000_000)) == pytest.approx(2)
    # Groq's Kimi is priced as Groq sells it, Moonshot's own as Moonshot does.
    assert table.cost("moonshotai/kimi-k2-instruct-0905", Tokens(input=1_000_000)) == pytest.approx(
        1.0
    )
    assert table.cost("kimi-k2-0905-preview", Tokens(input=1_000_000)) == pytest.approx(0.60)
    # DeepSeek: cache hits at a tenth; reasoning billed as output, never twice.
    tokens = Tokens(input=18, output=219, reasoning=205, cache_read=100)
    assert table.cost("deepseek-reasoner", tokens) == pytest.approx(
        (18 * 0.28 + 100 * 0.028 + 219 * 0.42) / 1e6
    )
    for model in ("gemini-2.5-pro", "gemini-3-pro-preview", "glm-4.6", "o4-mini", "gpt-5.1"):
        assert table.lookup(model) is not None, model
    assert all(p.as_of for p in table.prices)


def test_unknown_model_has_no_cost_not_zero() -> None:
    table = default_table()
    assert table.cost("my-local-llama", Tokens(input=100, output=100)) is None
    assert table.cost("gpt-4o-mini", Tokens()) == 0.0


def test_overrides_win_and_extend() -> None:
    table = default_table().with_overrides(
        {
            "my-local-*": {"input": 0, "output": 0},
            "gpt-4o": {"input": 1.0, "output": 2.0, "cache_read": 0.1, "as_of": "2026-12-01"},
        }
    )
    assert table.cost("my-local-llama", Tokens(input=5)) == 0.0
    assert table.cost("gpt-4o", Tokens(1_000_000, 1_000_000, 1_000_000)) == pytest.approx(3.1)
    assert default_table().cost("gpt-4o", Tokens(input=1_000_000)) == pytest.approx(2.5)
    # A kind left out bills as the kind it is part of: cache reads as input.
    assert table.cost("my-local-x", Tokens(cache_read=10)) == 0.0
    with pytest.raises(PricingError, match="needs 'output'"):
        default_table().with_overrides({"x": {"input": 1}})
    with pytest.raises(PricingError, match="unknown keys"):
        default_table().with_overrides({"x": {"input": 1, "output": 1, "cached": 1}})
    with pytest.raises(PricingError, match="must be a number"):
        default_table().with_overrides({"x": {"input": "1", "output": 1}})
    with pytest.raises(PricingError, match="match"):
        PriceTable.from_toml('[[model]]\nmatch = "x"\ninput = 1\noutput = 1\n')


def test_key_id_is_short_stable_and_not_the_key() -> None:
    key = "sk-hydra-team-secret-0123456789"
    kid = client_key_id(key)
    assert kid is not None and len(kid) == 8 and int(kid, 16) >= 0
    assert kid == client_key_id(key.encode())
    assert kid not in key and client_key_id("sk-other") != kid
    assert client_key_id(None) is None and client_key_id("") is None


def test_record_error_and_tokens() -> None:
    rec = UsageRecord(0.0, "r", "chat", "*", "p", "a", "b", 1, 2, 3, 4, 1, status=529)
    assert rec.tokens == Tokens(1, 2, 3, 4, 1) and rec.tokens.total == 10
    assert rec.is_error
    assert not UsageRecord(0.0, "r", "chat", "*", "p", "a", "b").is_error


@pytest.mark.parametrize(
    ("value", "text"),
    [(0, "$0.00"), (0.0004, "$0.0004"), (0.00041, "$0.00041"), (0.0059, "$0.0059"),
     (0.05, "$0.05"), (0.25, "$0.25"), (1.5, "$1.50"), (7.05, "$7.05"), (1234.5, "$1,234.50")],
)  # fmt: skip
def test_money_keeps_the_digits_that_tell_it_from_nothing(value: float, text: str) -> None:
    assert usd(value) == text
