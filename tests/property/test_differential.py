"""Native and pure-Python transducers emit byte-identical output, however the input is split.

Over every recorded stream in tests/fixtures/chat and over generated streams in every
upstream dialect (tests/support/chat_streams.py), each fed at random byte offsets; plus arbitrary
and corrupted bytes, where the two must still agree on what they emit.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support import anthropic_grammar
from support.chat_streams import Stream, streams
from support.implementations import (
    CHAT_STREAMS,
    anthropic_via_chat_class,
    end_state,
    feed_all,
    recorded_chat_stream,
)

pytestmark = pytest.mark.usefixtures("require_native")


@pytest.fixture
def require_native() -> None:
    anthropic_via_chat_class("native")


KEY = b"differential-test-key"


def run_both(
    data: bytes, cuts: list[int], *, signing_key: bytes | None = KEY, max_event_bytes: int = 1 << 20
):
    results = []
    for impl in ("native", "python"):
        cls = anthropic_via_chat_class(impl)
        t = cls(
            "msg_diff",
            "claude-sonnet-4-5",
            42,
            signing_key=signing_key,
            max_event_bytes=max_event_bytes,
        )
        out = feed_all(t, data, cuts)
        state = end_state(t)
        # Feeding or finishing after the end yields nothing, in both.
        assert t.feed(b"data: {}\n\n") == b"" and t.finish() == b"" and t.ping() == b""
        results.append((out, state))
    assert results[0][0] == results[1][0], "native and Python outputs differ"
    assert results[0][1] == results[1][1], "native and Python end states differ"
    return results[0]


@pytest.mark.parametrize("name", CHAT_STREAMS)
def test_fixture_whole_and_byte_by_byte(name: str) -> None:
    data = recorded_chat_stream(name)
    whole, _ = run_both(data, [])
    by_byte, _ = run_both(data, list(range(1, len(data))))
    assert by_byte == whole
    anthropic_grammar.check(whole)


@pytest.mark.parametrize("name", CHAT_STREAMS)
@pytest.mark.parametrize("seed", range(20))
def test_fixture_random_splits(name: str, seed: int) -> None:
    data = recorded_chat_stream(name)
    rng = random.Random(seed)
    cuts = rng.sample(range(1, len(data)), k=min(len(data) - 1, rng.randint(1, 40)))
    assert run_both(data, cuts)[0] == run_both(data, [])[0]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=streams(), data=st.data())
def test_generated_streams(stream: Stream, data: st.DataObject) -> None:
    raw = stream.encode()
    cuts = data.draw(st.lists(st.integers(1, max(1, len(raw) - 1)), max_size=12))
    out, (finished, complete, error, _, stop_reason, *_) = run_both(raw, cuts)
    assert out == run_both(raw, [])[0], "output depends on how the input was split"
    rebuilt = anthropic_grammar.check(out)
    assert finished
    if error is None:
        assert complete and rebuilt.complete
        texts = "".join(b["text"] for b in rebuilt.content if b["type"] == "text")
        assert texts == "".join(stream.expected.text)
        tools = [
            (b["id"], b["name"], b["input"]) for b in rebuilt.content if b["type"] == "tool_use"
        ]
        assert tools == stream.expected.tools
        if stream.expected.tools and stop_reason == "end_turn":
            pytest.fail("tool calls must end with tool_use")
    else:
        # Only a stream with neither finish_reason nor [DONE] may end in an error here.
        assert not stream.done and not any(
            c["choices"] and c["choices"][0]["finish_reason"] for c in stream.chunks
        )


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400), st.lists(st.integers(1, 399), max_size=8))
def test_arbitrary_bytes(raw: bytes, cuts: list[int]) -> None:
    cuts = [c for c in cuts if c < len(raw)]
    out, (finished, *_rest) = run_both(raw, cuts, max_event_bytes=64)
    assert finished
    anthropic_grammar.check(out)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(CHAT_STREAMS),
    st.lists(st.tuples(st.floats(0, 1), st.binary(max_size=6)), min_size=1, max_size=4),
    st.floats(0, 1),
)
def test_corrupted_fixtures(name: str, edits: list[tuple[float, bytes]], truncate: float) -> None:
    data = bytearray(recorded_chat_stream(name))
    for position, junk in edits:
        at = int(position * len(data))
        data[at : at + len(junk)] = junk
    data = data[: max(1, int(truncate * len(data)))]
    out, _ = run_both(bytes(data), [len(data) // 3, len(data) // 2])
    # Corruption may break tool JSON, so only the event framing is checked here.
    for name_, payload in anthropic_grammar.sse_events(out):
        assert payload["type"] == name_


def test_without_signing_key_no_signature() -> None:
    out, _ = run_both(
        recorded_chat_stream("vercel-deepseek-reasoning-content.jsonl"), [], signing_key=None
    )
    assert b"signature_delta" not in out
    out, _ = run_both(recorded_chat_stream("vercel-deepseek-reasoning-content.jsonl"), [])
    assert out.count(b"signature_delta") == 1
