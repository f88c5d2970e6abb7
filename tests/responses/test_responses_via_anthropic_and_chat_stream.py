"""Anthropic Messages and OpenAI Chat streams -> OpenAI Responses SSE, on both
implementations (the Responses encoder behind the Anthropic and the Chat decoders).

Differential (native == Python, any split) over every recorded Anthropic and Chat stream
and generated ones, each output checked by the strict grammar of responses_grammar; the
official `openai` SDK rebuilds the Response from every translation
(`client.responses.stream` over a mock transport), and it must equal what the
non-streamed mapping (`responses.response.writer.response_from_message`) makes of the message
the official `anthropic` SDK rebuilds from the same upstream stream.
"""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2 as httpx
import openai
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hydra_proxy import transducers
from hydra_proxy.responses import reasoning
from hydra_proxy.responses.context import ResponsesContext
from hydra_proxy.responses.encoder import echo_text, name_table
from hydra_proxy.responses.response.writer import response_from_message
from hydra_proxy.responses.tools import ToolNames, ToolOrigin
from support import anthropic_streams, chat_streams, responses_grammar
from support.implementations import (
    ANTHROPIC_STREAMS,
    CHAT_STREAMS,
    _native,
    end_state,
    feed_all,
    random_cuts,
    recorded_chat_stream,
)

KEY = b"responses-stream-test-key"
RESPONSE_ID = "resp_hydratest"
MODEL = "gpt-5-codex"
CREATED = 1764460800
ESTIMATE = 42
NAMES = ToolNames()
NAMES.add("multi_agent__spawn", ToolOrigin("spawn", "multi_agent"))
NAMES.add("apply_patch", ToolOrigin("apply_patch", custom=True))
CONTEXT = ResponsesContext(MODEL, NAMES, include_encrypted=True, summary=True)
OPTIONS: dict[str, Any] = {
    "echo": echo_text(CONTEXT),
    "include_encrypted": True,
    "summary": True,
    "signing_key": KEY,
    "tool_names": name_table(NAMES),
}


def _classes(upstream: str) -> list[Any]:
    name = "ResponsesViaAnthropicStream" if upstream == "anthropic" else "ResponsesViaChatStream"
    classes = [getattr(transducers.PYTHON, name)]
    if _native is not None:
        classes.insert(0, getattr(_native, name))
    return classes


def run_both(
    upstream: str, data: bytes, cuts: list[int], **options: Any
) -> tuple[bytes, tuple[Any, ...]]:
    results = []
    for cls in _classes(upstream):
        t = cls(RESPONSE_ID, MODEL, CREATED, ESTIMATE, **{**OPTIONS, **options})
        out = feed_all(t, data, cuts)
        state = end_state(t)
        assert t.feed(b"data: {}\n\n") == b"" and t.finish() == b"" and t.ping() == b""
        results.append((out, state))
    for other in results[1:]:
        assert other[0] == results[0][0], "native and Python outputs differ"
        assert other[1] == results[0][1], "native and Python end states differ"
    return results[0]


def _upstream(upstream: str, name: str) -> bytes:
    return ANTHROPIC_STREAMS[name] if upstream == "anthropic" else recorded_chat_stream(name)


CASES = [("anthropic", n) for n in sorted(ANTHROPIC_STREAMS)] + [("chat", n) for n in CHAT_STREAMS]


@pytest.mark.parametrize(("upstream", "name"), CASES)
def test_differential_fixture(upstream: str, name: str) -> None:
    data = _upstream(upstream, name)
    whole, state = run_both(upstream, data, [])
    responses_grammar.check(whole)
    assert state[0], "the stream always ends"
    assert run_both(upstream, data, list(range(1, len(data))))[0] == whole
    for seed in range(6):
        assert run_both(upstream, data, random_cuts(data, seed))[0] == whole


# -- the SDKs ------------------------------------------------------------------------------


def _mock(sse: bytes) -> httpx.Client:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=sse)

    return httpx.Client(transport=httpx.MockTransport(handler))


def openai_sdk_response(sse: bytes) -> tuple[str, dict[str, Any]]:
    """(last event type, Response) as the official openai SDK's Responses stream rebuilds
    them from `sse`."""
    client = openai.OpenAI(api_key="k", base_url="http://proxy.test/v1", http_client=_mock(sse))
    with client.responses.stream(model=MODEL, input="hi") as stream:
        events = list(stream)
        if events[-1].type == "response.completed":
            return events[-1].type, stream.get_final_response().model_dump(exclude_unset=True)
    return events[-1].type, events[-1].response.model_dump(exclude_unset=True)  # type: ignore[union-attr]


def anthropic_sdk_message(sse: bytes) -> dict[str, Any] | None:
    """The message the official anthropic SDK rebuilds; None when the stream errs."""
    client = anthropic.Anthropic(api_key="k", base_url="http://proxy.test", http_client=_mock(sse))
    try:
        with client.messages.stream(
            model="claude-x", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            for _ in stream:
                pass
            return stream.get_final_message().model_dump()
    except (anthropic.APIError, AssertionError, KeyError, ValueError):
        return None


def _canonical(upstream: str, name: str) -> bytes:
    """The recording as an Anthropic stream: itself, or the (tested) Chat decoder's view."""
    data = _upstream(upstream, name)
    if upstream == "anthropic":
        return data
    t = transducers.AnthropicViaChatStream(RESPONSE_ID, MODEL, ESTIMATE, signing_key=KEY)
    return feed_all(t, data)


def _comparable(item: dict[str, Any]) -> dict[str, Any]:
    item = {k: v for k, v in item.items() if v is not None}
    if item["type"] == "function_call":
        item["arguments"] = orjson.loads(item["arguments"])
    if item["type"] == "message":
        for part in item["content"]:
            part.pop("parsed", None)
    return item


@pytest.mark.parametrize(("upstream", "name"), CASES)
def test_openai_sdk_rebuilds_what_the_message_says(upstream: str, name: str) -> None:
    out, (_, complete, error, *_rest) = run_both(upstream, _upstream(upstream, name), [])
    last, rebuilt = openai_sdk_response(out)
    message = anthropic_sdk_message(_canonical(upstream, name))
    if message is None or error is not None:
        assert last == "response.failed" and error is not None and not complete
        assert rebuilt["status"] == "failed"
        assert rebuilt["error"]["message"] == error[1]
        return
    expected = response_from_message(
        message, CONTEXT, response_id=RESPONSE_ID, created_at=CREATED, key=KEY, model=MODEL
    )
    assert complete and last == f"response.{expected['status']}"
    assert [_comparable(i) for i in rebuilt["output"]] == [
        _comparable(i) for i in expected["output"]
    ]
    assert rebuilt["status"] == expected["status"]
    assert rebuilt["incomplete_details"] == expected["incomplete_details"]
    assert rebuilt["usage"] == expected["usage"]
    assert rebuilt["output"] or not message["content"], "an answer has items"
    for item in rebuilt["output"]:
        if item["type"] == "reasoning" and "encrypted_content" in item:
            assert reasoning.decode_carrier(item["encrypted_content"], KEY), "carrier verifies"


# -- chosen streams ------------------------------------------------------------------------


def _anthropic(*events: dict[str, Any]) -> bytes:
    return b"".join(
        b"event: %s\ndata: %s\n\n" % (e["type"].encode(), orjson.dumps(e)) for e in events
    )


START = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [],
        "usage": {"input_tokens": 7, "cache_read_input_tokens": 100, "output_tokens": 1},
    },
}


def _tool(index: int, tool_id: str, name: str, *fragments: str) -> list[dict[str, Any]]:
    block = {"type": "tool_use", "id": tool_id, "name": name, "input": {}}
    return [
        {"type": "content_block_start", "index": index, "content_block": block},
        *(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": f},
            }
            for f in fragments
        ),
        {"type": "content_block_stop", "index": index},
    ]


def _end(reason: str, output_tokens: int = 9) -> list[dict[str, Any]]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": reason},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]


def test_namespace_and_custom_tools_are_restored() -> None:
    data = _anthropic(
        START,
        *_tool(0, "toolu_a", "multi_agent__spawn", '{"task":', '"x"}'),
        *_tool(1, "toolu_b", "apply_patch", '{"input": "*** Begin', ' Patch\\n"}'),
        *_tool(2, "toolu_c", "other"),
        *_end("tool_use"),
    )
    out, state = run_both("anthropic", data, random_cuts(data, 1))
    final = responses_grammar.check(out)
    spawn, patch, other = final["output"]
    assert spawn == {
        "id": "fc_hydratest_0",
        "type": "function_call",
        "status": "completed",
        "arguments": '{"task":"x"}',
        "call_id": "toolu_a",
        "name": "spawn",
        "namespace": "multi_agent",
    }
    assert patch["type"] == "custom_tool_call" and patch["id"] == "ctc_hydratest_1"
    assert patch["input"] == "*** Begin Patch\n" and patch["call_id"] == "toolu_b"
    assert other["arguments"] == "{}" and other["name"] == "other"
    assert final["usage"] == {
        "input_tokens": 107,
        "input_tokens_details": {"cached_tokens": 100, "cache_write_tokens": 0},
        "output_tokens": 9,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 116,
    }
    assert state[4:6] == ("completed", (107, 100, 9))
    assert openai_sdk_response(out)[1]["output"][1]["input"] == "*** Begin Patch\n"


def test_max_tokens_is_incomplete() -> None:
    text = {"type": "text", "text": ""}
    data = _anthropic(
        START,
        {"type": "content_block_start", "index": 0, "content_block": text},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "cut"},
        },
        {"type": "content_block_stop", "index": 0},
        *_end("max_tokens"),
    )
    out, state = run_both("anthropic", data, [])
    final = responses_grammar.check(out)
    assert final["status"] == "incomplete"
    assert final["incomplete_details"] == {"reason": "max_output_tokens"}
    assert final["output"][0]["status"] == "incomplete"
    assert state[4] == "max_output_tokens"
    assert openai_sdk_response(out)[0] == "response.incomplete"


def test_thinking_and_redacted_thinking_ride_in_the_carrier() -> None:
    thinking = {"type": "thinking", "thinking": "", "signature": ""}
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va"}
    data = _anthropic(
        START,
        {"type": "content_block_start", "index": 0, "content_block": thinking},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "Let me think."},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM"},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": redacted},
        {"type": "content_block_stop", "index": 1},
        *_tool(2, "toolu_a", "shell", '{"cmd":"ls"}'),
        *_end("tool_use"),
    )
    for options, summary in (({}, ["Let me think."]), ({"summary": False}, [])):
        out, _ = run_both("anthropic", data, [], **options)
        item = responses_grammar.check(out)["output"][0]
        assert item["type"] == "reasoning"
        assert [s["text"] for s in item["summary"]] == summary
        assert reasoning.decode_carrier(item["encrypted_content"], KEY) == [
            {"type": "thinking", "thinking": "Let me think.", "signature": "EqQBCgIYAhIM"},
            redacted,
        ]
    out, _ = run_both("anthropic", data, [], include_encrypted=False)
    assert "encrypted_content" not in responses_grammar.check(out)["output"][0]


@pytest.mark.parametrize(
    ("error_type", "code"),
    [
        ("overloaded_error", "server_error"),
        ("rate_limit_error", "rate_limit_exceeded"),
        ("invalid_request_error", "invalid_prompt"),
    ],
)
def test_failure_after_the_first_byte(error_type: str, code: str) -> None:
    for cls in _classes("anthropic"):
        t = cls(RESPONSE_ID, MODEL, CREATED, ESTIMATE, **OPTIONS)
        head = t.feed(_anthropic(START)) + t.ping()
        out = head + t.fail(error_type, "upstream went away")
        final = responses_grammar.check(out)
        assert final["error"] == {"code": code, "message": "upstream went away"}
        assert t.finished and not t.complete and t.error == (error_type, "upstream went away")
        assert b": ping\n\n" in out
        assert openai_sdk_response(out)[0] == "response.failed"


# -- generated streams ---------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(anthropic_streams.streams(), st.data())
def test_generated_anthropic_streams(stream: anthropic_streams.Stream, data: st.DataObject) -> None:
    body = stream.encode()
    cuts = data.draw(st.lists(st.integers(1, max(1, len(body) - 1)), max_size=6))
    out, state = run_both("anthropic", body, [c for c in cuts if c < len(body)])
    responses_grammar.check(out)
    assert state[0]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(chat_streams.streams(), st.data())
def test_generated_chat_streams(stream: chat_streams.Stream, data: st.DataObject) -> None:
    body = stream.encode()
    cuts = data.draw(st.lists(st.integers(1, max(1, len(body) - 1)), max_size=6))
    out, state = run_both("chat", body, [c for c in cuts if c < len(body)])
    responses_grammar.check(out)
    assert state[0]


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300), st.lists(st.integers(1, 299), max_size=6))
def test_arbitrary_bytes(raw: bytes, cuts: list[int]) -> None:
    for upstream in ("anthropic", "chat"):
        out, (finished, *_rest) = run_both(
            upstream, raw, [c for c in cuts if c < len(raw)], max_event_bytes=64
        )
        assert finished
        responses_grammar.check(out)
