"""Micro benchmarks: native vs pure-Python transducer on the same streams and chunkings.

Run: python -m pytest benches --benchmark-only --benchmark-json=benches/results/micro.json
then python benches/report.py benches/results/micro.json for the events/s table.
Baselines measured in the same run: orjson.loads of the same upstream events (the cost of
merely parsing them in Python) and a plain copy of the bytes. A change of the native core
is measured against the previous build with benches/compare_builds.py (interleaved rounds).
"""

from __future__ import annotations

from collections.abc import Callable

import orjson
import pytest

from hydra_proxy.transducers import AnthropicViaChatStream as Python
from streams import CHUNKINGS, STREAMS

try:
    from hydra_proxy._native import AnthropicViaChatStream as Native
except ImportError:  # pragma: no cover
    Native = None  # type: ignore[assignment,misc]

IMPLEMENTATIONS: dict[str, Callable[..., object] | None] = {"native": Native, "python": Python}


def _bodies(stream: str) -> list[bytes]:
    # The corpus is several bodies joined by NUL: each is one response stream.
    return STREAMS[stream]().split(b"\x00")


def _translate(cls: Callable[..., object], chunked: list[list[bytes]]) -> int:
    size = 0
    for chunks in chunked:
        t = cls("msg_bench", "claude-sonnet-4-5", 100, signing_key=b"bench-key")
        feed = t.feed  # type: ignore[attr-defined]
        for chunk in chunks:
            size += len(feed(chunk))
        size += len(t.finish())  # type: ignore[attr-defined]
    return size


@pytest.mark.parametrize("chunking", list(CHUNKINGS))
@pytest.mark.parametrize("stream", list(STREAMS))
@pytest.mark.parametrize("impl", list(IMPLEMENTATIONS))
def test_transducer(benchmark, impl: str, stream: str, chunking: str) -> None:  # type: ignore[no-untyped-def]
    cls = IMPLEMENTATIONS[impl]
    if cls is None:
        pytest.skip("optional native extension hydra_proxy._native is not built")
    bodies = _bodies(stream)
    chunked = [CHUNKINGS[chunking](body) for body in bodies]
    events = sum(body.count(b"\n\n") for body in bodies)
    output = _translate(cls, chunked)  # also the warm-up
    benchmark.group = f"{stream} / {chunking}"
    benchmark.extra_info.update(
        {
            "impl": impl,
            "stream": stream,
            "chunking": chunking,
            "upstream_events": events,
            "upstream_bytes": sum(map(len, bodies)),
            "output_bytes": output,
        }
    )
    assert output > 0
    benchmark(_translate, cls, chunked)


@pytest.mark.parametrize("stream", list(STREAMS))
def test_baseline_orjson_loads(benchmark, stream: str) -> None:  # type: ignore[no-untyped-def]
    """Only parsing each upstream event's JSON in Python: the floor for a Python proxy."""
    bodies = _bodies(stream)
    payloads = [
        line[6:] for body in bodies for line in body.split(b"\n") if line.startswith(b"data: {")
    ]
    benchmark.group = f"{stream} / baselines"
    benchmark.extra_info.update(
        {
            "impl": "orjson.loads",
            "stream": stream,
            "chunking": "-",
            "upstream_events": sum(b.count(b"\n\n") for b in bodies),
            "upstream_bytes": sum(map(len, bodies)),
        }
    )
    loads = orjson.loads
    benchmark(lambda: [loads(p) for p in payloads])


@pytest.mark.parametrize("stream", list(STREAMS))
def test_baseline_byte_copy(benchmark, stream: str) -> None:  # type: ignore[no-untyped-def]
    """Copying the upstream bytes once: what a byte-forwarding proxy's core costs."""
    bodies = _bodies(stream)
    benchmark.group = f"{stream} / baselines"
    benchmark.extra_info.update(
        {
            "impl": "byte copy",
            "stream": stream,
            "chunking": "-",
            "upstream_events": sum(b.count(b"\n\n") for b in bodies),
            "upstream_bytes": sum(map(len, bodies)),
        }
    )
    benchmark(lambda: [bytes(bytearray(b)) for b in bodies])


# -- Gemini upstream: AnthropicViaGeminiStream ------------------------------------------------

from hydra_proxy.transducers import AnthropicViaGeminiStream as PythonGemini  # noqa: E402
from streams import GEMINI_CHUNKINGS, GEMINI_STREAMS  # noqa: E402

try:
    from hydra_proxy._native import AnthropicViaGeminiStream as NativeGemini
except ImportError:  # pragma: no cover
    NativeGemini = None  # type: ignore[assignment,misc]

GEMINI_IMPLEMENTATIONS: dict[str, Callable[..., object] | None] = {
    "native": NativeGemini,
    "python": PythonGemini,
}


@pytest.mark.parametrize("chunking", list(GEMINI_CHUNKINGS))
@pytest.mark.parametrize("stream", list(GEMINI_STREAMS))
@pytest.mark.parametrize("impl", list(GEMINI_IMPLEMENTATIONS))
def test_gemini_transducer(benchmark, impl: str, stream: str, chunking: str) -> None:  # type: ignore[no-untyped-def]
    cls = GEMINI_IMPLEMENTATIONS[impl]
    if cls is None:
        pytest.skip("optional native extension hydra_proxy._native is not built")
    bodies = GEMINI_STREAMS[stream]().split(b"\x00")
    chunked = [GEMINI_CHUNKINGS[chunking](body) for body in bodies]
    output = _translate(cls, chunked)  # also the warm-up
    benchmark.group = f"{stream} / {chunking}"
    benchmark.extra_info.update(
        {
            "impl": impl,
            "stream": stream,
            "chunking": chunking,
            "upstream_events": sum(body.count(b"data: ") for body in bodies),
            "upstream_bytes": sum(map(len, bodies)),
            "output_bytes": output,
        }
    )
    assert output > 0
    benchmark(_translate, cls, chunked)


@pytest.mark.parametrize("stream", list(GEMINI_STREAMS))
def test_gemini_baseline_orjson_loads(benchmark, stream: str) -> None:  # type: ignore[no-untyped-def]
    """Only parsing each Gemini event's JSON in Python."""
    bodies = GEMINI_STREAMS[stream]().split(b"\x00")
    payloads = [
        line[5:] for body in bodies for line in body.split(b"\r\n") if line.startswith(b"data:")
    ]
    benchmark.group = f"{stream} / baselines"
    benchmark.extra_info.update(
        {
            "impl": "orjson.loads",
            "stream": stream,
            "chunking": "-",
            "upstream_events": len(payloads),
            "upstream_bytes": sum(map(len, bodies)),
        }
    )
    loads = orjson.loads
    benchmark(lambda: [loads(p) for p in payloads])


# -- the OpenAI Responses compositions ---------------------------------------------------
# Each runs on the synthetic streams in its upstream's protocol: the Chat stream itself, or
# that stream translated once into Anthropic (AnthropicViaChatStream) or into Responses
# (ResponsesViaChatStream), so every row carries the same content.

COMPOSITIONS: dict[str, tuple[str, Callable[[Callable[..., object]], object]]] = {
    "responses_via_chat": (
        "chat",
        lambda cls: cls("resp_bench", "gpt-5-codex", 1764460800, 100, signing_key=b"bench-key"),
    ),
    "responses_via_anthropic": (
        "anthropic",
        lambda cls: cls("resp_bench", "gpt-5-codex", 1764460800, 100, signing_key=b"bench-key"),
    ),
    "anthropic_via_responses": (
        "responses",
        lambda cls: cls("msg_bench", "claude-sonnet-4-5", 100, signing_key=b"bench-key"),
    ),
    "chat_via_responses": (
        "responses",
        lambda cls: cls("chatcmpl-bench", "gpt-5-codex", 1764460800, include_usage=True),
    ),
}
_CLASS_NAMES = {
    "responses_via_chat": "ResponsesViaChatStream",
    "responses_via_anthropic": "ResponsesViaAnthropicStream",
    "anthropic_via_responses": "AnthropicViaResponsesStream",
    "chat_via_responses": "ChatViaResponsesStream",
}
SYNTHETIC = ["text-2000", "tool-500-fragments", "reasoning-then-tools"]


def _in_protocol(protocol: str, body: bytes) -> bytes:
    """A Chat body in the upstream protocol `protocol` (translated by Python, once)."""
    from hydra_proxy import transducers

    if protocol == "chat":
        return body
    t: object
    if protocol == "anthropic":
        t = transducers.AnthropicViaChatStream("msg_bench", "claude-sonnet-4-5", 100)
    else:
        t = transducers.ResponsesViaChatStream("resp_bench", "gpt-5-codex", 1764460800, 100)
    return t.feed(body) + t.finish()  # type: ignore[attr-defined,no-any-return]


def _run(make: Callable[..., object], cls: Callable[..., object], chunks: list[bytes]) -> int:
    t = make(cls)
    feed = t.feed  # type: ignore[attr-defined]
    size = sum(len(feed(chunk)) for chunk in chunks)
    return size + len(t.finish())  # type: ignore[attr-defined]


@pytest.mark.parametrize("stream", SYNTHETIC)
@pytest.mark.parametrize("composition", list(COMPOSITIONS))
@pytest.mark.parametrize("impl", list(IMPLEMENTATIONS))
def test_responses_composition(benchmark, impl: str, composition: str, stream: str) -> None:  # type: ignore[no-untyped-def]
    from hydra_proxy import transducers

    if impl == "native":
        try:
            from hydra_proxy import _native
        except ImportError:  # pragma: no cover
            pytest.skip("optional native extension hydra_proxy._native is not built")
        cls = getattr(_native, _CLASS_NAMES[composition])
    else:
        cls = getattr(transducers.PYTHON, _CLASS_NAMES[composition])
    protocol, make = COMPOSITIONS[composition]
    body = _in_protocol(protocol, STREAMS[stream]())
    chunks = CHUNKINGS["event-aligned"](body)
    output = _run(make, cls, chunks)  # also the warm-up
    benchmark.group = f"{composition} / {stream}"
    benchmark.extra_info.update(
        {
            "impl": impl,
            "stream": f"{composition}:{stream}",
            "chunking": "event-aligned",
            "upstream_events": body.count(b"\n\n"),
            "upstream_bytes": len(body),
            "output_bytes": output,
        }
    )
    assert output > 0
    benchmark(_run, make, cls, chunks)
