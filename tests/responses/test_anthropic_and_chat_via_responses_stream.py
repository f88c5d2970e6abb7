"""OpenAI Responses streams (the ``responses`` provider kind) -> Anthropic Messages and
OpenAI Chat, on both implementations (the Responses decoder before the Anthropic and the
Chat encoders).

Differential (native == Python, any split) over every recorded Responses stream and
generated ones; every translation into Anthropic is checked by the strict Anthropic
grammar and accumulated by the official `anthropic` SDK, which must rebuild the text, tool
calls, stop reason and usage the recording's own final ``response`` object says; reasoning
items come back as thinking blocks whose signature carries the upstream item
(`reasoning.verify_upstream_item`), so it can be replayed.
"""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2 as httpx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hydra_proxy import transducers
from hydra_proxy.responses.reasoning import verify_upstream_item
from support import anthropic_grammar, responses_streams
from support.chat_chunks import check_chunks
from support.implementations import _native, end_state, feed_all, random_cuts
from support.responses_streams import RESPONSES_STREAMS

KEY = b"responses-upstream-test-key"
NAMES = sorted(RESPONSES_STREAMS)


def _classes(client: str) -> list[Any]:
    name = "AnthropicViaResponsesStream" if client == "anthropic" else "ChatViaResponsesStream"
    classes = [getattr(transducers.PYTHON, name)]
    if _native is not None:
        classes.insert(0, getattr(_native, name))
    return classes


def _make(cls: Any, client: str, **options: Any) -> Any:
    if client == "anthropic":
        return cls("msg_hydratest", "gpt-5-codex", 42, **{"signing_key": KEY, **options})
    return cls(
        "chatcmpl-hydratest",
        "gpt-5-codex",
        1764460800,
        **{"include_usage": True, "continuation_key": KEY, "signing_key": KEY, **options},
    )


def run_both(client: str, data: bytes, cuts: list[int], **options: Any) -> tuple[bytes, Any]:
    results = []
    for cls in _classes(client):
        t = _make(cls, client, **options)
        out = feed_all(t, data, cuts)
        state = end_state(t)
        assert t.feed(b"data: {}\n\n") == b"" and t.finish() == b"" and t.ping() == b""
        results.append((out, state))
    for other in results[1:]:
        assert other[0] == results[0][0], "native and Python outputs differ"
        assert other[1] == results[0][1], "native and Python end states differ"
    return results[0]


@pytest.mark.parametrize("client", ["anthropic", "chat"])
@pytest.mark.parametrize("name", NAMES)
def test_differential_fixture(client: str, name: str) -> None:
    data = RESPONSES_STREAMS[name]
    whole, state = run_both(client, data, [])
    assert state[0] and state[1], "every recording ends cleanly"
    assert run_both(client, data, list(range(1, len(data))))[0] == whole
    for seed in range(6):
        assert run_both(client, data, random_cuts(data, seed))[0] == whole


# -- what the recording's own final response says --------------------------------------------


def _final(data: bytes) -> dict[str, Any]:
    for line in reversed(data.split(b"\n")):
        if line.startswith(b"data: "):
            event = orjson.loads(line[6:])
            if event["type"] in ("response.completed", "response.incomplete"):
                response: dict[str, Any] = event["response"]
                return response
    raise AssertionError("no final response")


def _truth(data: bytes) -> dict[str, Any]:
    response = _final(data)
    text, tools, reasoning = [], [], []
    for item in response["output"]:
        if item["type"] == "message":
            text += [p["text"] for p in item["content"] if p["type"] == "output_text"]
        elif item["type"] == "function_call":
            tools.append((item["call_id"], item["name"], orjson.loads(item["arguments"] or "{}")))
    # The reasoning items as output_item.done sent them (OpenAI encrypts the final
    # response's copy anew; either replays).
    for line in data.split(b"\n"):
        if line.startswith(b"data: "):
            event = orjson.loads(line[6:])
            if (
                event["type"] == "response.output_item.done"
                and event["item"]["type"] == "reasoning"
            ):
                reasoning.append(event["item"])
    usage = response["usage"]
    cached = usage["input_tokens_details"]["cached_tokens"]
    return {
        "text": "".join(text),
        "tools": tools,
        "reasoning": reasoning,
        "stop_reason": "tool_use" if tools else "end_turn",
        "usage": (usage["input_tokens"] - cached, cached, usage["output_tokens"]),
    }


def anthropic_sdk_message(sse: bytes) -> Any:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=sse)

    client = anthropic.Anthropic(
        api_key="k",
        base_url="http://proxy.test",
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )
    with client.messages.stream(
        model="gpt-5-codex", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        for _ in stream:
            pass
        return stream.get_final_message()


@pytest.mark.parametrize("name", NAMES)
def test_anthropic_sdk_rebuilds_every_recording(name: str) -> None:
    data = RESPONSES_STREAMS[name]
    truth = _truth(data)
    out, state = run_both("anthropic", data, [])
    anthropic_grammar.check(out)
    message = anthropic_sdk_message(out)
    text = "".join(b.text for b in message.content if b.type == "text")
    assert text == truth["text"]
    calls = [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"]
    assert calls == truth["tools"]
    assert message.stop_reason == truth["stop_reason"] == state[4]
    usage = message.usage
    assert (usage.input_tokens, usage.cache_read_input_tokens, usage.output_tokens) == truth[
        "usage"
    ]
    # Reasoning with encrypted content comes back replayable: the signature carries the item.
    thinking = [b for b in message.content if b.type == "thinking"]
    replayable = [r for r in truth["reasoning"] if r.get("encrypted_content")]
    assert len(thinking) >= len(replayable)
    carried = [verify_upstream_item(b.thinking, b.signature, KEY) for b in thinking]
    assert [c for c in carried if c is not None] == [
        {"id": r["id"], "encrypted_content": r["encrypted_content"]} for r in replayable
    ]
    for block, item in zip(thinking, replayable, strict=False):
        summary = "\n\n".join(s["text"] for s in item["summary"])
        assert block.thinking == summary


@pytest.mark.parametrize("name", NAMES)
def test_chat_clients_get_every_recording(name: str) -> None:
    data = RESPONSES_STREAMS[name]
    truth = _truth(data)
    out, _ = run_both("chat", data, [])
    chunks = check_chunks(out)
    assert chunks["text"] == truth["text"]
    assert chunks["tools"] == truth["tools"]
    assert chunks["finish"] == ("tool_calls" if truth["tools"] else "stop")
    input_tokens, cached, output_tokens = truth["usage"]
    assert chunks["usage"]["prompt_tokens"] == input_tokens + cached
    assert chunks["usage"]["completion_tokens"] == output_tokens


# -- chosen and generated streams ---------------------------------------------------------


def test_failures_keep_the_upstream_error() -> None:
    failed = {
        "type": "response.failed",
        "response": {"id": "r", "status": "failed", "error": {"code": "rate_limit_exceeded"}},
    }
    event = {"type": "error", "code": "server_error", "message": "The server had an error."}
    for payload, expected in (
        (failed, ("rate_limit_error", "the upstream failed to generate a response")),
        (event, ("api_error", "The server had an error.")),
    ):
        data = b"data: " + orjson.dumps(payload) + b"\n\n"
        out, state = run_both("anthropic", data, [])
        assert state[2] == expected
        assert anthropic_grammar.check(out).error == {"type": expected[0], "message": expected[1]}
    out, state = run_both("anthropic", RESPONSES_STREAMS[NAMES[0]][:200], [])
    assert state[2] is not None and not state[1], "a cut-off stream is an error"


def test_custom_tool_input_is_a_string_member() -> None:
    item = {"id": "ctc_1", "type": "custom_tool_call", "call_id": "call_p", "name": "apply_patch"}
    events = [
        {"type": "response.created", "response": {"id": "r", "model": "gpt-5"}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "input": ""}},
        *(
            {"type": "response.custom_tool_call_input.delta", "output_index": 0, "delta": d}
            for d in ('*** Begin "Patch"', "\n\\ end")
        ),
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**item, "input": '*** Begin "Patch"\n\\ end'},
        },
        {"type": "response.completed", "response": {"id": "r", "usage": None}},
    ]
    data = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)
    out, state = run_both("anthropic", data, random_cuts(data, 3))
    (block,) = anthropic_grammar.check(out).content
    assert block["input"] == {"input": '*** Begin "Patch"\n\\ end'}
    assert block["id"] == "call_p" and state[4] == "tool_use"


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(responses_streams.streams(), st.data())
def test_generated_streams(stream: responses_streams.Stream, data: st.DataObject) -> None:
    body = stream.encode()
    cuts = data.draw(st.lists(st.integers(1, max(1, len(body) - 1)), max_size=6))
    cuts = [c for c in cuts if c < len(body)]
    out, state = run_both("anthropic", body, cuts)
    run_both("chat", body, cuts)
    rebuilt = anthropic_grammar.check(out)
    expected = stream.expected
    if expected.error:
        assert rebuilt.error is not None and not state[1]
        return
    assert rebuilt.complete and rebuilt.stop_reason == expected.stop_reason
    assert [b["text"] for b in rebuilt.content if b["type"] == "text"] == expected.text
    assert [
        b["thinking"] for b in rebuilt.content if b["type"] == "thinking" and b["thinking"]
    ] == (expected.thinking)
    tools = [(b["id"], b["name"], b["input"]) for b in rebuilt.content if b["type"] == "tool_use"]
    assert tools == expected.tools


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300), st.lists(st.integers(1, 299), max_size=6))
def test_arbitrary_bytes(raw: bytes, cuts: list[int]) -> None:
    cuts = [c for c in cuts if c < len(raw)]
    out, (finished, *_rest) = run_both("anthropic", raw, cuts, max_event_bytes=64)
    assert finished
    anthropic_grammar.check(out)
    run_both("chat", raw, cuts, max_event_bytes=64)


@pytest.mark.parametrize("depth", [127, 129, 1023, 1024])
def test_nesting_is_read_as_orjson_reads_it(depth: int) -> None:
    """serde_json stops at 128 levels, orjson at 1024: the native side follows orjson."""
    deep = b"[" * depth + b"]" * depth
    data = (
        b'data: {"type":"response.output_text.delta","output_index":0,"delta":"x","deep":'
        + deep
        + b"}\n\n"
    )
    out, state = run_both("anthropic", data, [])
    invalid = depth + 1 > 1024  # the event object itself is one level
    assert (
        state[2] == ("api_error", "the upstream sent an event that is not valid JSON")
    ) == invalid
    assert (b"text_delta" in out) != invalid
