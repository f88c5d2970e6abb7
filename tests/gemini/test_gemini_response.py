"""Non-streamed Gemini GenerateContentResponse -> Anthropic Message (gemini.response.reader)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hydra_proxy.canonical.message import tool_use_id
from hydra_proxy.canonical.tools import RAW_ARGUMENTS_KEY
from hydra_proxy.errors import ProxyError
from hydra_proxy.gemini.mapping import (
    ERROR_FINISH_REASONS,
    REFUSAL_FINISH_REASONS,
    stop_reason,
    usage,
)
from hydra_proxy.gemini.response.reader import message_from_gemini_response
from hydra_proxy.gemini.thought_signature import carried_thought_signature
from hydra_proxy.signature import verify_thinking
from support.gemini_fixtures import collapsed_response, load_json

KEY = b"k" * 32


def read(response: dict[str, Any], key: bytes = KEY) -> dict[str, Any]:
    return message_from_gemini_response(
        response, message_id="msg_test1", model="gemini-x", signing_key=key
    )


def first_part(response: dict[str, Any]) -> dict[str, Any]:
    part: dict[str, Any] = response["candidates"][0]["content"]["parts"][0]
    return part


@pytest.mark.parametrize(
    "name",
    [
        "vercel-google-text.json",
        "vercel-google-reasoning.json",
        "vercel-google-reasoning-gemini3.json",
    ],
)
def test_text_with_signature(name: str) -> None:
    recorded = load_json(name)
    message = read(recorded)
    part = first_part(recorded)
    assert [b["type"] for b in message["content"]] == ["thinking", "text"]
    thinking, text = message["content"]
    assert thinking["thinking"] == ""
    assert carried_thought_signature(thinking, KEY) == part["thoughtSignature"]
    assert text == {"type": "text", "text": part["text"]}
    assert message["stop_reason"] == "end_turn"
    assert message["stop_sequence"] is None
    meta = recorded["usageMetadata"]
    assert message["usage"] == {
        "input_tokens": meta["promptTokenCount"],
        "output_tokens": meta["candidatesTokenCount"] + meta["thoughtsTokenCount"],
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    assert message["id"] == "msg_test1" and message["model"] == "gemini-x"
    assert message["type"] == "message" and message["role"] == "assistant"


@pytest.mark.parametrize(
    "name", ["vercel-google-tool-call.json", "vercel-google-tool-call-gemini3.json"]
)
def test_function_call(name: str) -> None:
    recorded = load_json(name)
    message = read(recorded)
    part = first_part(recorded)
    assert "id" not in part["functionCall"]  # Gemini omitted the id
    thinking, call = message["content"]
    assert carried_thought_signature(thinking, KEY) == part["thoughtSignature"]
    assert call == {
        "type": "tool_use",
        "id": tool_use_id("msg_test1", 0),
        "name": "weather",
        "input": {"location": "San Francisco"},
    }
    assert call["id"] == "toolu_test1_0"
    assert message["stop_reason"] == "tool_use"  # Gemini said STOP
    assert read(recorded) == message  # deterministic: same reply, same ids


def test_thought_parts_become_one_signed_thinking_block() -> None:
    response = collapsed_response("pydantic-gemini25pro-stream-thought-parts.sse")
    parts = response["candidates"][0]["content"]["parts"]
    thoughts = [p["text"] for p in parts if p.get("thought")]
    answer = [p for p in parts if not p.get("thought")]
    assert len(thoughts) == 4 and "thoughtSignature" in answer[0]
    message = read(response)
    thinking = message["content"][0]
    assert thinking["type"] == "thinking"
    assert thinking["thinking"] == "".join(thoughts)
    assert carried_thought_signature(thinking, KEY) == answer[0]["thoughtSignature"]
    texts = message["content"][1:]
    assert all(b["type"] == "text" for b in texts)
    assert "".join(b["text"] for b in texts) == "".join(p["text"] for p in answer)
    assert message["stop_reason"] == "end_turn"
    assert message["usage"]["output_tokens"] == (
        response["usageMetadata"]["candidatesTokenCount"]
        + response["usageMetadata"]["thoughtsTokenCount"]
    )


def test_thoughts_without_a_signature_get_the_text_signature() -> None:
    response = collapsed_response("pydantic-gemini25pro-stream-thought-parts.sse")
    for part in response["candidates"][0]["content"]["parts"]:
        part.pop("thoughtSignature", None)
    thinking = read(response)["content"][0]
    assert verify_thinking(thinking["thinking"], thinking["signature"], KEY)
    assert read(response, key=b"")["content"][0]["signature"] == ""


def test_empty_trailing_text_with_signature() -> None:
    """Empty text parts make no block; one carrying a signature (as vercel-google-text.jsonl
    ends) makes the carrier block alone."""
    response = collapsed_response(
        "pydantic-gemini3pro-stream-function-call-thought-signature.2.sse"
    )
    message = read(response)
    assert [b["type"] for b in message["content"]] == ["text", "text"]
    assert "".join(b["text"] for b in message["content"]) == "The capital of Mexico is Mexico City."
    response["candidates"][0]["content"]["parts"].append({"text": "", "thoughtSignature": "QUJD"})
    blocks = read(response)["content"]
    assert blocks[-1]["type"] == "thinking"
    assert carried_thought_signature(blocks[-1], KEY) == "QUJD"


def test_call_ids_and_odd_args() -> None:
    response = copy.deepcopy(load_json("vercel-google-tool-call.json"))
    parts = response["candidates"][0]["content"]["parts"]
    parts[0]["functionCall"]["id"] = "call_abc-1"
    parts.append({"functionCall": {"name": "noargs"}})
    parts.append({"functionCall": {"name": "listargs", "args": [1, 2], "id": "bad id!"}})
    calls = [b for b in read(response)["content"] if b["type"] == "tool_use"]
    assert [c["id"] for c in calls] == ["call_abc-1", "toolu_test1_1", "toolu_test1_2"]
    assert calls[1]["input"] == {}
    assert calls[2]["input"] == {RAW_ARGUMENTS_KEY: "[1,2]"}


def test_other_parts_are_shown_not_dropped() -> None:
    response = copy.deepcopy(load_json("vercel-google-text.json"))
    response["candidates"][0]["content"]["parts"] = [
        {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}},
        {"inlineData": {"mimeType": "image/png", "data": "AAAA"}},
    ]
    assert [b["text"] for b in read(response)["content"]] == [
        "```python\nprint(1)\n```",
        "1\n",
        "[Gemini returned image/png output, which is not shown here.]",
    ]


@pytest.mark.parametrize(
    ("finish", "expected"),
    [
        ("STOP", "end_turn"),
        ("MAX_TOKENS", "max_tokens"),
        (None, "end_turn"),
        ("OTHER", "end_turn"),
        ("NEW_REASON", "end_turn"),
    ]
    + [(reason, "refusal") for reason in sorted(REFUSAL_FINISH_REASONS)],
)
def test_finish_reasons(finish: str | None, expected: str) -> None:
    response = copy.deepcopy(load_json("vercel-google-text.json"))
    if finish is None:
        del response["candidates"][0]["finishReason"]
    else:
        response["candidates"][0]["finishReason"] = finish
    assert read(response)["stop_reason"] == expected
    assert stop_reason(finish, True) == ("tool_use" if expected == "end_turn" else expected)


@pytest.mark.parametrize("finish", sorted(ERROR_FINISH_REASONS))
def test_lost_tool_calls_are_a_retryable_error(finish: str) -> None:
    response = copy.deepcopy(load_json("vercel-google-tool-call.json"))
    response["candidates"][0]["finishReason"] = finish
    response["candidates"][0]["finishMessage"] = "Malformed function call: print(x"
    with pytest.raises(ProxyError) as info:
        read(response)
    assert info.value.status == 500
    assert info.value.error_type == "api_error"
    assert finish in info.value.message and "print(x" in info.value.message


def test_blocked_prompt_is_a_refusal() -> None:
    response = {
        "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
        "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7},
    }
    message = read(response)
    assert message["content"] == []
    assert message["stop_reason"] == "refusal"
    assert message["usage"]["input_tokens"] == 7


def test_no_candidates_and_error_bodies() -> None:
    with pytest.raises(ProxyError) as info:
        read({"usageMetadata": {}})
    assert (info.value.status, info.value.error_type) == (500, "api_error")
    with pytest.raises(ProxyError) as info:
        read(load_json("vercel-google-429-retry-info.json"))
    assert (info.value.status, info.value.error_type) == (429, "rate_limit_error")


def test_usage_with_cache() -> None:
    meta = {
        "promptTokenCount": 1000,
        "cachedContentTokenCount": 800,
        "candidatesTokenCount": 20,
        "thoughtsTokenCount": 30,
        "totalTokenCount": 1050,
    }
    assert usage(meta) == {
        "input_tokens": 200,
        "output_tokens": 50,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 800,
    }
    assert usage(None) == {
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    assert (
        usage({"promptTokenCount": 5, "cachedContentTokenCount": 9})["cache_read_input_tokens"] == 5
    )
