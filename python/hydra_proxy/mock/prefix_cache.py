"""A prompt cache by prefix, as providers keep one: a request's cached input is the byte
prefix it shares with the last request of the same cache key.

The cache key is the body's ``prompt_cache_key`` (OpenAI's), else the ``x-mock-cache-key``
header, else one shared key (OpenAI and DeepSeek cache without one too). Token counts are
bytes / `BYTES_PER_TOKEN` of the raw request body: the prompt is the whole body, the
cached part its prefix shared with the previous body of the key. Bounded: at most
`MAX_KEYS` keys (the least recently used go), each body kept to `MAX_BODY` bytes.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

__all__ = ["BYTES_PER_TOKEN", "PrefixCache", "shared_prefix"]

BYTES_PER_TOKEN = 4
MAX_KEYS = 256
MAX_BODY = 4 * 1024 * 1024
_MAX_KEY = 256


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

    def usage(self, body: dict[str, Any], headers: dict[str, str], raw: bytes) -> tuple[int, int]:
        """(prompt tokens, cached tokens) of this request; it becomes its key's last."""
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
