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

Anthropic caches only what a request asks it to (`AnthropicCache`): a prefix is written at
each breakpoint (a block's ``cache_control``; a top-level ``cache_control`` marks the last
block, Anthropic's automatic caching), and a request reads the longest prefix written
before that ends at one of its own breakpoints or at one of the `LOOKBACK_BLOCKS` block
boundaries before one. Blocks are rendered without their ``cache_control`` (moving a
breakpoint changes no cached byte; a string content is the one text block it stands for):
each tool, each system block, each message block with its role; Claude Code's per-request ``x-anthropic-billing-header`` system block is billing
metadata, not prompt, and is left out. A request without a breakpoint reads and writes
nothing.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any

import orjson

from ..canonical.content import BILLING_HEADER_PREFIX

__all__ = [
    "BYTES_PER_TOKEN",
    "LOOKBACK_BLOCKS",
    "PROMPT_FIELDS",
    "AnthropicCache",
    "PrefixCache",
    "prompt_bytes",
    "shared_prefix",
]

# The request fields that make the prompt, in the order a provider renders them, by wire.
PROMPT_FIELDS: dict[str, tuple[str, ...]] = {
    "chat": ("tools", "messages"),
    "anthropic": ("tools", "system", "messages"),
    "responses": ("tools", "instructions", "input"),
    "gemini": ("tools", "systemInstruction", "contents"),
}

BYTES_PER_TOKEN = 4
LOOKBACK_BLOCKS = 20  # Anthropic looks for a written prefix this many blocks back
MAX_ENTRIES = 4096  # cached prefixes the Anthropic cache keeps (the least recently used go)
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
        self.anthropic = AnthropicCache()

    def clear(self) -> None:
        self._last.clear()
        self.anthropic.clear()

    def usage(self, wire: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, int]:
        """(prompt tokens, cached tokens) of this request; it becomes its key's last."""
        if wire == "anthropic":
            return self.anthropic.usage(body)
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


def _unmarked(block: Any) -> Any:
    if isinstance(block, dict) and "cache_control" in block:
        return {k: v for k, v in block.items() if k != "cache_control"}
    return block


def anthropic_blocks(body: dict[str, Any]) -> list[tuple[bytes, bool]]:
    """The prompt of a Messages request as rendered blocks, each with whether it is a
    breakpoint (the top-level ``cache_control`` marks the last block)."""
    blocks: list[tuple[bytes, bool]] = []

    def add(item: Any, prefix: bytes = b"") -> None:
        marked = isinstance(item, dict) and isinstance(item.get("cache_control"), dict)
        blocks.append((prefix + orjson.dumps(_unmarked(item)), marked))

    for tool in body.get("tools") or ():
        add(tool, b"tool:")
    system = body.get("system")
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    for block in system if isinstance(system, list) else ():
        text = block.get("text") if isinstance(block, dict) else None
        if isinstance(text, str) and text.startswith(BILLING_HEADER_PREFIX):
            continue
        add(block, b"system:")
    for message in body.get("messages") or ():
        if not isinstance(message, dict):
            continue
        role = str(message.get("role")).encode()
        content = message.get("content")
        if isinstance(content, str):  # the same prompt as one text block
            content = [{"type": "text", "text": content}]
        for block in content if isinstance(content, list) else ():
            add(block, role + b":")
    if isinstance(body.get("cache_control"), dict) and blocks:
        blocks[-1] = (blocks[-1][0], True)
    return blocks


class AnthropicCache:
    """Prefixes written at breakpoints, read back at or shortly before a later one's."""

    def __init__(self) -> None:
        self._written: OrderedDict[bytes, None] = OrderedDict()

    def clear(self) -> None:
        self._written.clear()

    def usage(self, body: dict[str, Any]) -> tuple[int, int]:
        """(prompt tokens, cached tokens) of this request; its breakpoints are written."""
        blocks = anthropic_blocks(body)
        running = hashlib.sha256()
        ends: list[tuple[bytes, int]] = []  # (digest of the prefix, its length), per block
        length = 0
        for rendered, _ in blocks:
            running.update(rendered)
            length += len(rendered)
            ends.append((running.copy().digest(), length))
        marks = [i for i, (_, marked) in enumerate(blocks) if marked]
        cached = 0
        for i in marks:
            for j in range(i, max(-1, i - LOOKBACK_BLOCKS - 1), -1):
                digest, end = ends[j]
                if digest in self._written:
                    self._written.move_to_end(digest)
                    cached = max(cached, end)
                    break
        for i in marks:
            self._written[ends[i][0]] = None
        while len(self._written) > MAX_ENTRIES:
            self._written.popitem(last=False)
        return -(-length // BYTES_PER_TOKEN), cached // BYTES_PER_TOKEN
