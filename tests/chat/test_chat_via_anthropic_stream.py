"""Anthropic Messages stream -> OpenAI Chat chunks, on both implementations.

Differential (native == Python, any split) over the recorded Anthropic streams and generated
ones; every translation is parsed by the official `openai` SDK, which must rebuild the text,
reasoning, tool calls, finish reason and usage the Anthropic stream carried; the
continuation suffix must give back Claude's signed and redacted thinking byte for byte.
"""

from __future__ import annotations

import random
from typing import Any

import httpx2 as httpx
import openai
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hydra_proxy import continuation
from support.anthropic_streams import Stream, streams
from support.chat_chunks import anthropic_truth, check_chunks
from support.implementations import ANTHROPIC_STREAMS, chat_via_anthropic_class, end_state, feed_all

KEY = b"continuation-test-key"
NAMES = sorted(ANTHROPIC_STREAMS)


def run_both(data: bytes, cuts: list[int], **kwargs: Any) -> tuple[bytes, tuple[Any, ...]]:
    options = {"include_usage": True, "continuation_key": KEY, **kwargs}
    results = []
    for impl in ("native", "python"):
        t = chat_via_anthropic_class(impl)("chatcmpl-test", "claude-x", 1764460800, **options)
        out = feed_all(t, data, cuts)
        state = end_state(t)
        assert t.feed(b"event: ping\ndata: {}\n\n") == b"" and t.finish() == b"" and t.ping() == b""
        results.append((out, state))
    assert results[0][0] == results[1][0], "native and Python outputs differ"
    assert results[0][1] == results[1][1], "native and Python end states differ"
    return results[0]


def openai_sdk_message(sse: bytes) -> tuple[list[Any], Any]:
    """Run the official openai SDK's streaming parser over `sse`."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=sse)

    client = openai.OpenAI(
        api_key="k",
        base_url="http://proxy.test/v1",
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )
    chunks = list(
        client.chat.completions.create(
            model="claude-x", messages=[{"role": "user", "content": "hi"}], stream=True
        )
    )
    return chunks, client


def sealed_blocks(reasoning: str) -> list[continuation.Block]:
    """The blocks the suffixes in `reasoning` restore, each suffix sealing exactly the one
    block whose reasoning comes right before it; nothing outside them."""
    blocks: list[continuation.Block] = []
    pos = 0
    for found in continuation.scan(reasoning, KEY):
        assert isinstance(found, continuation.VerifiedSuffix), "every suffix verifies"
        assert found.start == pos and len(found.blocks) == 1
        blocks.extend(found.blocks)
        pos = found.end
    assert pos == len(reasoning), "no reasoning after the last suffix"
    return blocks


@pytest.mark.parametrize("name", NAMES)
def test_differential_fixture(name: str) -> None:
    data = ANTHROPIC_STREAMS[name]
    whole, _ = run_both(data, [])
    assert run_both(data, list(range(1, len(data))))[0] == whole
    for seed in range(10):
        rng = random.Random(seed)
        cuts = rng.sample(range(1, len(data)), k=min(len(data) - 1, rng.randint(1, 40)))
        assert run_both(data, cuts)[0] == whole


@pytest.mark.parametrize("name", NAMES)
def test_openai_sdk_rebuilds_every_recording(impl: str, name: str) -> None:
    data = ANTHROPIC_STREAMS[name]
    t = chat_via_anthropic_class(impl)(
        "chatcmpl-test", "claude-x", 1764460800, include_usage=True, continuation_key=KEY
    )
    out = feed_all(t, data)
    truth = anthropic_truth(data)
    rebuilt = check_chunks(out)
    assert rebuilt["done"] and rebuilt["error"] is None and t.complete
    chunks, _ = openai_sdk_message(out)
    sdk_text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert sdk_text == truth["text"] == rebuilt["text"]
    assert sealed_blocks(rebuilt["reasoning"]) == truth["blocks"], (
        "signed and redacted thinking survive byte for byte, each block sealed by its suffix"
    )
    assert rebuilt["order"] == truth["order"], "each suffix right after its block's reasoning"
    assert rebuilt["tools"] == truth["tools"]
    assert rebuilt["finish"] == truth["finish"] == t.stop_reason
    assert chunks[-1].usage is not None
    usage = chunks[-1].usage
    assert (usage.prompt_tokens, usage.completion_tokens) == (truth["prompt"], truth["completion"])
    assert usage.total_tokens == truth["prompt"] + truth["completion"]
    assert (
        usage.prompt_tokens_details is not None
        and usage.prompt_tokens_details.cached_tokens == truth["cached"]
    )


def test_no_usage_chunk_unless_asked(impl: str) -> None:
    data = ANTHROPIC_STREAMS["sdkpy-basic-text.sse"]
    t = chat_via_anthropic_class(impl)("c", "m", 1)
    out = feed_all(t, data)
    assert (
        b'"choices":[]' not in out
        and b"reasoning_content" not in out
        and out.endswith(b"data: [DONE]\n\n")
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=streams(), data=st.data())
def test_generated_streams(stream: Stream, data: st.DataObject) -> None:
    raw = stream.encode()
    cuts = data.draw(st.lists(st.integers(1, max(1, len(raw) - 1)), max_size=12))
    out, state = run_both(raw, cuts)
    assert out == run_both(raw, [])[0]
    rebuilt = check_chunks(out)
    assert rebuilt["done"] and state[1]
    assert rebuilt["text"] == stream.expected.text
    assert rebuilt["tools"] == stream.expected.tools
    expected_blocks = [
        continuation.ThinkingBlock(b[0], b[1])
        if isinstance(b, tuple)
        else continuation.RedactedBlock(b)
        for b in stream.expected.thinking_blocks
    ]
    assert sealed_blocks(rebuilt["reasoning"]) == expected_blocks
    if not expected_blocks:
        assert rebuilt["reasoning"] == stream.expected.reasoning
    assert rebuilt["order"] == anthropic_truth(raw)["order"]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400), st.lists(st.integers(1, 399), max_size=8))
def test_arbitrary_bytes(raw: bytes, cuts: list[int]) -> None:
    out, state = run_both(raw, [c for c in cuts if c < len(raw)], max_event_bytes=64)
    assert state[0], "always ends"
    assert not out or check_chunks(out)["done"] or check_chunks(out)["error"]


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(NAMES),
    st.lists(st.tuples(st.floats(0, 1), st.binary(max_size=6)), min_size=1, max_size=4),
    st.floats(0, 1),
)
def test_corrupted_fixtures(name: str, edits: list[tuple[float, bytes]], truncate: float) -> None:
    data = bytearray(ANTHROPIC_STREAMS[name])
    for position, junk in edits:
        at = int(position * len(data))
        data[at : at + len(junk)] = junk
    data = data[: max(1, int(truncate * len(data)))]
    run_both(bytes(data), [len(data) // 3, len(data) // 2])


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(
        b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in events
    )


START = {"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 1}}}


@pytest.mark.parametrize(
    ("tail", "error"),
    [
        (b'event: error\ndata: {"type": "error", "error": {"details": null, "type": "overloaded_error", "message": "Overloaded"}}\n\n',
         {"message": "Overloaded", "type": "overloaded_error", "param": None, "code": None}),
        (b"", {"message": "the upstream stream ended before the response was complete", "type": "api_error", "param": None, "code": None}),
        (b"data: {oops\n\n", {"message": "the upstream sent an event that is not valid JSON", "type": "api_error", "param": None, "code": None}),
        (b'data: {"type": "content_block_delta", "index": 7, "delta": {"type": "text_delta", "text": "x"}}\n\n',
         {"message": "the upstream sent a delta for a content block it never started", "type": "api_error", "param": None, "code": None}),
    ],
)  # fmt: skip
def test_errors_become_error_chunks_never_done(
    impl: str, tail: bytes, error: dict[str, Any]
) -> None:
    body = sse(START, {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
               {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "partial"}}) + tail  # fmt: skip
    t = chat_via_anthropic_class(impl)("c", "m", 1)
    rebuilt = check_chunks(feed_all(t, body))
    assert rebuilt["error"] == error and not rebuilt["done"] and not t.complete
    assert rebuilt["text"] == "partial"
    with pytest.raises(openai.APIError, match=error["message"][:20]):
        openai_sdk_message(feed_all(chat_via_anthropic_class(impl)("c", "m", 1), body))


def test_error_before_anything_has_no_content(impl: str) -> None:
    t = chat_via_anthropic_class(impl)("c", "m", 1)
    t.feed(
        b'event: error\ndata: {"type":"error","error":{"type":"rate_limit_error","message":"slow"}}\n\n'
    )
    assert t.error == ("rate_limit_error", "slow") and not t.has_content
