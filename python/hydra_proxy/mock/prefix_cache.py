"""A prompt cache by prefix, as providers keep one: a request's cached input is the byte
prefix it shares with the last request of the same cache key.

The cache key is the body's ``prompt_cache_key`` (OpenAI's), else the ``x-mock-cache-key``
header, else one shared key (OpenAI and DeepSeek cache without one too). The prompt is
rendered as providers render it, whatever the order of the JSON keys: the tools, the
system text, then the conversation (`PROMPT_FIELDS`, each field's JSON as sent; settings
such as ``max_tokens`` or ``stream`` are no part of it). Token counts are bytes /
`BYTES_PER_TOKEN` of that rendering: the prompt is all of it, the cached part its prefix
shared with the previous prompt of the key. Bounded: at most
`MAX_KEYS` keys (the least recently used go), each body kept to `MAX_BODY` bytes.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import orjson

__all__ = ["BYTES_PER_TOKEN", "PROMPT_FIELDS", "PrefixCache", "prompt_bytes", "shared_prefix"]

# The request fields that make the prompt, in the order a provider renders them, by wire.
PROMPT_FIELDS: dict[str, tuple[str, ...]] = {
    "openai": ("tools", "messages"),
    "anthropic": ("tools", "system", "messages"),
    "responses": ("tools", "instructions", "input"),
    "gemini": ("tools", "systemInstruction", "contents"),
}

BYTES_PER_TOKEN = 4
MAX_KEYS = 256
MAX_BODY = 4 * 1024 * 1024
_MAX_KEY = 256


def prompt_bytes(wire: str, body: dict[str, Any]) -> bytes:
    """The prompt of a request as the provider renders it (`PROMPT_FIELDS`)."""
    fields = PROMPT_FIELDS.get("gemini" if wire.startswith("gemini") else wire, ())
    return b"".join(orjson.dumps(body[name]) for name in fields if name in body)


def shared_prefix(a: bytes, b: bytes) -> int:
    """The length of the longest common prefix of `a` and `b`."""
    n = min(len(a), len(b))
    low, high = 0, n
    while low < high:  # the prefix of length `low` is shared; find the longest
        mid = (low + high + 1) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid - 1
    return low


class PrefixCache:
    def __init__(self) -> None:
        self._last: OrderedDict[str, bytes] = OrderedDict()

    def clear(self) -> None:
        self._last.clear()

    def usage(self, wire: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, int]:
        """(prompt tokens, cached tokens) of this request; it becomes its key's last."""
        raw = prompt_bytes(wire, body)
        key = body.get("prompt_cache_key")
        if not isinstance(key, str):
            key = headers.get("x-mock-cache-key", "")
        key = key[:_MAX_KEY]
        previous = self._last.pop(key, b"")
        self._last[key] = raw[:MAX_BODY]
        while len(self._last) > MAX_KEYS:
            self._last.popitem(last=False)
        cached = shared_prefix(previous, raw)
        return -(-len(raw) // BYTES_PER_TOKEN), cached // BYTES_PER_TOKEN
