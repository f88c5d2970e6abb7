"""OpenAI Chat stream -> Anthropic Messages SSE, on both implementations.

The translated recordings are fed to the official `anthropic` SDK's stream accumulator,
which must rebuild the content, tool inputs, stop reason and usage that the OpenAI stream
carried (rebuilt here independently from the recording itself).
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2 as httpx
import orjson
import pytest

from hydra_proxy.signature import verify_thinking
from support import anthropic_grammar
from support.implementations import (
    CHAT_STREAMS,
    anthropic_via_chat_class,
    feed_all,
    recorded_chat_stream,
)

KEY = b"test-key"


def translate(impl: str, data: bytes, **kwargs: Any) -> tuple[bytes, Any]:
    cls = anthropic_via_chat_class(impl)
    options = {"signing_key": KEY, **kwargs}
    t = cls("msg_test", "claude-sonnet-4-5", 17, **options)
    return feed_all(t, data), t


def openai_truth(data: bytes) -> dict[str, Any]:
    """What an OpenAI client would rebuild from the recording (the reference)."""
    text, reasoning, tools, finish, usage = [], [], {}, None, None
    for line in data.splitlines():
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        if chunk.get("error"):
            return {"error": chunk["error"]}
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            text.append(delta.get("content") or "")
            text.append(delta.get("refusal") or "")
            reasoning.append(delta.get("reasoning_content") or delta.get("reasoning") or "")
            for call in delta.get("tool_calls") or []:
                entry = tools.setdefault(
                    call.get("index", len(tools)), {"id": None, "name": None, "args": ""}
                )
                entry["id"] = entry["id"] or call.get("id")
                fn = call.get("function") or {}
                entry["name"] = entry["name"] or fn.get("name")
                entry["args"] += fn.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    return {
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "tools": [(t["id"], t["name"], json.loads(t["args"] or "{}")) for t in tools.values()],
        "finish": finish,
        "usage": usage,
    }


def sdk_final_message(sse: bytes) -> anthropic.types.Message:
    """Run the official SDK's streaming helper over `sse` as if it came from the API."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=sse)

    client = anthropic.Anthropic(
        api_key="k",
        base_url="http://proxy.test",
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )
    with client.messages.stream(
        model="claude-hydra-test", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        for _ in stream:
            pass
        return stream.get_final_message()


STOP = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}


@pytest.mark.parametrize("name", CHAT_STREAMS)
def test_sdk_rebuilds_every_recording(impl: str, name: str) -> None:
    data = recorded_chat_stream(name)
    out, t = translate(impl, data)
    truth = openai_truth(data)
    if "error" in truth:
        with pytest.raises(anthropic.APIStatusError, match=truth["error"]["message"]):
            sdk_final_message(out)
        assert not t.complete and t.error is not None
        return
    message = sdk_final_message(out)
    blocks = [b.model_dump() for b in message.content]
    text = "".join(b["text"] for b in blocks if b["type"] == "text")
    thinking = "".join(b["thinking"] for b in blocks if b["type"] == "thinking")
    tools = [(b["id"], b["name"], b["input"]) for b in blocks if b["type"] == "tool_use"]
    assert text == truth["text"]
    assert thinking == truth["reasoning"]
    assert tools == truth["tools"]
    expected_stop = STOP[truth["finish"]]
    if truth["tools"] and expected_stop == "end_turn":
        expected_stop = "tool_use"
    assert message.stop_reason == expected_stop
    assert message.stop_sequence is None
    for block in blocks:
        if block["type"] == "thinking":
            assert verify_thinking(block["thinking"], block["signature"], KEY)
    usage = truth["usage"]
    if usage is not None:
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or usage.get(
            "prompt_cache_hit_tokens", 0
        )
        assert message.usage.input_tokens == usage["prompt_tokens"] - cached
        assert message.usage.cache_read_input_tokens == cached
        assert message.usage.output_tokens == usage["completion_tokens"]
    else:
        assert message.usage.input_tokens == 17  # the estimate stands
    anthropic_grammar.check(out)


def lines(*chunks: Any, done: bool = True) -> bytes:
    body = b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks)
    return body + (b"data: [DONE]\n\n" if done else b"")


def delta(d: dict[str, Any], finish: str | None = None, index: int = 0) -> dict[str, Any]:
    return {"choices": [{"index": index, "delta": d, "finish_reason": finish}]}


def test_message_start_first_even_before_any_event(impl: str) -> None:
    t = anthropic_via_chat_class(impl)("msg_a", "claude-x", 99)
    first = t.feed(b": OPENROUTER PROCESSING\n\n")
    assert first.startswith(b"event: message_start\n")
    assert b'"input_tokens":99' in first
    assert t.ping() == b'event: ping\ndata: {"type":"ping"}\n\n'


def test_usage_waits_for_the_chunk_after_finish(impl: str) -> None:
    data = lines(
        delta({"content": "hi"}),
        delta({}, "stop"),
        {
            "choices": [],
            "usage": {
                "prompt_tokens": 50,
                "completion_tokens": 7,
                "prompt_tokens_details": {"cached_tokens": 20},
            },
        },
    )
    out, t = translate(impl, data)
    rebuilt = anthropic_grammar.check(out)
    assert rebuilt.usage == {
        "input_tokens": 30,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 20,
        "output_tokens": 7,
    }
    assert t.usage == (30, 20, 7)


def test_missing_done_after_finish_is_complete(impl: str) -> None:
    out, t = translate(impl, lines(delta({"content": "hi"}), delta({}, "length"), done=False))
    assert t.complete and anthropic_grammar.check(out).stop_reason == "max_tokens"


def test_cut_off_stream_is_never_complete(impl: str) -> None:
    out, t = translate(impl, lines(delta({"content": "half a sent"}), done=False))
    rebuilt = anthropic_grammar.check(out)
    assert not t.complete and not rebuilt.complete
    assert rebuilt.error == {
        "type": "api_error",
        "message": "the upstream stream ended before the response was complete",
    }
    with pytest.raises(anthropic.APIStatusError):
        sdk_final_message(out)


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            b"data: {not json\n\n",
            ("api_error", "the upstream sent an event that is not valid JSON"),
        ),
        (
            b'data: {"choices": [{"delta": {"content": 5}}]}\n\n',
            ("api_error", "the upstream sent an event of an unexpected shape"),
        ),
        (
            b'data: {"choices": {"delta": {}}}\n\n',
            ("api_error", "the upstream sent an event of an unexpected shape"),
        ),
        (b"data: [1, 2]\n\n", ("api_error", "the upstream sent an event of an unexpected shape")),
        (
            b'event: error\ndata: {"error": {"message": "Rate limited", "type": "rate_limit_exceeded", "status_code": 429}}\n\n',
            ("rate_limit_error", "Rate limited"),
        ),
        (b"event: error\ndata: upstream exploded\n\n", ("api_error", "upstream exploded")),
        (
            b'data: {"error": {"code": 503, "message": "busy"}, "choices": 7}\n\n',
            ("overloaded_error", "busy"),
        ),
        (
            b'data: {"type":"error","error":{"details":null,"type":"overloaded_error","message":"Overloaded"}               }\n\n',
            ("overloaded_error", "Overloaded"),
        ),
    ],
)
def test_upstream_errors_end_the_stream(impl: str, body: bytes, error: tuple[str, str]) -> None:
    out, t = translate(
        impl, lines(delta({"content": "so far"}), done=False) + body + b"data: [DONE]\n\n"
    )
    rebuilt = anthropic_grammar.check(out)
    assert t.error == error and rebuilt.error == {"type": error[0], "message": error[1]}
    assert not t.complete and not rebuilt.complete
    assert rebuilt.content[0]["text"] == "so far"


def test_error_before_content_leaves_no_content(impl: str) -> None:
    _, t = translate(impl, b'data: {"error": {"message": "bad key", "code": 401}}\n\n')
    assert t.error == ("authentication_error", "bad key") and not t.has_content


def test_interleaved_tool_arguments_are_refused_not_corrupted(impl: str) -> None:
    data = lines(
        delta(
            {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "A", "arguments": "{"}}]}
        ),
        delta(
            {"tool_calls": [{"index": 1, "id": "b", "function": {"name": "B", "arguments": "{}"}}]}
        ),
        delta({"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]}),
        delta({}, "tool_calls"),
    )
    _out, t = translate(impl, data)
    assert t.error == ("api_error", "the upstream interleaved the arguments of parallel tool calls")


def test_tool_calls_with_plain_stop_still_run(impl: str) -> None:
    data = lines(
        delta(
            {
                "tool_calls": [
                    {"id": "c1", "function": {"name": "Bash", "arguments": '{"command":"ls"}'}}
                ]
            }
        ),
        delta({}, "stop"),
    )
    out, _t = translate(impl, data)
    rebuilt = anthropic_grammar.check(out)
    assert rebuilt.stop_reason == "tool_use"
    assert rebuilt.content == [
        {"type": "tool_use", "id": "c1", "name": "Bash", "input": {"command": "ls"}}
    ]


def test_tool_call_without_id_gets_a_stable_one(impl: str) -> None:
    data = lines(
        delta({"tool_calls": [{"index": 0, "function": {"name": "Read", "arguments": "{}"}}]}),
        delta({}, "tool_calls"),
    )
    out, _ = translate(impl, data)
    assert anthropic_grammar.check(out).content[0]["id"] == "toolu_msg_test_0"


def test_reasoning_then_text_then_tool(impl: str) -> None:
    data = lines(
        delta({"reasoning_content": "think", "content": None}),
        delta({"reasoning": "ignored duplicate", "reasoning_content": " more"}),
        delta({"content": "answer"}),
        delta(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "t",
                        "type": "function",
                        "function": {"name": "X", "arguments": ""},
                    }
                ]
            }
        ),
        delta({"tool_calls": [{"index": 0, "function": {"arguments": '{"a":1}'}}]}),
        delta({}, "tool_calls"),
    )
    out, _ = translate(impl, data)
    content = anthropic_grammar.check(out).content
    assert [b["type"] for b in content] == ["thinking", "text", "tool_use"]
    assert content[0]["thinking"] == "think more"
    assert verify_thinking("think more", content[0]["signature"], KEY)
    assert content[2]["input"] == {"a": 1}


def test_other_choices_are_not_mixed_in(impl: str) -> None:
    data = lines(delta({"content": "zero"}), delta({"content": "one"}, index=1), delta({}, "stop"))
    out, _ = translate(impl, data)
    assert anthropic_grammar.check(out).content == [{"type": "text", "text": "zero"}]


def test_oversized_event_is_an_error_not_a_truncation(impl: str) -> None:
    big = lines(delta({"content": "x" * 5000}))
    out, t = translate(impl, big, max_event_bytes=1000)
    assert t.error == (
        "api_error",
        "an upstream event exceeds the max_event_bytes bound of 1000 bytes",
    )
    assert b"xxxxx" not in out


def test_events_of_several_megabytes(impl: str) -> None:
    text = "é" * (3 << 20)
    out, t = translate(impl, lines(delta({"content": text}), delta({}, "stop")))
    assert t.complete and anthropic_grammar.check(out).content[0]["text"] == text


def test_fail_is_an_error_event(impl: str) -> None:
    t = anthropic_via_chat_class(impl)("m", "x", 1)
    t.feed(lines(delta({"content": "a"}), done=False))
    assert t.fail("overloaded_error", "connection reset") == (
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"connection reset"}}\n\n'
    )
    assert t.finished and not t.complete and t.finish() == b""
