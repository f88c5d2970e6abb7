"""The continuation suffix: Claude's signed and redacted thinking, carried through Chat clients.

Chat Completions has no field for Anthropic's thinking signatures or redacted thinking. For
clients that replay reasoning (Zed), the proxy appends this suffix to the end of an
assistant turn's `reasoning_content`; on the next request it finds it again, verifies it,
and restores the original `thinking` / `redacted_thinking` blocks, in order.

Wire form (ASCII, one line)::

    \\n\\n[[hydra-continuation:v1:<base64url(BLOCKS)>.<base64url(MAC)>]]

BLOCKS is compact JSON, a list in block order, each item either
``{"thinking":<characters>,"signature":"<signature>"}`` (the block's text length in Unicode
code points; the texts themselves are the reasoning that precedes the suffix, concatenated
in order) or ``{"redacted":"<data>"}``. MAC is the first 18 bytes of
HMAC-SHA256(key, b"hydra-continuation:v1\\0" + BLOCKS + b"\\0" + utf8(reasoning text)), so a
suffix is trusted only with exactly the reasoning it was made for. The native transducer
(rust/src/chat/encoder.rs) writes the same bytes.

On replay the suffix is looked for at the end of `reasoning_content` (Zed with
`interleaved_reasoning`) or inside `content` (Zed's default replays reasoning as plain
text at the start of the message); either way the reasoning text and the suffix are
removed before anything is forwarded.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

import orjson

PREFIX = "\n\n[[hydra-continuation:v1:"
SUFFIX_END = "]]"
_DOMAIN = b"hydra-continuation:v1\x00"
_MAC_BYTES = 18


@dataclass(frozen=True)
class Thinking:
    text: str
    signature: str


@dataclass(frozen=True)
class Redacted:
    data: str


Block = Thinking | Redacted


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def blocks_json(blocks: list[Block]) -> bytes:
    parts = []
    for block in blocks:
        if isinstance(block, Thinking):
            parts.append(
                b'{"thinking":%d,"signature":%s}' % (len(block.text), orjson.dumps(block.signature))
            )
        else:
            parts.append(b'{"redacted":%s}' % orjson.dumps(block.data))
    return b"[" + b",".join(parts) + b"]"


def _mac(key: bytes, encoded_blocks: bytes, reasoning: str) -> bytes:
    message = _DOMAIN + encoded_blocks + b"\x00" + reasoning.encode("utf-8", "surrogatepass")
    return hmac.new(key, message, hashlib.sha256).digest()[:_MAC_BYTES]


def encode(blocks: list[Block], key: bytes) -> str:
    """The suffix for these blocks; the reasoning text itself goes before it, unchanged."""
    encoded = blocks_json(blocks)
    reasoning = "".join(b.text for b in blocks if isinstance(b, Thinking))
    return PREFIX + _b64(encoded) + "." + _b64(_mac(key, encoded, reasoning)) + SUFFIX_END


@dataclass(frozen=True)
class Found:
    """A verified suffix inside `text`: the blocks, and the span [start, end) that holds the
    reasoning text and the suffix (to be removed before forwarding)."""

    blocks: list[Block]
    start: int
    end: int


def find(text: str, key: bytes, start: int = 0) -> Found | bool | None:
    """Look for a suffix in `text[start:]`.

    Returns Found for the first suffix that verifies, False when one is present but none
    verifies (tampered, another key, reasoning edited), None when there is none. Every
    occurrence of the opening marker is tried: the reasoning before a real suffix may itself
    contain the marker's text (say, a conversation about this proxy).
    """
    at = text.find(PREFIX, start)
    if at < 0:
        return None
    while at >= 0:
        found = _verify_at(text, at, key)
        if found is not None:
            return found
        at = text.find(PREFIX, at + 1)
    return False


def _verify_at(text: str, at: int, key: bytes) -> Found | None:
    close = text.find(SUFFIX_END, at + len(PREFIX))
    if close < 0:
        return None
    body = text[at + len(PREFIX) : close]
    encoded_b64, dot, mac_b64 = body.partition(".")
    try:
        encoded = _unb64(encoded_b64)
        mac = _unb64(mac_b64)
        raw = orjson.loads(encoded)
    except (ValueError, orjson.JSONDecodeError):
        return None
    if not dot or not isinstance(raw, list):
        return None
    lengths: list[int] = []
    shapes: list[tuple[str, str]] = []
    for item in raw:
        if not isinstance(item, dict):
            return None
        if isinstance(item.get("thinking"), int) and isinstance(item.get("signature"), str):
            lengths.append(item["thinking"])
            shapes.append(("thinking", item["signature"]))
        elif isinstance(item.get("redacted"), str):
            shapes.append(("redacted", item["redacted"]))
        else:
            return None
    begin = at - sum(lengths)
    if begin < 0 or any(n < 0 for n in lengths):
        return None
    reasoning = text[begin:at]
    if not hmac.compare_digest(_mac(key, encoded, reasoning), mac):
        return None
    blocks: list[Block] = []
    offset = 0
    lengths_iter = iter(lengths)
    for kind, value in shapes:
        if kind == "thinking":
            n = next(lengths_iter)
            blocks.append(Thinking(reasoning[offset : offset + n], value))
            offset += n
        else:
            blocks.append(Redacted(value))
    return Found(blocks, begin, close + len(SUFFIX_END))
