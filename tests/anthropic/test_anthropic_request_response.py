"""Anthropic Messages on both sides of the proxy, not streamed: the request reader (a
Messages client's body is the canonical request), the writer for an Anthropic upstream, and
the reply reader and writer, on Claude Code's recorded requests and Anthropic's replies
(tests/fixtures/claude-code/, tests/fixtures/anthropic/)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from hydra_proxy.anthropic.request.reader import messages_request_from_anthropic
from hydra_proxy.anthropic.request.writer import AnthropicTarget, anthropic_request_from_messages
from hydra_proxy.anthropic.response.reader import message_from_anthropic_message
from hydra_proxy.anthropic.response.writer import anthropic_message_from_message
from hydra_proxy.errors import ProxyError
from hydra_proxy.signature import sign_thinking

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _claude_code(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((FIXTURES / "claude-code" / name).read_text())["body"]
    return body


def test_the_reader_keeps_the_clients_request() -> None:
    body = _claude_code("request-after-tool-result.json")
    assert messages_request_from_anthropic(body) is body


def test_the_reader_refuses_a_stream_that_is_no_boolean() -> None:
    body = {**_claude_code("request-plain.json"), "stream": "yes"}
    with pytest.raises(ProxyError) as raised:
        messages_request_from_anthropic(body)
    assert raised.value.status == 400 and "stream" in raised.value.message


def test_the_writer_sets_the_attempts_model_limit_and_stream() -> None:
    canonical = _claude_code("request-plain.json")
    before = copy.deepcopy(canonical)
    out = anthropic_request_from_messages(
        canonical, AnthropicTarget("claude-sonnet-4-5", max_tokens_limit=8192), stream=False
    )
    assert out["model"] == "claude-sonnet-4-5"
    assert out["max_tokens"] == min(canonical["max_tokens"], 8192)
    assert "stream" not in out
    assert out["messages"] == canonical["messages"]
    assert canonical == before  # the canonical request is shared by a chain's attempts
    streamed = anthropic_request_from_messages(canonical, AnthropicTarget("m"), stream=True)
    assert streamed["stream"] is True and streamed["max_tokens"] == canonical["max_tokens"]


def test_the_writer_sets_the_routes_effort() -> None:
    canonical = _claude_code("request-plain.json")
    out = anthropic_request_from_messages(
        canonical, AnthropicTarget("m", effort="none"), stream=True
    )
    assert out["thinking"] == {"type": "disabled"}


def test_the_writer_drops_only_the_thinking_this_proxy_signed() -> None:
    canonical = _claude_code("request-replaying-signed-thinking.json")
    turn = next(i for i, m in enumerate(canonical["messages"]) if m["role"] == "assistant")
    anthropic_signed = canonical["messages"][turn]["content"]
    proxy_signed = {"type": "thinking", "thinking": "a plan", "signature": ""}
    proxy_signed["signature"] = sign_thinking("a plan", b"key")
    canonical["messages"][turn] = {
        **canonical["messages"][turn],
        "content": [proxy_signed, *anthropic_signed],
    }
    out = anthropic_request_from_messages(canonical, AnthropicTarget("m"), stream=True)
    assert out["messages"][turn]["content"] == anthropic_signed
    assert canonical["messages"][turn]["content"][0] is proxy_signed


def test_the_reply_reader_names_the_model_the_client_asked_for() -> None:
    reply = json.loads(
        (
            FIXTURES / "anthropic" / "pydantic-nonstream-redacted-thinking.1.response.json"
        ).read_text()
    )["body"]
    message = message_from_anthropic_message(reply, model="claude-x")
    assert message == {**reply, "model": "claude-x"}
    assert anthropic_message_from_message(message) == message


@pytest.mark.parametrize("reply", [[], {"type": "error", "error": {}}, "text"])
def test_the_reply_reader_refuses_what_is_no_message(reply: Any) -> None:
    with pytest.raises(ProxyError) as raised:
        message_from_anthropic_message(reply, model="m")
    assert raised.value.status == 502
