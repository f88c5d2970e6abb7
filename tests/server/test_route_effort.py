"""A route's `effort` reaches every upstream kind in that provider's own form, end to end: a
real proxy process in front of the mock upstream, which records what it received."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from hydra_proxy.mock import MockServer
from support.every_kind import EVERY_KIND
from support.servers import ProxyServer

CONFIG = (
    EVERY_KIND
    + """
[[routes]]
match = "to-chat"
provider = "chat"
model = "gpt-5"
effort = "low"

[[routes]]
match = "to-chat-mapped"
provider = "chat"
effort = {{ high = "minimal", max = "max" }}

[[routes]]
match = "to-responses"
provider = "responses"
model = "gpt-5.1-codex"
effort = "max"

[[routes]]
match = "to-claude"
provider = "claude"
model = "claude-sonnet-4-5"
effort = "high"

[[routes]]
match = "to-claude-off"
provider = "claude"
effort = "none"

[[routes]]
match = "to-gemini-budget"
provider = "gemini"
model = "gemini-2.5-flash"
effort = "medium"

[[routes]]
match = "to-gemini-level"
provider = "gemini"
model = "gemini-3-pro-preview"
effort = "low"
"""
)


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(scope="module")
def proxy(mock: MockServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyServer]:
    config = Path(tmp_path_factory.mktemp("effort")) / "hydra.toml"
    config.write_text(CONFIG.format(url=mock.url), encoding="utf-8")
    env = {"UP_KEY": "sk-upstream-key-for-effort"}
    with ProxyServer(mock.url + "/v1", "--config", str(config), env=env) as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(mock: MockServer) -> None:
    mock.clear()


def claude(proxy: ProxyServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=proxy.url, api_key="sk-client", max_retries=0)


def received(mock: MockServer) -> dict[str, Any]:
    models = [r for r in mock.requests() if r["method"] == "POST"]
    assert len(models) == 1, models
    body: dict[str, Any] = models[0]["body"]
    return body


def ask(proxy: ProxyServer, model: str, **extra: Any) -> None:
    message = claude(proxy).messages.create(
        model=model, max_tokens=2000, messages=[{"role": "user", "content": "hi"}], **extra
    )
    assert message.content


def test_chat_upstream_gets_reasoning_effort(proxy: ProxyServer, mock: MockServer) -> None:
    # The provider has no `reasoning` column: the route's effort is sent all the same.
    ask(proxy, "to-chat")
    body = received(mock)
    assert body["model"] == "gpt-5" and body["reasoning_effort"] == "low"


def test_chat_upstream_effort_map(proxy: ProxyServer, mock: MockServer) -> None:
    thinking = {"type": "enabled", "budget_tokens": 20000}
    ask(proxy, "to-chat-mapped", thinking=thinking, extra_body={"max_tokens": 30000})
    assert received(mock)["reasoning_effort"] == "minimal"  # high (the budget) -> minimal
    mock.clear()
    ask(proxy, "to-chat-mapped")
    assert "reasoning_effort" not in received(mock)  # nothing asked, nothing mapped


def test_chat_client_passthrough_gets_the_route_effort(
    proxy: ProxyServer, mock: MockServer
) -> None:
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-client", max_retries=0)
    client.chat.completions.create(
        model="to-chat-mapped",
        messages=[{"role": "user", "content": "hi"}],
        reasoning_effort="high",
    )
    body = received(mock)
    assert body["reasoning_effort"] == "minimal" and body["model"] == "to-chat-mapped"


def test_responses_upstream_gets_reasoning_effort(proxy: ProxyServer, mock: MockServer) -> None:
    ask(proxy, "to-responses")
    body = received(mock)
    # `max` is not an OpenAI effort: its nearest, xhigh.
    assert body["model"] == "gpt-5.1-codex" and body["reasoning"]["effort"] == "xhigh"


def test_responses_client_passthrough_gets_the_route_effort(
    proxy: ProxyServer, mock: MockServer
) -> None:
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-client", max_retries=0)
    client.responses.create(
        model="to-responses",
        input="hi",
        reasoning={"effort": "low", "summary": "auto"},
        store=False,
    )
    body = received(mock)
    assert body["reasoning"] == {"effort": "xhigh", "summary": "auto"}


def test_anthropic_upstream_gets_a_thinking_budget(proxy: ProxyServer, mock: MockServer) -> None:
    ask(proxy, "to-claude", extra_body={"temperature": 0.3})
    body = received(mock)
    assert body["model"] == "claude-sonnet-4-5"
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16384}
    # Room kept for the answer; temperature goes (Anthropic refuses it with thinking).
    assert body["max_tokens"] == 16384 + 2000 and "temperature" not in body


def test_anthropic_upstream_adaptive_thinking_takes_the_effort(
    proxy: ProxyServer, mock: MockServer
) -> None:
    ask(
        proxy,
        "to-claude",
        extra_body={"thinking": {"type": "adaptive"}, "output_config": {"effort": "low"}},
    )
    body = received(mock)
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": "high"}


def test_anthropic_upstream_effort_none_turns_thinking_off(
    proxy: ProxyServer, mock: MockServer
) -> None:
    ask(proxy, "to-claude-off", thinking={"type": "enabled", "budget_tokens": 1024})
    assert received(mock)["thinking"] == {"type": "disabled"}


def test_gemini_budget_model_gets_a_thinking_budget(proxy: ProxyServer, mock: MockServer) -> None:
    ask(proxy, "to-gemini-budget")
    request = next(r for r in mock.requests() if r["method"] == "POST")
    assert "gemini-2.5-flash" in request["path"]
    assert request["body"]["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 8192}


def test_gemini_level_model_gets_a_thinking_level(proxy: ProxyServer, mock: MockServer) -> None:
    ask(proxy, "to-gemini-level", thinking={"type": "enabled", "budget_tokens": 30000},
        extra_body={"max_tokens": 40000})  # fmt: skip
    config = received(mock)["generationConfig"]["thinkingConfig"]
    assert config == {"thinkingLevel": "low", "includeThoughts": True}


def test_codex_client_on_chat_gets_the_route_effort(proxy: ProxyServer, mock: MockServer) -> None:
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-client", max_retries=0)
    client.responses.create(model="to-chat", input="hi", reasoning={"effort": "high"}, store=False)
    body = received(mock)
    assert body["model"] == "gpt-5" and body["reasoning_effort"] == "low"
