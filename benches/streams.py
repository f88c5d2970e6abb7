"""Benchmark inputs: the recorded streams and long synthetic ones, in three chunkings."""

from __future__ import annotations

import random
from pathlib import Path

import orjson

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "chat"


def recorded(name: str) -> bytes:
    path = FIXTURES / name
    data = path.read_bytes()
    if path.suffix == ".jsonl":
        lines = [line for line in data.splitlines() if line.strip()]
        data = b"".join(b"data: " + line + b"\n\n" for line in lines) + b"data: [DONE]\n\n"
    return data


def corpus() -> bytes:
    """Every recorded stream that ends cleanly, as one body per stream, concatenated."""
    names = sorted(p.name for p in FIXTURES.iterdir() if p.suffix in (".sse", ".jsonl"))
    return b"\x00".join(recorded(n) for n in names if "error" not in n)


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1764664568,
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_5050236cbd",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    return b"data: " + orjson.dumps(body) + b"\n\n"


def _usage() -> bytes:
    usage = {"prompt_tokens": 5000, "completion_tokens": 2000, "total_tokens": 7000}
    return (
        b"data: " + orjson.dumps({"id": "chatcmpl-bench", "choices": [], "usage": usage}) + b"\n\n"
    )


def text_deltas(n: int = 2000) -> bytes:
    words = [
        "The",
        " quick",
        " brown",
        " fox",
        " jumps",
        " over",
        " the",
        " lazy",
        " dog.\n",
        ' "quoted"',
    ]
    body = [_chunk({"role": "assistant", "content": ""})]
    body += [_chunk({"content": words[i % len(words)]}) for i in range(n)]
    return b"".join([*body, _chunk({}, "stop"), _usage(), b"data: [DONE]\n\n"])


def tool_fragments(n: int = 500) -> bytes:
    body = [_chunk({"role": "assistant", "content": None})]
    body.append(
        _chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_bench",
                        "type": "function",
                        "function": {"name": "Write", "arguments": ""},
                    }
                ]
            }
        )
    )
    body.append(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"content": "'}}]}))
    body += [
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "line\\n"}}]})
        for _ in range(n)
    ]
    body.append(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"}'}}]}))
    return b"".join([*body, _chunk({}, "tool_calls"), _usage(), b"data: [DONE]\n\n"])


def reasoning_then_tools(n: int = 1000) -> bytes:
    body = [_chunk({"role": "assistant", "content": None, "reasoning_content": ""})]
    body += [_chunk({"content": None, "reasoning_content": " step"}) for _ in range(n)]
    for i in range(3):
        call = {
            "index": i,
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "Read", "arguments": ""},
        }
        body.append(_chunk({"tool_calls": [call]}))
        body += [
            _chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
            for p in ('{"path"', ': "/tmp/', f'{i}.txt"}}')
        ]
    return b"".join([*body, _chunk({}, "tool_calls"), _usage(), b"data: [DONE]\n\n"])


def event_aligned(data: bytes) -> list[bytes]:
    return [part + b"\n\n" for part in data.split(b"\n\n") if part]


def random_splits(data: bytes, seed: int = 7) -> list[bytes]:
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(data):
        step = rng.randint(1, 64)
        out.append(data[i : i + step])
        i += step
    return out


def coalesced(data: bytes, size: int = 64 * 1024) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


STREAMS = {
    "corpus": corpus,
    "text-2000": text_deltas,
    "tool-500-fragments": tool_fragments,
    "reasoning-then-tools": reasoning_then_tools,
}
CHUNKINGS = {
    "event-aligned": event_aligned,
    "random-1-64": random_splits,
    "coalesced-64k": coalesced,
}


# -- Gemini upstream (streamGenerateContent?alt=sse, CRLF framed) -------------------------

GEMINI_FIXTURES = FIXTURES.parent / "gemini"


def gemini_recorded(name: str) -> bytes:
    data = (GEMINI_FIXTURES / name).read_bytes()
    if name.endswith(".jsonl"):
        data = b"".join(b"data: " + line + b"\r\n\r\n" for line in data.splitlines() if line)
    return data


def gemini_corpus() -> bytes:
    """Every recorded Gemini stream, one body per stream, joined by NUL."""
    names = sorted(p.name for p in GEMINI_FIXTURES.iterdir() if p.suffix in (".sse", ".jsonl"))
    return b"\x00".join(gemini_recorded(n) for n in names)


def _gemini_chunk(*parts: dict[str, object], finish: str | None = None) -> bytes:
    candidate: dict[str, object] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    usage = {"promptTokenCount": 5000, "candidatesTokenCount": 2000, "totalTokenCount": 7000}
    body = {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": "gemini-2.5-flash",
        "responseId": "bench",
    }
    return b"data: " + orjson.dumps(body) + b"\r\n\r\n"


def gemini_text(n: int = 2000) -> bytes:
    words = [" The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog.\n"]
    body = [_gemini_chunk({"text": words[i % len(words)]}) for i in range(n)]
    return b"".join([*body, _gemini_chunk({"text": ""}, finish="STOP")])


def gemini_thoughts_then_streamed_call(n: int = 1000) -> bytes:
    body = [_gemini_chunk({"text": " step", "thought": True}) for _ in range(n)]
    body.append(
        _gemini_chunk(
            {"functionCall": {"name": "Write", "willContinue": True}, "thoughtSignature": "QUJD"}
        )
    )
    piece = {"jsonPath": "$.content", "stringValue": "line\n", "willContinue": True}
    call = {"partialArgs": [piece], "willContinue": True}
    body += [_gemini_chunk({"functionCall": call}) for _ in range(n // 2)]
    body.append(_gemini_chunk({"functionCall": {}}))
    return b"".join([*body, _gemini_chunk({"text": ""}, finish="STOP")])


def event_aligned_crlf(data: bytes) -> list[bytes]:
    return [part + b"\r\n\r\n" for part in data.split(b"\r\n\r\n") if part]


GEMINI_STREAMS = {
    "gemini-corpus": gemini_corpus,
    "gemini-text-2000": gemini_text,
    "gemini-thoughts-streamed-call": gemini_thoughts_then_streamed_call,
}
GEMINI_CHUNKINGS = {
    "event-aligned": event_aligned_crlf,
    "random-1-64": random_splits,
    "coalesced-64k": coalesced,
}
