"""ResponsesViaGeminiStream (Transducer<GeminiDecoder, ResponsesEncoder>): native and
pure-Python produce the same bytes for every Gemini recording, whole and split at random
places; the openai SDK's Responses stream accumulator reads the output."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hydra_proxy import transducers
from hydra_proxy.responses.context import ResponsesContext
from hydra_proxy.responses.encoder import echo_text
from support.gemini_fixtures import GEMINI
from support.implementations import NATIVE_MISSING, _native

STREAMS = sorted(p.name for p in GEMINI.iterdir() if p.suffix == ".sse")
KEY = b"k" * 32
CONTEXT = ResponsesContext(model="gemini-3-pro-preview", include_encrypted=True, summary=True)


def run(factory: Any, chunks: list[bytes]) -> bytes:
    t = factory(
        "resp_hydra_1",
        "gemini-3-pro-preview",
        1_700_000_000,
        42,
        echo=echo_text(CONTEXT),
        include_encrypted=True,
        summary=True,
        signing_key=KEY,
    )
    out = b"".join(t.feed(c) for c in chunks) + t.finish()
    assert t.finished
    return out


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@pytest.mark.parametrize("name", STREAMS)
def test_python_reads_every_recording(name: str) -> None:
    out = run(transducers.ResponsesViaGeminiStream, [(GEMINI / name).read_bytes()])
    assert b"event: response.completed" in out or b"event: response.incomplete" in out


@pytest.mark.skipif(_native is None, reason=NATIVE_MISSING or "native")
@pytest.mark.parametrize("name", STREAMS)
@settings(max_examples=25, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=1 << 20), max_size=8))
def test_native_equals_python_at_any_split(name: str, cuts: list[int]) -> None:
    data = (GEMINI / name).read_bytes()
    chunks = _split(data, cuts)
    expected = run(transducers.ResponsesViaGeminiStream, [data])
    assert run(transducers.ResponsesViaGeminiStream, chunks) == expected
    assert run(_native.ResponsesViaGeminiStream, chunks) == expected
