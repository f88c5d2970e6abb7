"""A strict checker of Gemini ``streamGenerateContent?alt=sse`` output (what the google-genai
SDKs and Gemini CLI read).

Independent of the code under test: it parses the bytes as SSE ``data:`` events and checks
each is a GenerateContentResponse of one candidate whose parts are each one text (a
thought when marked) or one whole ``functionCall`` (an object of arguments), with the same
``responseId`` and ``modelVersion`` throughout; a ``finishReason`` only on the last chunk,
which carries the usage; or an error chunk ``{"error": {code, message, status}}``, which
ends the output. Returns what it rebuilt: the text, the thoughts, the calls, the finish
reason and the error.
"""

from __future__ import annotations

from typing import Any

import orjson

_PART_KEYS = {"text", "thought", "functionCall", "thoughtSignature"}
_USAGE_KEYS = {
    "promptTokenCount",
    "candidatesTokenCount",
    "totalTokenCount",
    "thoughtsTokenCount",
    "cachedContentTokenCount",
}


def sse_data(data: bytes) -> list[dict[str, Any]]:
    """The JSON objects of well-formed output (events end in CRLF pairs, as Google's own
    streams do); SSE comments (keepalives) are skipped."""
    assert data.endswith(b"\r\n\r\n") or not data, "output must end at an event boundary"
    events = []
    for block in data.split(b"\r\n\r\n")[:-1]:
        if block.startswith(b":"):
            continue
        assert block.startswith(b"data: ") and b"\n" not in block and b"\r" not in block, (
            f"one data line: {block!r}"
        )
        payload = orjson.loads(block[6:])
        assert isinstance(payload, dict), block
        events.append(payload)
    return events


def _part(part: Any, out: dict[str, Any], tool_json: bool) -> None:
    assert isinstance(part, dict) and part, part
    assert set(part) <= _PART_KEYS, f"unknown part members: {part}"
    if "thoughtSignature" in part:
        assert isinstance(part["thoughtSignature"], str) and part["thoughtSignature"], part
    if "functionCall" in part:
        assert "text" not in part and "thought" not in part, part
        call = part["functionCall"]
        assert isinstance(call, dict) and isinstance(call.get("name"), str), part
        assert isinstance(call.get("id"), str) and call["id"], "every call has an id"
        if tool_json:
            assert isinstance(call.get("args"), dict), "args are a JSON object"
        out["calls"].append(call)
        return
    assert isinstance(part.get("text"), str), f"a part is a text or a call: {part}"
    if part.get("thought") is True:
        out["thoughts"] += part["text"]
    else:
        assert "thought" not in part, part
        out["text"] += part["text"]


def check(data: bytes, *, tool_json: bool = True) -> dict[str, Any]:
    """The rebuilt response: ``text``, ``thoughts``, ``calls``, ``finish`` (the reason, or
    None), ``usage`` and ``error`` (``{code, message, status}`` or None)."""
    out: dict[str, Any] = {
        "text": "",
        "thoughts": "",
        "calls": [],
        "finish": None,
        "usage": None,
        "error": None,
    }
    ids: set[tuple[Any, Any]] = set()
    for chunk in sse_data(data):
        assert out["finish"] is None and out["error"] is None, "nothing after the end"
        if "error" in chunk:
            assert set(chunk) == {"error"}, chunk
            error = chunk["error"]
            assert isinstance(error.get("code"), int) and 400 <= error["code"] < 600, chunk
            assert isinstance(error.get("message"), str) and error["message"], chunk
            assert isinstance(error.get("status"), str) and error["status"].isupper(), chunk
            out["error"] = error
            continue
        ids.add((chunk.get("responseId"), chunk.get("modelVersion")))
        assert len(ids) == 1, "responseId and modelVersion are the same in every chunk"
        candidates = chunk.get("candidates")
        assert isinstance(candidates, list) and len(candidates) == 1, chunk
        candidate = candidates[0]
        assert candidate.get("index") == 0, chunk
        content = candidate.get("content")
        assert isinstance(content, dict) and content.get("role") == "model", chunk
        parts = content.get("parts")
        assert isinstance(parts, list) and parts, "every chunk has a part"
        for part in parts:
            _part(part, out, tool_json)
        if "finishReason" in candidate:
            reason = candidate["finishReason"]
            assert isinstance(reason, str) and reason.isupper(), chunk
            usage = chunk.get("usageMetadata")
            assert isinstance(usage, dict) and set(usage) <= _USAGE_KEYS, chunk
            assert all(isinstance(v, int) and v >= 0 for v in usage.values()), usage
            out["finish"], out["usage"] = reason, usage
        else:
            assert "usageMetadata" not in chunk, "usage comes with the finish reason"
    return out
