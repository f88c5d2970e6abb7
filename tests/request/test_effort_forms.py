"""A route's effort in each upstream's form, at the writers (the end-to-end test is
test_route_effort): which effort a request asks, when the route's wins, and what Anthropic,
Gemini and the two OpenAI APIs are sent."""

from __future__ import annotations

from typing import Any

import pytest

from hydra_proxy.canonical.effort import anthropic_thinking, asked_effort, openai_effort
from hydra_proxy.chat.request.writer import ChatTarget, chat_request_from_messages
from hydra_proxy.config.presets import preset_row
from hydra_proxy.config.providers import build_provider
from hydra_proxy.config.routes import Attempt, RouteOptions
from hydra_proxy.gemini.request.writer import gemini_request_from_messages, gemini_target
from hydra_proxy.responses.request.writer import ResponsesTarget, responses_request_from_messages
from hydra_proxy.server.upstream_kinds import route_effort

HI = [{"role": "user", "content": "hi"}]


def body(**extra: Any) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 1000, "messages": HI, **extra}


@pytest.mark.parametrize(
    ("request_fields", "asked"),
    [
        ({}, None),
        ({"thinking": {"type": "disabled"}}, "none"),
        ({"thinking": {"type": "adaptive"}, "output_config": {"effort": "max"}}, "max"),
        ({"thinking": {"type": "enabled", "budget_tokens": 2048}}, "low"),
        ({"thinking": {"type": "enabled", "budget_tokens": 10000}}, "medium"),
        ({"thinking": {"type": "enabled", "budget_tokens": 30000}}, "high"),
    ],
)
def test_the_asked_effort(request_fields: dict[str, Any], asked: str | None) -> None:
    assert asked_effort(body(**request_fields)) == asked


def attempt(effort: str | None = None, effort_map: dict[str, str] | None = None) -> Attempt:
    row = preset_row("openai")
    assert row is not None
    options = RouteOptions(effort=effort, effort_map=tuple((effort_map or {}).items()))
    return Attempt(build_provider("openai", row, {}), "gpt-5", options)


def test_which_effort_the_route_sets() -> None:
    asked: list[str] = []

    def reads(value: str | None) -> Any:
        def read() -> str | None:
            asked.append("read")
            return value

        return read

    assert route_effort(attempt(), reads("high")) is None
    assert asked == []  # a route without effort does not read the request's
    assert route_effort(attempt("low"), reads("high")) == "low"
    mapped = attempt(effort_map={"max": "high"})
    assert route_effort(mapped, reads("max")) == "high"
    assert route_effort(mapped, reads("medium")) is None  # unmapped: the request's own
    assert route_effort(mapped, reads(None)) is None


def test_openai_names_max_xhigh() -> None:
    assert [openai_effort(e) for e in ("none", "low", "xhigh", "max")] == [
        "none", "low", "xhigh", "xhigh"]  # fmt: skip


def test_chat_and_responses_take_the_route_effort_whatever_the_request() -> None:
    thinking = body(thinking={"type": "enabled", "budget_tokens": 30000}, max_tokens=40000)
    chat = chat_request_from_messages(thinking, ChatTarget("m", effort="minimal"), stream=False)
    assert chat["reasoning_effort"] == "minimal"
    plain = chat_request_from_messages(body(), ChatTarget("m"), stream=False)
    assert "reasoning_effort" not in plain
    responses = responses_request_from_messages(
        body(), ResponsesTarget("m", reasoning=False, effort="high"), stream=False
    )
    assert responses["reasoning"] == {"effort": "high"} and "include" not in responses
    reasoning = responses_request_from_messages(
        thinking, ResponsesTarget("m", effort="max"), stream=False
    )
    assert reasoning["reasoning"] == {"summary": "auto", "effort": "xhigh"}


def test_anthropic_gets_a_budget_an_adaptive_effort_or_no_thinking() -> None:
    out = anthropic_thinking(body(temperature=0.2, top_k=5, top_p=0.5), "low")
    assert out["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert out["max_tokens"] == 2048 + 1000 and out["top_p"] == 0.95
    assert "temperature" not in out and "top_k" not in out
    adaptive = body(thinking={"type": "adaptive"}, output_config={"effort": "low"})
    assert anthropic_thinking(adaptive, "xhigh")["output_config"] == {"effort": "high"}
    off = anthropic_thinking(adaptive, "none")
    assert off["thinking"] == {"type": "disabled"} and "output_config" not in off
    assert adaptive["output_config"] == {"effort": "low"}  # the input is not modified


def test_anthropic_thinking_is_not_turned_on_where_anthropic_refuses_it() -> None:
    forced = body(tool_choice={"type": "any"}, tools=[{"name": "t", "input_schema": {}}])
    assert anthropic_thinking(forced, "high") == forced
    loop = body(messages=[
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "t",
                                           "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": "ok"}]},
    ])  # fmt: skip
    assert anthropic_thinking(loop, "high") == loop  # the loop has no thinking to replay
    thought = {"type": "thinking", "thinking": "hm", "signature": "sig"}
    loop["messages"][1]["content"].insert(0, thought)
    assert anthropic_thinking(loop, "high")["thinking"]["type"] == "enabled"


@pytest.mark.parametrize(
    ("model", "effort", "config"),
    [
        ("gemini-2.5-flash", "high", {"thinkingBudget": 24576}),
        ("gemini-2.5-flash", "max", {"thinkingBudget": 24576}),  # the model's maximum
        ("gemini-2.5-pro", "none", {"thinkingBudget": 128}),  # 2.5 Pro cannot stop
        ("gemini-3-pro-preview", "medium", {"thinkingLevel": "high"}),  # offers low, high
        ("gemini-3-flash-preview", "minimal", {"thinkingLevel": "minimal"}),
        ("gemini-3-flash-preview", "xhigh", {"thinkingLevel": "high"}),
    ],
)
def test_gemini_levels_and_budgets(model: str, effort: str, config: dict[str, Any]) -> None:
    out = gemini_request_from_messages(body(), gemini_target(model, effort=effort))
    assert out["generationConfig"]["thinkingConfig"] == config


def test_anthropic_budget_fits_under_the_attempt_limit() -> None:
    out = anthropic_thinking(body(max_tokens=1000), "high", 8000)
    assert out["max_tokens"] == 8000 and out["thinking"] == {
        "type": "enabled",
        "budget_tokens": 4000,
    }
    assert "thinking" not in anthropic_thinking(body(max_tokens=1000), "high", 1500)
