"""Routing: request traits from real Claude Code requests, ordered trait rules, fallback
chains, route options, the model listing and the not-found message."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from hydra_proxy.config import (
    ChainLink,
    RequestTraits,
    Route,
    Settings,
    environment,
    load,
    models_listing,
    not_found_message,
    request_traits,
    should_fall_back,
)
from hydra_proxy.config.routes import BACKGROUND_MAX_TOKENS, RouteOptions

FIXTURES = Path(__file__).parent.parent / "fixtures" / "claude-code"


def captured(name: str) -> dict[str, Any]:
    return orjson.loads((FIXTURES / name).read_bytes())  # type: ignore[no-any-return]


def traits_of(name: str, **kwargs: Any) -> RequestTraits:
    record = captured(name)
    return request_traits(record["body"], headers=record["headers"], **kwargs)


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("HYDRA_") or name.endswith("_API_KEY"):
            monkeypatch.delenv(name)


def settings_from(tmp_path: Path, text: str, **flags: Any) -> Settings:
    config = tmp_path / "hydra.toml"
    config.write_text(text, encoding="utf-8")
    return load({"config": str(config), **flags}, environment({}, dotenv=tmp_path / "none"))


# --- traits ---------------------------------------------------------------------------


def test_subagent_trait_from_the_captured_subagent_request() -> None:
    sub = traits_of("request-subagent.json")
    assert sub.subagent and sub.model == "claude-sonnet-4-5"
    assert sub.tools and sub.thinking and not sub.images and not sub.background
    for lead in ("request-lead-of-subagent.json", "request-plain.json"):
        assert not traits_of(lead).subagent, lead


def test_either_subagent_signal_alone_marks_a_subagent() -> None:
    record = captured("request-subagent.json")
    body, headers = record["body"], record["headers"]
    # Without the billing block (CLAUDE_CODE_ATTRIBUTION_HEADER=false): the header.
    no_billing = {**body, "system": body["system"][1:]}
    assert request_traits(no_billing, headers=headers).subagent
    # ASGI header pairs are accepted as well.
    pairs = [(k.encode(), v.encode()) for k, v in headers.items()]
    assert request_traits(no_billing, headers=pairs).subagent
    # Without the header: the billing marker.
    assert request_traits(body).subagent
    assert not request_traits(no_billing).subagent


def test_thinking_effort_tools_and_images() -> None:
    plain = traits_of("request-plain.json")
    assert plain.thinking and plain.effort == "medium" and plain.tools
    assert plain.max_tokens == 128000 and not plain.background and not plain.images
    body = copy.deepcopy(captured("request-after-tool-result.json")["body"])
    assert not request_traits(body).images
    # An image inside a tool_result counts (a Read of a screenshot).
    result = next(
        b
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    )
    result["content"] = [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}
    ]
    assert request_traits(body).images
    no_thinking = {**body, "thinking": {"type": "disabled"}}
    assert not request_traits(no_thinking).thinking


def test_background_is_a_tool_less_small_call() -> None:
    title = {
        "model": "claude-haiku-4-5",
        "max_tokens": 512,
        "messages": [{"role": "user", "content": "title?"}],
    }
    assert request_traits(title).background
    assert not request_traits({**title, "max_tokens": BACKGROUND_MAX_TOKENS + 1}).background
    tools = [{"name": "Bash", "input_schema": {"type": "object"}}]
    assert not request_traits({**title, "tools": tools}).background


def test_the_token_estimate_is_computed_only_when_a_route_needs_it() -> None:
    calls: list[int] = []

    def estimate() -> int:
        calls.append(1)
        return 90_000

    request = captured("request-plain.json")["body"]
    traits = request_traits(request, estimate=estimate)
    plain = Route("claude-*", "anthropic")
    assert plain.applies(traits) and calls == []
    # A rule whose other conditions fail never asks for it either.
    assert not Route("claude-*", "deepseek", subagent=True, long_context=1).applies(traits)
    assert calls == []
    long = Route("claude-*", "gemini", long_context=60_000)
    assert long.applies(traits) and long.applies(traits) and calls == [1]  # once
    assert not Route("claude-*", "gemini", long_context=100_000).applies(traits)
    # The default estimate is the proxy's count of the real request.
    assert request_traits(request).input_tokens > 1000


# --- decisions --------------------------------------------------------------------------

TEAM = """
[providers.deepseek]
api_key_env = ["DEEPSEEK_KEY_1", "DEEPSEEK_KEY_2"]

[providers.qwen]
preset = "openrouter"
api_key_env = "OPENROUTER_API_KEY"

[[routes]]
name = "background"
match = "*haiku*"
provider = "deepseek"
model = "deepseek-chat"
spoof_model = "claude-haiku-4-5"
fallback = [{ provider = "qwen", model = "qwen/qwen3-coder" }, "ollama"]

[[routes]]
name = "subagents"
match = "claude-*"
subagent = true
provider = ["qwen", "deepseek"]
model = "qwen/qwen3-coder"
max_tokens_limit = 16000
effort = { max = "high", xhigh = "high" }

[[routes]]
name = "long"
match = "claude-*"
long_context = 150000
provider = "gemini"
model = "gemini-2.5-pro"
context_window = 1048576

[[routes]]
name = "lead"
match = "claude-*"
provider = "anthropic"

[[routes]]
match = "gpt-5*"
client = "chat"
provider = "openai-reasoning"
"""


@pytest.mark.usefixtures("no_keys")
def test_a_team_routes_by_name_and_traits(tmp_path: Path) -> None:
    settings = settings_from(tmp_path, TEAM)

    def route(traits: RequestTraits) -> tuple[str, list[tuple[str, str]]]:
        decision = settings.decide(traits)
        assert decision is not None
        return decision.label, [(a.provider.name, a.model) for a in decision.attempts]

    lead = traits_of("request-plain.json", estimate=lambda: 10_000)
    assert route(lead) == ("lead", [("anthropic", "claude-opus-5-5")])
    sub = traits_of("request-subagent.json", estimate=lambda: 10_000)
    assert route(sub) == (
        "subagents",
        [("qwen", "qwen/qwen3-coder"), ("deepseek", "qwen/qwen3-coder")],
    )
    haiku = RequestTraits("claude-haiku-4-5", max_tokens=512)
    assert route(haiku) == (
        "background",
        [("deepseek", "deepseek-chat"), ("qwen", "qwen/qwen3-coder"), ("ollama", "deepseek-chat")],
    )
    long = traits_of("request-plain.json", estimate=lambda: 200_000)
    assert route(long) == ("long", [("gemini", "gemini-2.5-pro")])
    # The client protocol: gpt-5 from a Chat client goes to the reasoning preset; from an
    # Anthropic client nothing claims it, so the target provider (openai) does.
    assert route(RequestTraits("gpt-5.1", client="chat")) == (
        "routes[4]",
        [("openai-reasoning", "gpt-5.1")],
    )
    assert route(RequestTraits("gpt-5.1")) == ("default", [("openai", "gpt-5.1")])


@pytest.mark.usefixtures("no_keys")
def test_route_options_reach_every_attempt(tmp_path: Path) -> None:
    settings = settings_from(tmp_path, TEAM)
    decision = settings.decide(traits_of("request-subagent.json"))
    assert decision is not None
    qwen, deepseek = decision.attempts
    assert qwen.options is deepseek.options
    assert qwen.options.max_tokens_limit == 16000 and deepseek.max_tokens_limit == 16000
    assert qwen.options.map_effort("max") == "high"
    assert qwen.options.map_effort("medium") == "medium"  # unmapped: as requested
    assert qwen.options.map_effort(None) is None
    assert RouteOptions(effort="low").map_effort("max") == "low"
    haiku = settings.decide(RequestTraits("claude-haiku-4-5", max_tokens=512))
    assert haiku is not None
    assert haiku.reported_model == "claude-haiku-4-5"
    # No route clamp: the provider's own (the deepseek preset's 8192).
    assert haiku.attempts[0].max_tokens_limit == 8192


def test_legacy_resolve_and_route_construction_still_work() -> None:
    providers = load(env={}).providers
    settings = Settings(
        providers=providers,
        routes=(Route("claude-*", "anthropic"), Route("*", "ollama", subagent=True)),
        target_provider="openai",
        target_model="gpt-x",
        spoof_model="claude-spoof",
    )
    resolved = settings.resolve("claude-opus-4-1")
    assert resolved is not None and resolved[0].name == "anthropic"
    resolved = settings.resolve("qwen3")
    assert resolved is not None
    provider, route = resolved
    # The name alone never satisfies a trait rule: the default route.
    assert (
        provider.name == "openai" and route.model == "gpt-x" and route.spoof_model == "claude-spoof"
    )
    assert Settings(providers={}).resolve("x") is None
    assert Route("claude-*", "anthropic").chain == (ChainLink("anthropic"),)


def test_fallback_statuses() -> None:
    assert should_fall_back(None) and should_fall_back(429)
    assert should_fall_back(500) and should_fall_back(503) and should_fall_back(529)
    for status in (400, 401, 403, 404, 413, 422):
        assert not should_fall_back(status), status


# --- listing ----------------------------------------------------------------------------


@pytest.mark.usefixtures("no_keys")
def test_models_listing_and_not_found(tmp_path: Path) -> None:
    settings = settings_from(
        tmp_path,
        """
[[routes]]
match = "claude-haiku-4-5"
provider = "deepseek"
model = "deepseek-chat"

[[routes]]
match = "big"
provider = "gemini"
model = "gemini-2.5-pro"
max_output = 32000

[[routes]]
match = "claude-*"
subagent = true
provider = "ollama"

[[routes]]
match = "qwen*"
provider = "ollama"
""",
        provider="anthropic",
        model="claude-sonnet-4-5",
    )
    listing = {m.id: m for m in models_listing(settings)}
    assert list(listing) == ["claude-sonnet-4-5", "deepseek-chat", "gemini-2.5-pro"]
    # Context window and max output: the route's, else the provider preset's.
    assert listing["deepseek-chat"].context_window == 131072
    assert listing["deepseek-chat"].max_output == 8192
    assert listing["gemini-2.5-pro"].max_output == 32000
    assert listing["gemini-2.5-pro"].context_window == 1048576
    assert listing["claude-sonnet-4-5"].provider == "anthropic"
    assert listing["claude-sonnet-4-5"].context_window is None  # unknown: not invented
    message = not_found_message(settings, "gpt-4.1")
    assert message.startswith("model: no route for model 'gpt-4.1'")
    assert "claude-sonnet-4-5, deepseek-chat, gemini-2.5-pro" in message
    assert "patterns: claude-*, qwen*" in message
