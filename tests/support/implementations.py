"""Both transducer implementations and the recorded provider streams the tests feed them
(imported by the test modules; the `impl` fixture is conftest's)."""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from hydra_proxy.transducers import AnthropicViaChatStream as PyAnthropicViaChatStream
from hydra_proxy.transducers import ChatViaAnthropicStream as PyChatViaAnthropicStream

FIXTURES = Path(__file__).parents[1] / "fixtures"

try:
    from hydra_proxy import _native
except ImportError as exc:  # pragma: no cover - the test runner always builds it
    if os.environ.get("HYDRA_REQUIRE_NATIVE") == "1":
        raise
    _native = None  # type: ignore[assignment]
    NATIVE_MISSING = f"optional native extension hydra_proxy._native is not built ({exc})"
else:
    NATIVE_MISSING = ""

IMPLEMENTATIONS = ("native", "python")


def anthropic_via_chat_class(impl: str) -> Callable[..., Any]:
    if impl == "python":
        return PyAnthropicViaChatStream
    if _native is None:
        pytest.skip(NATIVE_MISSING)
    return _native.AnthropicViaChatStream  # type: ignore[no-any-return]


def chat_via_anthropic_class(impl: str) -> Callable[..., Any]:
    if impl == "python":
        return PyChatViaAnthropicStream
    if _native is None:
        pytest.skip(NATIVE_MISSING)
    return _native.ChatViaAnthropicStream  # type: ignore[no-any-return]


def recorded_chat_stream(name: str) -> bytes:
    """A recorded OpenAI-compatible stream as raw SSE bytes.

    `.sse` files are byte-exact HTTP bodies; `.jsonl` files (vercel/ai) lost their SSE
    framing, one data payload a line, and are re-framed as `data: <line>\\n\\n` + [DONE].
    """
    path = FIXTURES / "chat" / name
    data = path.read_bytes()
    if path.suffix == ".jsonl":
        lines = [line for line in data.splitlines() if line.strip()]
        data = b"".join(b"data: " + line + b"\n\n" for line in lines) + b"data: [DONE]\n\n"
    return data


CHAT_STREAMS = sorted(
    p.name for p in (FIXTURES / "chat").iterdir() if p.suffix in (".sse", ".jsonl")
)


def _anthropic_streams() -> dict[str, bytes]:
    """Every recorded Anthropic stream: raw `.sse` bodies, `.jsonl` payloads re-framed as
    `event: <type>\ndata: <line>\n\n`, and the 200 SSE bodies inside HTTP recordings."""
    streams: dict[str, bytes] = {}
    for path in sorted((FIXTURES / "anthropic").iterdir()):
        if path.suffix == ".sse":
            streams[path.name] = path.read_bytes()
        elif path.suffix == ".jsonl":
            lines = [line for line in path.read_bytes().splitlines() if line.strip()]
            streams[path.name] = b"".join(
                b"event: " + orjson.loads(line)["type"].encode() + b"\ndata: " + line + b"\n\n"
                for line in lines
            )
        elif path.name.startswith("sdkpy-recording"):
            for i, exchange in enumerate(orjson.loads(path.read_bytes())):
                body = exchange["response"]["body"]
                if exchange["response"]["status_code"] == 200 and isinstance(body, str):
                    streams[f"{path.name}#{i}"] = body.encode()
    return streams


ANTHROPIC_STREAMS = _anthropic_streams()


def end_state(transducer: Any) -> tuple[Any, ...]:
    """What a transducer says of its stream once fed: the twins agree on every field."""
    t = transducer
    return (
        t.finished,
        t.complete,
        t.error,
        t.has_content,
        t.stop_reason,
        t.usage,
        t.reasoning_tokens,
    )


def random_cuts(data: bytes, seed: int) -> list[int]:
    """Up to 40 offsets to split `data` at, drawn from `seed`."""
    rng = random.Random(seed)
    return rng.sample(range(1, len(data)), k=min(len(data) - 1, rng.randint(1, 40)))


def feed_all(transducer: Any, data: bytes, cuts: list[int] | None = None) -> bytes:
    """Feed `data` split at the given offsets (each chunk in order), then finish()."""
    out = []
    start = 0
    for cut in sorted(cuts or []):
        out.append(transducer.feed(data[start:cut]))
        start = cut
    out.append(transducer.feed(data[start:]))
    out.append(transducer.finish())
    return b"".join(out)
