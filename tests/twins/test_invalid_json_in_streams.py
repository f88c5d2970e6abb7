"""Invalid JSON hidden in a field the decoders skip: native == Python for every decoder.

The pure-Python decoders parse each event with orjson, which rejects the whole event if any
part of it is invalid (a lone surrogate escape, an unknown escape, a raw control character,
a number out of f64 range, nesting deeper than 1024...), even in a field the decoder never
reads; the native readers only look at the fields they use, so they must validate the rest
by orjson's rules too. Each example takes a real recording, adds a key holding a (usually
invalid) value to one object of one event, and runs both implementations.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.gemini_streams import GEMINI_STREAMS
from support.golden_cases import make
from support.implementations import (
    ANTHROPIC_STREAMS,
    CHAT_STREAMS,
    anthropic_via_chat_class,
    end_state,
)
from support.responses_streams import RESPONSES_STREAMS

# (direction, fixture folder, recordings): each decoder, through each of its encoders.
DECODERS = [
    ("anthropic_via_chat", "chat", CHAT_STREAMS),
    ("responses_via_chat", "chat", CHAT_STREAMS),
    ("chat_via_anthropic", "anthropic", sorted(ANTHROPIC_STREAMS)),
    ("responses_via_anthropic", "anthropic", sorted(ANTHROPIC_STREAMS)),
    ("anthropic_via_gemini", "gemini", GEMINI_STREAMS),
    ("chat_via_gemini", "gemini", GEMINI_STREAMS),
    ("anthropic_via_responses", "responses", sorted(RESPONSES_STREAMS)),
    ("chat_via_responses", "responses", sorted(RESPONSES_STREAMS)),
]

# Values orjson rejects (and a few near misses it accepts), as raw JSON text.
VALUES = [
    rb'"\ud800"',
    rb'"mess\ud800age"',
    rb'"\udc00"',
    rb'"\ud800\u0041"',
    rb'"\ud800\ud800"',
    rb'"\ud83d\ude00"',
    rb'"\x41"',
    rb'"\u12"',
    rb'"\u12g4"',
    rb'"\'"',
    rb'"\/ok"',
    b'"a\x01b"',
    b'"tab\there"',
    b'"nl\nhere"',
    b'"\x7f del is fine"',
    b'"\xff\xfe"',
    b"1e400",
    b"-1e400",
    b"1e308",
    b"123456789012345678901234567890",
    b"01",
    b"-",
    b"1.",
    b".5",
    b"+1",
    b"1e",
    b"NaN",
    b"Infinity",
    b"[1,]",
    b'{"a":1,}',
    b'{"a":1,"a":2}',
    b"tru",
    b"[" * 1025 + b"]" * 1025,
    b"[" * 1000 + b"]" * 1000,
    b'{"a":' * 600 + b"1" + b"}" * 600,
]

# A skipped key, an invalid key, and keys the decoders read (some native readers check only
# what they skip by the scanner and rely on serde_json for what they read).
KEYS = [
    b'"zz_skipped"',
    rb'"k\ud800"',
    b'"type"',
    b'"text"',
    b'"index"',
    b'"input_tokens"',
    b'"stop_reason"',
    b'"error"',
]

pytestmark = pytest.mark.usefixtures("require_native")


@pytest.fixture
def require_native() -> None:
    anthropic_via_chat_class("native")


# Object starts inside data lines (keys are JSON strings, so `{"` never occurs inside one).
OBJECT_START = re.compile(rb'\{(?=\s*")')


def _input(folder: str, name: str) -> bytes:
    from support.golden_cases import load_input

    return load_input(f"fixture:{folder}/{name}")


def _run(direction: str, impl: str, data: bytes, cut: int) -> tuple[bytes, tuple[object, ...]]:
    t = make({"direction": direction, "options": {}}, impl)
    out = t.feed(data[:cut]) + t.feed(data[cut:]) + t.finish()
    return out, end_state(t)


junk_strings = st.text(alphabet='\\ud80cfA0"x\x01 ', max_size=14).map(
    lambda s: b'"' + s.encode() + b'"'
)


@pytest.mark.parametrize(("direction", "folder", "names"), DECODERS, ids=[d[0] for d in DECODERS])
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_invalid_value_in_skipped_field(
    direction: str, folder: str, names: list[str], data: st.DataObject
) -> None:
    body = _input(folder, data.draw(st.sampled_from(names), label="recording"))
    starts = [m.start() for m in OBJECT_START.finditer(body)]
    at = data.draw(st.sampled_from(starts), label="object") + 1
    value = data.draw(st.sampled_from(VALUES) | junk_strings, label="value")
    key = data.draw(st.sampled_from(KEYS), label="key")
    # As the first member: a repeated key ("type", "text"...) is read last-wins by both
    # parsers, so its first (injected) value is parsed but then replaced.
    injected = body[:at] + key + b":" + value + b"," + body[at:]
    cut = data.draw(st.integers(0, len(injected)), label="cut")
    native = _run(direction, "native", injected, cut)
    python = _run(direction, "python", injected, cut)
    assert native == python


@pytest.mark.parametrize("direction", ["chat_via_anthropic", "responses_via_anthropic"])
@pytest.mark.parametrize("depth", [255, 1000])
def test_citation_nested_past_what_orjson_writes(direction: str, depth: int) -> None:
    """A web search citation carrying a member nested deeper than orjson writes (254 levels;
    it parses up to 1024): both implementations still turn its URL into the annotation."""
    body = _input("anthropic", "vercel-web-search-citations.jsonl")
    at = body.index(b'"citation":{') + len(b'"citation":{')
    injected = body[:at] + b'"zz_skipped":' + b"[" * depth + b"]" * depth + b"," + body[at:]
    native = _run(direction, "native", injected, len(injected) // 2)
    python = _run(direction, "python", injected, len(injected) // 2)
    assert native == python
    assert (
        b'"url_citation"' if direction == "responses_via_anthropic" else b'"annotations"'
    ) in native[0]
