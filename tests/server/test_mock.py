"""The embedded mock upstream (hydra_proxy.mock), driven by the official SDKs.

One mock subprocess serves the whole module (per-test state is cleared); a few edge cases
run the ASGI app in-process instead.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import anthropic
import openai
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hydra_proxy.mock import MockOptions, MockServer, create_app
from hydra_proxy.mock.script import canned_reply

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"  # copies of shared/fixtures

OPENAI_KEY = "sk-test-openai-SECRET-123"
ANTHROPIC_KEY = "sk-ant-test-SECRET-456"

SCRIPTED = {
    "reasoning": "The user wants weather for two cities; I will call the tool twice.",
    "text": "Let me check both cities — Zürich & 東京.",
    "tool_calls": [
        {"id": "call_a1", "name": "get_weather", "arguments": {"city": "Zürich", "unit": "c"}},
        {"id": "call_b2", "name": "get_time", "arguments": '{"tz": "Asia/Tokyo", "n": [1, 2]}'},
    ],
    "usage": {"prompt_tokens": 120, "completion_tokens": 45, "cached_tokens": 100},
    "signature": "c2lnbmF0dXJlLWZvci10ZXN0cw==",
    "redacted_thinking": ["RWRhY3RlZC1ibG9iLTE="],
    "chunk_size": 3,
}
EXPECTED_ARGS = [{"city": "Zürich", "unit": "c"}, {"tz": "Asia/Tokyo", "n": [1, 2]}]


# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer(fixtures=FIXTURES) as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(request: pytest.FixtureRequest) -> None:
    if "mock" in request.fixturenames:
        request.getfixturevalue("mock").clear()


@pytest.fixture
def oai(mock: MockServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=mock.url + "/v1", api_key=OPENAI_KEY, max_retries=0)


@pytest.fixture
def ant(mock: MockServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=mock.url, api_key=ANTHROPIC_KEY, max_retries=0)


def raw_post(
    mock: MockServer, path: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", mock.port, timeout=10)
    try:
        conn.request(
            "POST",
            path,
            body=orjson.dumps(body),
            headers={"content-type": "application/json", **(headers or {})},
        )
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def sse_data(body: bytes) -> list[Any]:
    """The JSON payloads of the ``data:`` lines ([DONE] as the string)."""
    out: list[Any] = []
    for line in body.decode().split("\n"):
        if line.startswith("data: "):
            payload = line[6:]
            out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


def sse_events(body: bytes) -> list[tuple[str, Any]]:
    out = []
    for block in body.decode().split("\n\n"):
        if not block.strip():
            continue
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        out.append((lines["event"], json.loads(lines["data"])))
    return out


CANNED = canned_reply(16, 8).text


class _AntKwargs(TypedDict):
    model: str
    max_tokens: int
    messages: list[anthropic.types.MessageParam]


ANT: _AntKwargs = {
    "model": "claude-mock",
    "max_tokens": 256,
    "messages": [{"role": "user", "content": "hi"}],
}
CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
MSG = {"model": "claude-mock", "max_tokens": 256, "messages": [{"role": "user", "content": "hi"}]}


# -- canned replies ------------------------------------------------------------------------


def test_openai_canned_streamed_and_not(mock: MockServer, oai: openai.OpenAI) -> None:
    stream = oai.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    content = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert len(content) == 16
    assert all(len(piece) == 8 for piece in content)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert (
        chunks[-1].usage.total_tokens
        == chunks[-1].usage.prompt_tokens + chunks[-1].usage.completion_tokens
    )

    complete = oai.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
    )
    assert complete.object == "chat.completion"
    assert complete.model == "gpt-4o-mini"
    assert complete.choices[0].message.content == "".join(content) == CANNED
    assert complete.choices[0].finish_reason == "stop"
    assert complete.usage is not None and complete.usage.completion_tokens > 0


def test_chat_stream_without_include_usage_has_no_usage(mock: MockServer) -> None:
    status, headers, body = raw_post(mock, "/v1/chat/completions", {**CHAT, "stream": True})
    assert status == 200
    assert headers["content-type"].startswith("text/event-stream")
    data = sse_data(body)
    assert data[-1] == "[DONE]"
    assert not any("usage" in d for d in data[:-1])
    assert body.endswith(b"data: [DONE]\n\n")


def test_anthropic_canned_streamed_and_not(mock: MockServer, ant: anthropic.Anthropic) -> None:
    with ant.messages.stream(**ANT) as stream:
        final = stream.get_final_message()
    assert final.model == "claude-mock"
    assert [b.type for b in final.content] == ["text"]
    assert final.content[0].text == CANNED  # type: ignore[union-attr]
    assert final.stop_reason == "end_turn"
    assert final.usage.input_tokens > 0 and final.usage.output_tokens > 0

    complete = ant.messages.create(**ANT)
    assert complete.content[0].text == CANNED  # type: ignore[union-attr]
    status, _, body = raw_post(mock, "/v1/messages", MSG)
    assert status == 200
    doc = orjson.loads(body)
    assert "stop_sequence" in doc and doc["stop_sequence"] is None


def test_anthropic_stream_grammar(mock: MockServer) -> None:
    status, headers, body = raw_post(mock, "/v1/messages?beta=true", {**MSG, "stream": True})
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    events = sse_events(body)
    names = [name for name, _ in events]
    assert names[:2] == ["message_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]
    assert all(name == data["type"] for name, data in events)
    assert events[0][1]["message"]["content"] == []
    assert b"[DONE]" not in body


# -- scripted turns ------------------------------------------------------------------------


def test_openai_scripted_reasoning_text_tools(mock: MockServer, oai: openai.OpenAI) -> None:
    mock.script([SCRIPTED])
    with oai.chat.completions.stream(
        model="gpt-4o",
        messages=[{"role": "user", "content": "weather?"}],
        stream_options={"include_usage": True},
    ) as stream:
        deltas = [e for e in stream if e.type == "chunk"]
        final = stream.get_final_completion()
    message = final.choices[0].message
    assert message.content == SCRIPTED["text"]
    assert (message.model_extra or {}).get("reasoning_content") == SCRIPTED["reasoning"]
    assert message.tool_calls is not None
    assert [t.id for t in message.tool_calls] == ["call_a1", "call_b2"]
    assert [t.function.name for t in message.tool_calls] == ["get_weather", "get_time"]
    assert [json.loads(t.function.arguments) for t in message.tool_calls] == EXPECTED_ARGS
    assert (
        message.tool_calls[1].function.arguments == '{"tz": "Asia/Tokyo", "n": [1, 2]}'
    )  # verbatim
    assert final.choices[0].finish_reason == "tool_calls"
    assert final.usage is not None
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (120, 45)
    assert final.usage.prompt_tokens_details is not None
    assert final.usage.prompt_tokens_details.cached_tokens == 100

    # wire shape: id/type/name only on each call's first fragment, then argument pieces
    fragments = [
        tc for e in deltas if e.chunk.choices for tc in e.chunk.choices[0].delta.tool_calls or []
    ]
    firsts = [f for f in fragments if f.id is not None]
    assert [(f.index, f.id, f.type) for f in firsts] == [
        (0, "call_a1", "function"),
        (1, "call_b2", "function"),
    ]
    assert all(f.function is not None and f.function.arguments == "" for f in firsts)
    assert all(
        f.function is not None and f.function.name is None for f in fragments if f.id is None
    )
    assert max(len(f.function.arguments or "") for f in fragments if f.function) == 3


def test_openai_scripted_not_streamed(mock: MockServer, oai: openai.OpenAI) -> None:
    mock.script([SCRIPTED])
    done = oai.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    message = done.choices[0].message
    assert message.content == SCRIPTED["text"]
    assert (message.model_extra or {}).get("reasoning_content") == SCRIPTED["reasoning"]
    assert message.tool_calls is not None
    assert [t.type for t in message.tool_calls] == ["function", "function"]
    args = [json.loads(t.function.arguments) for t in message.tool_calls if t.type == "function"]
    assert args == EXPECTED_ARGS
    assert done.choices[0].finish_reason == "tool_calls"


def _check_anthropic_message(final: anthropic.types.Message) -> None:
    assert [b.type for b in final.content] == [
        "thinking",
        "redacted_thinking",
        "text",
        "tool_use",
        "tool_use",
    ]
    thinking, redacted, text, tool1, tool2 = final.content
    assert thinking.type == "thinking"
    assert thinking.thinking == SCRIPTED["reasoning"]
    assert thinking.signature == SCRIPTED["signature"]
    assert redacted.type == "redacted_thinking" and redacted.data == "RWRhY3RlZC1ibG9iLTE="
    assert text.type == "text" and text.text == SCRIPTED["text"]
    assert tool1.type == "tool_use" and tool2.type == "tool_use"
    assert [(tool1.id, tool1.name), (tool2.id, tool2.name)] == [
        ("call_a1", "get_weather"),
        ("call_b2", "get_time"),
    ]
    assert [tool1.input, tool2.input] == EXPECTED_ARGS
    assert final.stop_reason == "tool_use"
    assert final.stop_sequence is None
    assert final.usage.input_tokens == 20  # prompt 120 - cached 100
    assert final.usage.cache_read_input_tokens == 100
    assert final.usage.output_tokens == 45


def test_anthropic_scripted_reasoning_text_tools(
    mock: MockServer, ant: anthropic.Anthropic
) -> None:
    mock.script([SCRIPTED, SCRIPTED])
    with ant.messages.stream(**ANT) as stream:
        final = stream.get_final_message()
    _check_anthropic_message(final)
    _check_anthropic_message(ant.messages.create(**ANT))


def test_anthropic_thinking_wire_order(mock: MockServer) -> None:
    turn = {"reasoning": "abcdef", "text": "hi", "chunk_size": 2}
    _, _, body = raw_post(
        mock, "/v1/messages", {**MSG, "stream": True}, {"x-mock-turn": json.dumps(turn)}
    )
    deltas = [
        d["delta"]
        for name, d in sse_events(body)
        if name == "content_block_delta" and d["index"] == 0
    ]
    assert [d["type"] for d in deltas] == ["thinking_delta"] * 3 + ["signature_delta"]
    assert deltas[-1]["signature"]  # a default signature is always present
    start = next(d for n, d in sse_events(body) if n == "content_block_start")
    assert start["content_block"] == {"type": "thinking", "thinking": "", "signature": ""}


def test_script_is_fifo_then_default(
    mock: MockServer, oai: openai.OpenAI, ant: anthropic.Anthropic
) -> None:
    assert mock.script([{"text": "first"}, {"text": "second"}]) == 2
    a = oai.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    b = ant.messages.create(**ANT)
    c = oai.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert a.choices[0].message.content == "first"
    assert b.content[0].text == "second"  # type: ignore[union-attr]
    assert c.choices[0].message.content == CANNED


def test_script_match_gates_the_oldest_turn(
    mock: MockServer, oai: openai.OpenAI, ant: anthropic.Anthropic
) -> None:
    tools: list[openai.types.chat.ChatCompletionToolParam] = [
        {"type": "function", "function": {"name": "Bash", "parameters": {"type": "object"}}}
    ]
    turns = [
        {"text": "tool turn", "match": {"model": "gpt-*", "has_tools": True}},
        {"text": "after the result", "match": {"contains": ["hydra-42 ✓", '\\"quoted\\"']}},
        {"text": "anything"},
    ]
    assert mock.script(turns) == 3

    def chat(model: str, content: str, with_tools: bool = True) -> str | None:
        extra: dict[str, Any] = {"tools": tools} if with_tools else {}
        reply = oai.chat.completions.create(
            model=model, messages=[{"role": "user", "content": content}], **extra
        )
        return reply.choices[0].message.content

    assert chat("gpt-4o", "title this", with_tools=False) == CANNED  # a background call
    assert chat("claude-haiku-4-5", "hi") == CANNED  # the model glob does not match
    assert mock.pending() == 3
    assert chat("gpt-4o", "hi") == "tool turn"
    assert chat("gpt-4o", "hydra-42 ✓ without the quotes") == CANNED
    assert ant.messages.create(**ANT).content[0].text == CANNED  # type: ignore[union-attr]
    assert mock.pending() == 2
    assert chat("gpt-4o", 'the result: hydra-42 ✓ "quoted"', with_tools=False) == (
        "after the result"
    )
    assert chat("any-model", "x", with_tools=False) == "anything"  # no match: any request
    assert mock.pending() == 0
    replies = [r["reply"] for r in mock.requests()]
    assert replies == ["default", "default", "script", "default", "default", "script", "script"]
    assert raw_post(mock, "/v1/chat/completions", CHAT, {"x-mock-turn": '{"text": "h"}'})[0] == 200
    assert mock.requests()[-1]["reply"] == "header"


def test_invalid_match_is_refused(mock: MockServer) -> None:
    for match, field in [
        ({"modle": "gpt-*"}, "modle"),
        ({"has_tools": "yes"}, "turns[0].match.has_tools"),
        ({"contains": 42}, "turns[0].match.contains"),
        ({"contains": ["ok", ""]}, "turns[0].match.contains"),
        ({"model": 3}, "turns[0].match.model"),
        ("gpt-*", "turns[0].match must be an object"),
    ]:
        status, data = mock._request("POST", "/_mock/script", [{"text": "x", "match": match}])
        assert status == 400 and field in data["error"]["message"], (match, data)
    assert mock.pending() == 0


def test_invalid_script_is_refused(mock: MockServer) -> None:
    status, data = mock._request("POST", "/_mock/script", [{"tool_calls": [{"arguments": {}}]}])
    assert status == 400
    assert "turns[0].tool_calls[0].name" in data["error"]["message"]
    status, data = mock._request("POST", "/_mock/script", [{"replay": "/etc/passwd"}])
    assert status == 400 and "outside" in data["error"]["message"]
    status, data = mock._request("POST", "/_mock/script", [{"txet": "typo"}])
    assert status == 400 and "txet" in data["error"]["message"]
    assert mock._request("GET", "/_mock/script")[1] == {"pending": 0}


# -- errors --------------------------------------------------------------------------------


def test_error_turn_openai(mock: MockServer, oai: openai.OpenAI) -> None:
    mock.script(
        [
            {
                "error": {
                    "status": 429,
                    "type": "rate_limit_error",
                    "message": "slow down",
                    "retry_after": "7",
                }
            }
        ]
    )
    with pytest.raises(openai.RateLimitError) as info:
        oai.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert info.value.status_code == 429
    assert info.value.response.headers["retry-after"] == "7"
    assert info.value.body == {
        "message": "slow down",
        "type": "rate_limit_error",
        "param": None,
        "code": None,
    }


def test_error_turn_anthropic(mock: MockServer, ant: anthropic.Anthropic) -> None:
    mock.script(
        [
            {
                "error": {
                    "status": 429,
                    "type": "rate_limit_error",
                    "message": "slow down",
                    "retry_after": 7,
                }
            },
            {"error": {"status": 529, "type": "overloaded_error", "message": "Overloaded"}},
        ]
    )
    with (
        pytest.raises(anthropic.RateLimitError) as info,
        ant.messages.stream(**ANT) as stream,
    ):
        stream.get_final_message()
    assert info.value.response.headers["retry-after"] == "7"
    assert info.value.body == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "slow down"},
        "request_id": info.value.response.headers["request-id"],
    }
    with pytest.raises(anthropic.OverloadedError) as overloaded:
        ant.messages.create(**ANT)
    assert overloaded.value.status_code == 529


def test_stream_error_after_content(
    mock: MockServer, oai: openai.OpenAI, ant: anthropic.Anthropic
) -> None:
    turn = {
        "text": "partial answer",
        "stream_error": {"type": "overloaded_error", "message": "Overloaded"},
    }
    mock.script([turn, turn])
    got: list[str] = []
    with pytest.raises(openai.APIError, match="Overloaded"):
        for chunk in oai.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], stream=True
        ):
            got.append(chunk.choices[0].delta.content or "")
    assert "".join(got) == "partial answer"

    with (
        pytest.raises(anthropic.APIStatusError, match="overloaded_error"),
        ant.messages.stream(**ANT) as stream,
    ):
        for _ in stream:
            pass
    _, _, body = raw_post(
        mock, "/v1/messages", {**MSG, "stream": True}, {"x-mock-turn": json.dumps(turn)}
    )
    events = sse_events(body)
    assert events[-1] == (
        "error",
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    assert "message_stop" not in [name for name, _ in events]


def test_error_rate_header(mock: MockServer) -> None:
    status, _, body = raw_post(mock, "/v1/messages", MSG, {"x-mock-error-rate": "1"})
    assert status == 529 and orjson.loads(body)["error"]["type"] == "overloaded_error"
    status, _, body = raw_post(mock, "/v1/chat/completions", CHAT, {"x-mock-error-rate": "1"})
    assert status == 503 and orjson.loads(body)["error"]["type"] == "server_error"
    assert raw_post(mock, "/v1/chat/completions", CHAT, {"x-mock-error-rate": "0"})[0] == 200


def test_bad_knob_header_is_a_400_in_the_endpoint_format(mock: MockServer) -> None:
    status, _, body = raw_post(mock, "/v1/messages", MSG, {"x-mock-chunks": "many"})
    assert status == 400
    assert orjson.loads(body)["error"] == {
        "type": "invalid_request_error",
        "message": "header x-mock-chunks must be an integer",
    }
    status, _, body = raw_post(mock, "/v1/chat/completions", CHAT, {"x-mock-delay-ms": "-1"})
    assert status == 400 and orjson.loads(body)["error"]["type"] == "invalid_request_error"


# -- cut and abort -------------------------------------------------------------------------


def test_cut_ends_without_terminators(mock: MockServer) -> None:
    turn = json.dumps({"text": "hello there", "cut": True})
    status, _, body = raw_post(
        mock, "/v1/chat/completions", {**CHAT, "stream": True}, {"x-mock-turn": turn}
    )
    assert status == 200
    data = sse_data(body)
    assert "".join(d["choices"][0]["delta"].get("content") or "" for d in data) == "hello there"
    assert "[DONE]" not in data
    assert all(d["choices"][0]["finish_reason"] is None for d in data)

    status, _, body = raw_post(mock, "/v1/messages", {**MSG, "stream": True}, {"x-mock-turn": turn})
    names = [name for name, _ in sse_events(body)]
    assert names[0] == "message_start" and "content_block_delta" in names
    assert "message_delta" not in names and "message_stop" not in names

    status, _, body = raw_post(
        mock, "/v1/messages", {**MSG, "stream": True}, {"x-mock-turn": '{"text": "x", "cut": 3}'}
    )
    assert [name for name, _ in sse_events(body)] == [
        "message_start",
        "ping",
        "content_block_start",
    ]


def test_abort_drops_the_connection(mock: MockServer) -> None:
    with pytest.raises(http.client.IncompleteRead):
        raw_post(
            mock,
            "/v1/chat/completions",
            {**CHAT, "stream": True},
            {"x-mock-turn": '{"text": "x", "abort": true}'},
        )


# -- replay --------------------------------------------------------------------------------


def test_replay_sse_is_byte_identical(mock: MockServer, oai: openai.OpenAI) -> None:
    fixture = FIXTURES / "chat" / "oaipy-gpt4o-tool-call.sse"
    mock.script(
        [
            {"replay": str(fixture)},
            {"replay": "oaipy-gpt4o-tool-call", "delay_ms": 1, "split_bytes": 97},
        ]
    )
    _, headers, first = raw_post(mock, "/v1/chat/completions", {**CHAT, "stream": True})
    _, _, second = raw_post(mock, "/v1/chat/completions", {**CHAT, "stream": True})
    assert headers["content-type"].startswith("text/event-stream")
    assert first == fixture.read_bytes()
    assert second == fixture.read_bytes()

    mock.script([{"replay": "chat/oaipy-gpt4o-tool-call.sse"}])
    with oai.chat.completions.stream(
        model="gpt-4o", messages=[{"role": "user", "content": "x"}]
    ) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.tool_calls is not None
    assert final.choices[0].message.tool_calls[0].function.name == "GetWeatherArgs"
    assert json.loads(final.choices[0].message.tool_calls[0].function.arguments) == {
        "city": "Edinburgh",
        "country": "UK",
        "units": "c",
    }


def test_replay_jsonl_is_reframed(
    mock: MockServer, oai: openai.OpenAI, ant: anthropic.Anthropic
) -> None:
    anth = FIXTURES / "anthropic" / "vercel-text-then-tool-use.jsonl"
    lines = [line for line in anth.read_bytes().splitlines() if line.strip()]
    _, _, body = raw_post(
        mock,
        "/v1/messages",
        {**MSG, "stream": True},
        {"x-mock-replay": "vercel-text-then-tool-use"},
    )
    expected = b"".join(
        b"event: " + json.loads(line)["type"].encode() + b"\ndata: " + line + b"\n\n"
        for line in lines
    )
    assert body == expected

    mock.script([{"replay": "anthropic/vercel-text-then-tool-use.jsonl"}])
    with ant.messages.stream(**ANT) as stream:
        final = stream.get_final_message()
    assert [b.type for b in final.content] == ["text", "tool_use"]
    assert final.stop_reason == "tool_use"

    oai_file = FIXTURES / "chat" / "vercel-deepseek-reasoning-content.jsonl"
    oai_lines = [line for line in oai_file.read_bytes().splitlines() if line.strip()]
    _, _, body = raw_post(
        mock,
        "/v1/chat/completions",
        {**CHAT, "stream": True},
        {"x-mock-replay": "vercel-deepseek-reasoning-content"},
    )
    assert body == b"".join(b"data: " + line + b"\n\n" for line in oai_lines) + b"data: [DONE]\n\n"

    mock.script([{"replay": "vercel-deepseek-reasoning-content.jsonl"}])
    with oai.chat.completions.stream(
        model="deepseek-reasoner", messages=[{"role": "user", "content": "x"}]
    ) as s:
        done = s.get_final_completion()
    expected_reasoning = "".join(
        json.loads(line)["choices"][0]["delta"].get("reasoning_content") or "" for line in oai_lines
    )
    assert (done.choices[0].message.model_extra or {})["reasoning_content"] == expected_reasoning
    assert done.choices[0].finish_reason == "stop"


def test_replay_json_response_status_and_body(mock: MockServer) -> None:
    fixture = FIXTURES / "chat" / "pydantic-http400-developer-role-unsupported.response.json"
    status, _, body = raw_post(
        mock,
        "/v1/chat/completions",
        CHAT,
        {"x-mock-replay": "pydantic-http400-developer-role-unsupported.response"},
    )
    assert status == 400
    assert orjson.loads(body) == json.loads(fixture.read_text())["body"]


def test_unknown_replay_name(mock: MockServer) -> None:
    status, _, body = raw_post(mock, "/v1/messages", MSG, {"x-mock-replay": "no-such-fixture"})
    assert status == 400 and "no fixture named" in orjson.loads(body)["error"]["message"]


# -- recording and knobs -------------------------------------------------------------------


def test_requests_are_recorded_with_keys_redacted(
    mock: MockServer, oai: openai.OpenAI, ant: anthropic.Anthropic
) -> None:
    oai.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "one"}])
    ant.messages.create(**ANT, extra_query={"beta": "true"})
    raw_post(
        mock,
        "/v1/messages/count_tokens?beta=true",
        {"model": "m", "messages": []},
        {
            "x-api-key": "ant-SECRET",
            "proxy-authorization": "Basic SECRET",
            "anthropic-version": "2023-06-01",
        },
    )
    recorded = mock.requests()
    assert [(r["method"], r["path"], r["query"]) for r in recorded] == [
        ("POST", "/v1/chat/completions", ""),
        ("POST", "/v1/messages", "beta=true"),
        ("POST", "/v1/messages/count_tokens", "beta=true"),
    ]
    assert recorded[0]["headers"]["authorization"] == "<redacted>"
    # the SDK authenticates with x-api-key or a bearer token depending on its version
    sdk_auth = {
        k: v for k, v in recorded[1]["headers"].items() if k in ("x-api-key", "authorization")
    }
    assert sdk_auth and set(sdk_auth.values()) == {"<redacted>"}
    assert "anthropic-version" in recorded[1]["headers"]
    assert recorded[2]["headers"]["x-api-key"] == "<redacted>"
    assert recorded[2]["headers"]["proxy-authorization"] == "<redacted>"
    assert recorded[2]["headers"]["anthropic-version"] == "2023-06-01"
    assert recorded[0]["body"] == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "one"}],
    }
    assert recorded[1]["body"]["max_tokens"] == 256
    assert b"SECRET" not in orjson.dumps(recorded)
    mock.clear()
    assert mock.requests() == []


def test_chunk_headers(mock: MockServer) -> None:
    headers = {"x-mock-chunks": "3", "x-mock-chunk-size": "5"}
    _, _, body = raw_post(mock, "/v1/chat/completions", {**CHAT, "stream": True}, headers)
    pieces = [d["choices"][0]["delta"].get("content") for d in sse_data(body)[:-1] if d["choices"]]
    assert [p for p in pieces if p] == ["Hello", " from", " the "]


def test_delay_and_ttfb_pace_the_stream(mock: MockServer) -> None:
    headers = {"x-mock-chunks": "4", "x-mock-delay-ms": "25", "x-mock-ttfb-ms": "50"}
    start = time.monotonic()
    _, _, body = raw_post(mock, "/v1/chat/completions", {**CHAT, "stream": True}, headers)
    elapsed = time.monotonic() - start
    events = body.count(b"\n\n")  # role + 4 content + finish + [DONE] = 7 events, 6 gaps
    assert events == 7
    assert elapsed >= 0.050 + 6 * 0.025


def test_models_and_health(mock: MockServer, oai: openai.OpenAI, ant: anthropic.Anthropic) -> None:
    assert "gpt-4o-mini" in [m.id for m in oai.models.list()]
    assert "claude-sonnet-4-5" in [m.id for m in ant.models.list()]
    conn = http.client.HTTPConnection("127.0.0.1", mock.port, timeout=5)
    conn.request("GET", "/health?probe=1")
    resp = conn.getresponse()
    assert resp.status == 200 and orjson.loads(resp.read()) == {"status": "ok"}
    conn.close()


# -- in-process ASGI ------------------------------------------------------------------------


def call_app(
    options: MockOptions,
    requests: list[tuple[str, str, bytes, dict[str, str]]],
) -> list[tuple[int, dict[bytes, bytes], list[bytes]]]:
    """Drive one app instance through several requests; returns (status, headers, bodies)."""
    app = create_app(options)

    async def one(
        method: str, path: str, body: bytes, headers: dict[str, str]
    ) -> tuple[int, dict[bytes, bytes], list[bytes]]:
        queue = [{"type": "http.request", "body": body, "more_body": False}]
        sent: list[Any] = []

        async def receive() -> Any:
            if queue:
                return queue.pop()
            await asyncio.sleep(3600)

        async def send(message: Any) -> None:
            sent.append(message)

        scope = {
            "type": "http",
            "method": method,
            "path": path,
            "query_string": b"",
            "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
        }
        await app(scope, receive, send)
        return sent[0]["status"], dict(sent[0]["headers"]), [m["body"] for m in sent[1:]]

    async def main() -> list[tuple[int, dict[bytes, bytes], list[bytes]]]:
        return [await one(*r) for r in requests]

    return asyncio.run(main())


def test_body_limit_and_bad_json() -> None:
    options = MockOptions(max_body_bytes=100)
    big = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * 200}]})
    results = call_app(
        options,
        [
            ("POST", "/v1/messages", big, {"content-length": str(len(big))}),
            ("POST", "/v1/chat/completions", big, {}),
            ("POST", "/v1/messages", b"{not json", {}),
            ("POST", "/v1/chat/completions", b"[1, 2]", {}),
            ("GET", "/v1/messages", b"", {}),
            ("GET", "/nope", b"", {}),
        ],
    )
    statuses = [r[0] for r in results]
    assert statuses == [413, 413, 400, 400, 405, 404]
    assert orjson.loads(results[0][2][0])["error"]["type"] == "request_too_large"
    assert orjson.loads(results[1][2][0])["error"]["type"] == "invalid_request_error"
    assert orjson.loads(results[2][2][0])["type"] == "error"


def test_instant_mode_is_one_cached_message_and_paced_is_many() -> None:
    body = orjson.dumps({**CHAT, "stream": True})
    instant = call_app(MockOptions(), [("POST", "/v1/chat/completions", body, {})] * 2)
    (_, _, first), (_, _, second) = instant
    assert len(first) == 1 and first[0] is second[0]  # rendered once, then served from the cache
    paced = call_app(
        MockOptions(delay_ms=0.1, chunks=5), [("POST", "/v1/chat/completions", body, {})]
    )
    pieces = paced[0][2]
    assert len(pieces) == 1 + 5 + 1 + 1 + 1  # role, content, finish, [DONE], end-of-body
    assert pieces[-1] == b""


def test_recording_is_bounded() -> None:
    options = MockOptions(max_recorded=3)
    reqs: list[tuple[str, str, bytes, dict[str, str]]] = [
        ("POST", "/v1/chat/completions", orjson.dumps({"n": i}), {}) for i in range(5)
    ]
    results = call_app(options, [*reqs, ("GET", "/_mock/requests", b"", {})])
    recorded = orjson.loads(results[-1][2][0])
    assert [r["body"]["n"] for r in recorded] == [2, 3, 4]


# -- generated turns rebuild exactly -------------------------------------------------------

_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)


@settings(max_examples=60, deadline=None)
@given(
    reasoning=st.none() | _text,
    text=st.none() | _text,
    args=st.lists(
        st.dictionaries(st.text(max_size=5), st.integers(-(2**53), 2**53) | _text, max_size=3),
        max_size=3,
    ),
    size=st.integers(1, 7),
)
def test_generated_turns_rebuild_on_both_wires(
    reasoning: str | None, text: str | None, args: list[dict[str, Any]], size: int
) -> None:
    turn: dict[str, Any] = {"reasoning": reasoning, "text": text, "chunk_size": size}
    turn["tool_calls"] = [{"name": f"tool{i}", "arguments": a} for i, a in enumerate(args)]
    header = {"x-mock-turn": json.dumps(turn)}
    chat = orjson.dumps({**CHAT, "stream": True})
    msgs = orjson.dumps({**MSG, "stream": True})
    (o_status, _, o_body), (a_status, _, a_body) = call_app(
        MockOptions(),
        [("POST", "/v1/chat/completions", chat, header), ("POST", "/v1/messages", msgs, header)],
    )
    assert o_status == a_status == 200

    data = sse_data(b"".join(o_body))
    assert data[-1] == "[DONE]"
    content, reasoning_out, calls = "", "", {}  # type: ignore[var-annotated]
    for d in data[:-1]:
        delta = d["choices"][0]["delta"]
        content += delta.get("content") or ""
        reasoning_out += delta.get("reasoning_content") or ""
        for tc in delta.get("tool_calls") or []:
            entry = calls.setdefault(
                tc["index"], {"name": tc["function"].get("name"), "arguments": ""}
            )
            entry["arguments"] += tc["function"]["arguments"]
    assert content == (text or "")
    assert reasoning_out == (reasoning or "")
    assert [json.loads(calls[i]["arguments"]) for i in sorted(calls)] == args
    assert data[-2]["choices"][0]["finish_reason"] == ("tool_calls" if args else "stop")

    blocks: list[dict[str, Any]] = []
    for name, ev in sse_events(b"".join(a_body)):
        if name == "content_block_start":
            assert ev["index"] == len(blocks)
            blocks.append(dict(ev["content_block"], partial=""))
        elif name == "content_block_delta":
            block, delta = blocks[ev["index"]], ev["delta"]
            key = {
                "text_delta": "text",
                "thinking_delta": "thinking",
                "input_json_delta": "partial",
            }.get(delta["type"])
            if key:
                block[key] += delta[
                    delta["type"].removesuffix("_delta") if key != "partial" else "partial_json"
                ]
    assert [b["type"] for b in blocks] == (
        (["thinking"] if reasoning is not None else [])
        + (["text"] if text is not None else [])
        + ["tool_use"] * len(args)
    )
    tools = [b for b in blocks if b["type"] == "tool_use"]
    assert [json.loads(b["partial"] or "{}") for b in tools] == args
    if text is not None:
        assert next(b for b in blocks if b["type"] == "text")["text"] == text
    if reasoning is not None:
        assert blocks[0]["thinking"] == reasoning
