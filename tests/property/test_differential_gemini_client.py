"""The Gemini-client compositions emit byte-identical output natively and in pure Python,
however the input is split: over generated streams in every upstream dialect
(tests/support/chat_streams.py, anthropic_streams.py, responses_streams.py) and arbitrary bytes,
each fed at random byte offsets, with thoughts on and off, signed and not."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hydra_proxy import transducers
from support import anthropic_streams, chat_streams, responses_streams
from support.implementations import NATIVE_MISSING, _native, end_state, feed_all

KEY = b"differential-gemini-key"
CLASSES = {
    "chat": "GeminiViaChatStream",
    "anthropic": "GeminiViaAnthropicStream",
    "responses": "GeminiViaResponsesStream",
}
STRATEGIES = {
    "chat": chat_streams.streams(),
    "anthropic": anthropic_streams.streams(),
    "responses": responses_streams.streams(),
}
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None
)


def run_both(upstream: str, data: bytes, cuts: list[int], options: dict[str, Any]) -> bytes:
    if _native is None:
        pytest.skip(NATIVE_MISSING)
    results = []
    for module in (_native, transducers):
        t = getattr(module, CLASSES[upstream])("resp_diff", "gemini-diff", **options)
        out = feed_all(t, data, cuts)
        state = end_state(t)
        assert t.feed(b"data: {}\n\n") == b"" and t.finish() == b"" and t.ping() == b""
        results.append((out, state))
    assert results[0] == results[1], "native and Python differ"
    return results[0][0]


OPTIONS = st.sampled_from(
    [{"signing_key": KEY}, {"signing_key": KEY, "include_thoughts": False}, {}]
)


@pytest.mark.parametrize("upstream", sorted(CLASSES))
def test_generated_streams(upstream: str) -> None:
    @SETTINGS
    @given(st.data())
    def check(data: st.DataObject) -> None:
        body = data.draw(STRATEGIES[upstream]).encode()
        cuts = data.draw(
            st.builds(list, st.just([]))
            | st.lists(st.integers(1, max(len(body) - 1, 1)), max_size=12)
        )
        cuts = [c for c in cuts if 0 < c < len(body)]
        out = run_both(upstream, body, cuts, data.draw(OPTIONS))
        assert out  # a Gemini chunk or error always ends the output

    check()


@pytest.mark.parametrize("upstream", sorted(CLASSES))
def test_arbitrary_bytes(upstream: str) -> None:
    pieces = st.sampled_from(
        [b"data: ", b"\n\n", b"\r\n", b"{", b"}", b'"', b"event: error\n", b"[DONE]", b"\xff"]
    )

    @SETTINGS
    @given(st.lists(pieces | st.binary(max_size=8), max_size=40), st.data())
    def check(parts: list[bytes], data: st.DataObject) -> None:
        body = b"".join(parts)
        cuts = [
            c
            for c in data.draw(st.lists(st.integers(0, len(body)), max_size=8))
            if 0 < c < len(body)
        ]
        run_both(upstream, body, cuts, data.draw(OPTIONS))

    check()
