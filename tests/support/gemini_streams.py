"""Gemini ``streamGenerateContent?alt=sse`` bodies: the recordings as SSE bytes, and a
hypothesis strategy for generated streams (text, thought parts, thought signatures, whole and
streamed function calls, finish reasons, usage, errors, blocked prompts)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

GEMINI = Path(__file__).parents[1] / "fixtures" / "gemini"

GEMINI_STREAMS = sorted(p.name for p in GEMINI.iterdir() if p.suffix in (".sse", ".jsonl"))


def gemini_stream(name: str) -> bytes:
    """A recorded Gemini stream as SSE bytes. `.sse` files are byte-exact bodies (CRLF
    framed); `.jsonl` files (vercel/ai) lost their framing, one payload a line, and are
    re-framed as Gemini frames them: ``data: <line>\\r\\n\\r\\n``."""
    data = (GEMINI / name).read_bytes()
    if name.endswith(".jsonl"):
        data = b"".join(b"data: " + line + b"\r\n\r\n" for line in data.splitlines() if line)
    return data


def frame(*chunks: object, crlf: bool = True) -> bytes:
    """SSE ``data:`` events for chunk objects (bytes are taken as the payload text)."""
    end = b"\r\n\r\n" if crlf else b"\n\n"
    out = []
    for chunk in chunks:
        data = chunk if isinstance(chunk, bytes) else json.dumps(chunk).encode()
        out.append(b"data: " + data + end)
    return b"".join(out)


def chunk(
    *parts: dict[str, Any], finish: str | None = None, usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}}
    if finish is not None:
        candidate["finishReason"] = finish
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-test"}
    if usage is not None:
        out["usageMetadata"] = usage
    return out


# -- hypothesis strategy -------------------------------------------------------------------

_texts = st.text(min_size=0, max_size=12)
_signatures = st.one_of(
    st.binary(min_size=1, max_size=24).map(lambda b: base64.b64encode(b).decode()),
    st.binary(min_size=1, max_size=24).map(lambda b: base64.urlsafe_b64encode(b).decode()),
    st.sampled_from(["not base64!", "AAA", "A"]),
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    _texts,
)
_args = st.dictionaries(
    st.text(min_size=1, max_size=5), st.one_of(_scalars, st.lists(_scalars, max_size=3)), max_size=3
)
_paths = st.sampled_from(["$.a", "$.b[0]", "$.b[1]", "$.c.d", "$['e f']", "$.g[0].h", "$[0]", "$."])


@st.composite
def _partial_arg(draw: st.DrawFn) -> dict[str, Any]:
    arg: dict[str, Any] = {"jsonPath": draw(_paths)}
    kind = draw(st.sampled_from(["stringValue", "numberValue", "boolValue", "nullValue"]))
    if kind == "stringValue":
        arg[kind] = draw(_texts)
        if draw(st.booleans()):
            arg["willContinue"] = True
    elif kind == "numberValue":
        arg[kind] = draw(st.one_of(st.integers(-1000, 10**20), st.floats(-1e30, 1e30)))
    elif kind == "boolValue":
        arg[kind] = draw(st.booleans())
    else:
        arg[kind] = "NULL_VALUE"
    return arg


@st.composite
def _parts(draw: st.DrawFn) -> list[dict[str, Any]]:
    """One logical piece of a reply: a part, or the parts of one streamed call."""
    kind = draw(st.sampled_from(["thought", "text", "call", "streamed", "empty", "code"]))
    part: dict[str, Any]
    if kind == "streamed":
        start: dict[str, Any] = {"functionCall": {"name": draw(_texts), "willContinue": True}}
        if draw(st.booleans()):
            start["thoughtSignature"] = draw(_signatures)
        pieces = [
            {
                "functionCall": {
                    "partialArgs": draw(st.lists(_partial_arg(), max_size=2)),
                    "willContinue": True,
                }
            }
            for _ in range(draw(st.integers(0, 3)))
        ]
        end = draw(st.sampled_from([[{"functionCall": {}}], []]))
        return [start, *pieces, *end]
    if kind == "thought":
        part = {"text": draw(_texts), "thought": True}
    elif kind == "text":
        part = {"text": draw(st.one_of(_texts, st.sampled_from(["  ", "\n"])))}
    elif kind == "empty":
        part = {"text": ""}
    elif kind == "code":
        part = {"executableCode": {"language": "PYTHON", "code": draw(_texts)}}
    else:
        call: dict[str, Any] = {"name": draw(_texts)}
        if draw(st.booleans()):
            call["args"] = draw(st.one_of(_args, _scalars))
        if draw(st.booleans()):
            call["id"] = draw(st.sampled_from(["call_1", "bad id!", ""]))
        part = {"functionCall": call}
    if draw(st.integers(0, 3)) == 0:
        part["thoughtSignature"] = draw(_signatures)
    return [part]


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    """A Gemini stream body: parts spread over chunks, an ending, CRLF or LF framing."""
    parts = [p for group in draw(st.lists(_parts(), max_size=6)) for p in group]
    chunks: list[object] = []
    while parts:
        size = draw(st.integers(1, 3))
        chunks.append(chunk(*parts[:size], usage={"trafficType": "ON_DEMAND"}))
        parts = parts[size:]
    ending = draw(
        st.sampled_from(
            [
                "STOP",
                "MAX_TOKENS",
                "SAFETY",
                "MALFORMED_FUNCTION_CALL",
                "cut",
                "error",
                "blocked",
                "late-usage",
            ]
        )
    )
    usage = {
        "promptTokenCount": draw(st.integers(0, 5000)),
        "cachedContentTokenCount": draw(st.integers(0, 6000)),
        "candidatesTokenCount": draw(st.integers(0, 900)),
        "thoughtsTokenCount": draw(st.integers(0, 900)),
    }
    if ending == "error":
        chunks.append(
            {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
        )
    elif ending == "blocked":
        chunks.append({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": usage})
    elif ending == "late-usage":
        chunks.append(chunk(finish="STOP"))
        chunks.append({"usageMetadata": usage})
    elif ending != "cut":
        chunks.append(chunk({"text": ""}, finish=ending, usage=usage))
    return frame(*chunks, crlf=draw(st.booleans()))
