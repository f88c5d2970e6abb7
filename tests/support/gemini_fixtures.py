"""Helpers for the Gemini recordings in tests/fixtures/gemini/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

GEMINI = Path(__file__).parents[1] / "fixtures" / "gemini"


def load_json(name: str) -> Any:
    return orjson.loads((GEMINI / name).read_bytes())


def stream_chunks(name: str) -> list[dict[str, Any]]:
    """The JSON payloads of a recorded stream (`.sse`: data lines; `.jsonl`: one a line)."""
    raw = (GEMINI / name).read_text(encoding="utf-8")
    if name.endswith(".sse"):
        return [orjson.loads(line[5:]) for line in raw.splitlines() if line.startswith("data:")]
    return [orjson.loads(line) for line in raw.splitlines() if line.strip()]


def collapsed_response(name: str) -> dict[str, Any]:
    """A recorded stream as the one GenerateContentResponse it adds up to: candidate 0's
    parts concatenated in order, finishReason and usageMetadata from the last chunk (what
    generateContent returns for the same reply; recordings of whole-part streams only)."""
    chunks = stream_chunks(name)
    parts: list[Any] = []
    for chunk in chunks:
        parts.extend(chunk["candidates"][0]["content"]["parts"])
    last = chunks[-1]
    candidate = dict(last["candidates"][0])
    candidate["content"] = {"role": "model", "parts": parts}
    return {**last, "candidates": [candidate]}
