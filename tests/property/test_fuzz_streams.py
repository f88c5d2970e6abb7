"""A bounded fuzz run over the SSE parser and every composition (the code's own table, tests/support/compositions.py), on both implementations.

Arbitrary bytes and mutated recordings (tests/fixtures), split at arbitrary offsets and read
under small and default event bounds: nothing raises; native and Python emit the same
bytes and end in the same state; whatever came in, the output is a well-formed stream of
the client's protocol that ends complete or with an error (tests/support/anthropic_grammar.py,
chat_grammar.py, responses_grammar.py); and the parser never holds more than the bound for
the event being read. HYDRA_FUZZ_EXAMPLES scales the run (CI: the default, well under a
minute); longer runs: the cargo-fuzz targets in fuzz/ (CONTRIBUTING.md).
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hydra_proxy.sse import SseParser
from hydra_proxy.stream import DEFAULT_MAX_EVENT_BYTES
from support.compositions import COMPOSITIONS, client_error, make
from support.failure_streams import BINARY, HTML_PAGE
from support.gemini_streams import GEMINI_STREAMS, gemini_stream
from support.implementations import ANTHROPIC_STREAMS, CHAT_STREAMS, _native, recorded_chat_stream
from support.responses_streams import RESPONSES_STREAMS

EXAMPLES = int(os.environ.get("HYDRA_FUZZ_EXAMPLES", "40"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
IMPLS = ("native", "python") if _native is not None else ("python",)
# Recordings up to this size (larger ones make a slow example and add no new grammar).
_MAX_FIXTURE = 24_000


def _fixtures() -> dict[str, list[bytes]]:
    pools = {
        "chat": [recorded_chat_stream(n) for n in CHAT_STREAMS],
        "anthropic": list(ANTHROPIC_STREAMS.values()),
        "responses": list(RESPONSES_STREAMS.values()),
        "gemini": [gemini_stream(n) for n in GEMINI_STREAMS],
    }
    return {k: sorted(b for b in v if 0 < len(b) <= _MAX_FIXTURE) for k, v in pools.items()}


FIXTURES = _fixtures()
# Byte strings that matter to an SSE parser or a JSON reader.
TOKENS = [
    b"\n", b"\n\n", b"\r", b"\r\n", b"data: ", b"data:", b"event: error\n", b"event: ", b":",
    b"{", b"}", b"[", b'"', b"\\", b",", b"\xff", b"\xef\xbb\xbf", b"\x00", b"[DONE]",
    b'{"error":{"message":"m"}}', b'"type":"message_stop"', b'"finish_reason":"stop"',
    b"<html>", HTML_PAGE[:40], BINARY[:12],
]  # fmt: skip
BOUNDS = st.sampled_from([16, 64, 256, 4096, DEFAULT_MAX_EVENT_BYTES])


@st.composite
def mutated(draw: st.DrawFn, upstream: str) -> bytes:
    """A recording of `upstream`, truncated, with bytes inserted, deleted or replaced."""
    body = bytearray(draw(st.sampled_from(FIXTURES[upstream])))
    for _ in range(draw(st.integers(0, 6))):
        at = draw(st.integers(0, len(body)))
        op = draw(st.sampled_from(["insert", "delete", "replace", "duplicate", "truncate"]))
        piece = draw(st.one_of(st.sampled_from(TOKENS), st.binary(min_size=1, max_size=8)))
        if op == "insert":
            body[at:at] = piece
        elif op == "delete":
            del body[at : at + draw(st.integers(1, 64))]
        elif op == "replace":
            body[at : at + len(piece)] = piece
        elif op == "duplicate":
            body[at:at] = body[max(0, at - 200) : at]
        else:
            del body[at:]
    return bytes(body)


def sse_like() -> st.SearchStrategy[bytes]:
    """Random lines of SSE fields, comments, JSON fragments and line ends."""
    line = st.one_of(
        st.sampled_from(TOKENS),
        st.builds(lambda v: b"data: " + v, st.binary(max_size=40)),
        st.builds(lambda v: b"event: " + v.encode(), st.text(max_size=12)),
        st.binary(max_size=16),
    )
    return st.lists(line, max_size=40).map(b"".join)


def _chunks(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(body) + 1) for c in cuts})
    start, out = 0, []
    for point in points:
        out.append(body[start:point])
        start = point
    out.append(body[start:])
    return out


def _run(composition: str, impl: str, chunks: list[bytes], bound: int) -> tuple[bytes, Any]:
    t = make(composition, impl, max_event_bytes=bound)
    out = []
    for chunk in chunks:
        out.append(t.feed(chunk))
        assert t.buffered_bytes <= bound, "the parser holds more than the event bound"
    out.append(t.finish())
    assert t.finished, "upstream EOF always ends the client's stream"
    state = (t.finished, t.complete, t.error, t.has_content, t.stop_reason, t.usage)
    assert t.feed(b"data: {}\n\n") == b"" and t.finish() == b"" and t.ping() == b""
    return b"".join(out), state


def _check(composition: str, body: bytes, cuts: list[int], bound: int) -> None:
    chunks = _chunks(body, cuts)
    results = [_run(composition, impl, chunks, bound) for impl in IMPLS]
    out, state = results[0]
    for other in results[1:]:
        assert other[0] == out, "native and Python outputs differ"
        assert other[1] == state, "native and Python end states differ"
    told = client_error(composition, out, tool_json=False)
    assert (told is None) == state[1], "complete exactly when no error was told"


CUTS = st.lists(st.integers(0, 1 << 16), max_size=12)


@FUZZ
@given(body=st.one_of(st.binary(max_size=600), sse_like()), cuts=CUTS, bound=BOUNDS)
def test_arbitrary_bytes_through_every_composition(
    body: bytes, cuts: list[int], bound: int
) -> None:
    for composition in COMPOSITIONS:
        _check(composition, body, cuts, bound)


@pytest.mark.parametrize("upstream", sorted(FIXTURES))
@FUZZ
@given(data=st.data(), cuts=CUTS, bound=BOUNDS)
def test_mutated_recordings(
    upstream: str, data: st.DataObject, cuts: list[int], bound: int
) -> None:
    body = data.draw(mutated(upstream))
    for composition, (source, *_) in COMPOSITIONS.items():
        if source == upstream:
            _check(composition, body, cuts, bound)


def _parse(chunks: list[bytes], bound: int) -> tuple[list[tuple[bytes | None, bytes]], str | None]:
    parser = SseParser(bound)
    events = []
    for chunk in chunks:
        events += parser.feed(chunk)
        assert parser.buffered_bytes <= bound
    events += parser.finish()
    assert parser.buffered_bytes == 0
    return events, parser.error


@settings(FUZZ, max_examples=EXAMPLES * 5)
@given(body=st.one_of(st.binary(max_size=400), sse_like()), cuts=CUTS, bound=BOUNDS)
def test_sse_parser_splits_and_bound(body: bytes, cuts: list[int], bound: int) -> None:
    """However the input is split, the events are the same; under a bound, those delivered
    are the unbounded parse's first ones (the bound only stops the stream early)."""
    whole, whole_error = _parse([body], 1 << 30)
    split, split_error = _parse(_chunks(body, cuts), 1 << 30)
    assert (split, split_error) == (whole, whole_error)
    bounded, bounded_error = _parse(_chunks(body, cuts), bound)
    assert bounded == whole[: len(bounded)]
    if bounded_error is None:
        assert bounded == whole
