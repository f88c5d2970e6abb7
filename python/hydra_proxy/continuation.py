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
import binascii
import hashlib
import hmac
import re
from dataclasses import dataclass
from typing import NamedTuple

import orjson

from .errors import invalid_request
from .signing_key import verifying_keys

PREFIX = "\n\n[[hydra-continuation:v1:"
SUFFIX_END = "]]"
_DOMAIN = b"hydra-continuation:v1\x00"
_MAC_BYTES = 18


class ThinkingBlock(NamedTuple):
    text: str
    signature: str


class RedactedBlock(NamedTuple):
    data: str


Block = ThinkingBlock | RedactedBlock


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")


def _unb64(text: str) -> bytes:
    # binascii directly: a reply may replay thousands of suffixes (base64 module: 4x slower).
    data = text.encode("ascii").translate(_FROM_URLSAFE)
    return binascii.a2b_base64(data + b"=" * (-len(data) % 4))


def blocks_json(blocks: list[Block]) -> bytes:
    parts = []
    for block in blocks:
        if isinstance(block, ThinkingBlock):
            parts.append(
                b'{"thinking":%d,"signature":%s}' % (len(block.text), orjson.dumps(block.signature))
            )
        else:
            parts.append(b'{"redacted":%s}' % orjson.dumps(block.data))
    return b"[" + b",".join(parts) + b"]"


def _mac(key: bytes, encoded_blocks: bytes, reasoning: str) -> bytes:
    message = _DOMAIN + encoded_blocks + b"\x00" + reasoning.encode("utf-8", "surrogatepass")
    return hmac.digest(key, message, hashlib.sha256)[:_MAC_BYTES]


def encode(blocks: list[Block], key: bytes) -> str:
    """The suffix for these blocks; the reasoning text itself goes before it, unchanged."""
    encoded = blocks_json(blocks)
    reasoning = "".join(b.text for b in blocks if isinstance(b, ThinkingBlock))
    return PREFIX + _b64(encoded) + "." + _b64(_mac(key, encoded, reasoning)) + SUFFIX_END


@dataclass(frozen=True)
class VerifiedSuffix:
    """A verified suffix inside `text`: the blocks, and the span [start, end) that holds the
    reasoning text and the suffix (to be removed before forwarding)."""

    blocks: list[Block]
    start: int
    end: int


# A well-formed suffix: the marker, base64url blocks, ".", the 24 characters of the MAC,
# "]]". Neither alphabet holds a character of the marker, so the engine reads each run from
# one marker only: finding every suffix in a text is linear, and done in C.
_SUFFIX = re.compile(re.escape(PREFIX) + r"([A-Za-z0-9_-]*)\.([A-Za-z0-9_-]{24})\]\]")
# A marker and what looks like its body, cut out when it does not verify.
MARKER = re.compile(re.escape(PREFIX) + r"[A-Za-z0-9_.\-]*(?:\]\])?")
# Markers one text may hold: a replayed message carries one suffix, a conversation about
# this proxy a few more. Past this the request is refused (each costs a parse and a cut).
MAX_MARKERS = 64
# Well-formed suffixes whose MAC may fail in one text: each hashes up to the whole text
# before it, so forged ones would otherwise cost the text's length that many times.
MAX_FAILED_MACS = 2


class _Tries:
    """The MAC checks that may still fail in one text (shared by a whole scan)."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_FAILED_MACS


def _check_markers(text: str, start: int) -> bool:
    """Whether `text[start:]` holds a marker; a 400 past MAX_MARKERS of them."""
    count = text.count(PREFIX, start)
    if count > MAX_MARKERS:
        raise invalid_request(
            f"a message holds {count} continuation suffix markers; at most {MAX_MARKERS} "
            "are read (a replayed message carries one)"
        )
    return count > 0


def find(text: str, key: bytes, start: int = 0) -> VerifiedSuffix | bool | None:
    """Look for a suffix in `text[start:]` (its reasoning must begin at `start` or later).

    Returns VerifiedSuffix for the first suffix that verifies, False when one is present but none
    verifies (tampered, another key, reasoning edited), None when there is none. Every
    well-formed suffix is tried: the reasoning before a real suffix may itself contain the
    marker's text (say, a conversation about this proxy); after `MAX_FAILED_MACS` that do
    not verify, the rest count as not verifying. A 400 (ProxyError) for a text of more
    than `MAX_MARKERS` markers.
    """
    if not _check_markers(text, start):
        return None
    return _find(text, key, start, _Tries())


def _find(text: str, key: bytes, start: int, tries: _Tries) -> VerifiedSuffix | bool:
    for shape in _SUFFIX.finditer(text, start):
        if tries.left <= 0:
            break
        found = _verify(text, shape, key, start, tries)
        if found is not None:
            return found
    return False


def scan(text: str, key: bytes | None) -> list[VerifiedSuffix | tuple[int, int]]:
    """Every suffix in `text`, in order: a VerifiedSuffix for each that verifies (searching on after
    it), then, once the rest holds none that does, the span of each marker left (to cut).
    Linear in the length of `text`; a 400 (ProxyError) past `MAX_MARKERS` markers."""
    out: list[VerifiedSuffix | tuple[int, int]] = []
    if not _check_markers(text, 0):
        return out
    tries = _Tries()
    pos = 0
    while True:
        at = text.find(PREFIX, pos)
        if at < 0:
            return out
        found = _find(text, key, pos, tries) if key is not None else False
        if isinstance(found, VerifiedSuffix):
            out.append(found)
            pos = found.end
            continue
        out.extend(marker.span() for marker in MARKER.finditer(text, at))
        return out


def _verify(
    text: str, shape: re.Match[str], key: bytes, start: int, tries: _Tries
) -> VerifiedSuffix | None:
    encoded_b64, mac_b64 = shape.groups()
    try:
        encoded = _unb64(encoded_b64)
        mac = _unb64(mac_b64)
        raw = orjson.loads(encoded)
    except (ValueError, binascii.Error, orjson.JSONDecodeError):
        return None
    if not isinstance(raw, list):
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
    if any(n < 0 for n in lengths):
        return None
    at = shape.start()
    begin = at - sum(lengths)
    if begin < start:
        return None
    reasoning = text[begin:at]
    tries.left -= 1  # given back when it verifies
    if not any(hmac.compare_digest(_mac(k, encoded, reasoning), mac) for k in verifying_keys(key)):
        return None
    tries.left += 1
    blocks: list[Block] = []
    offset = 0
    lengths_iter = iter(lengths)
    for kind, value in shapes:
        if kind == "thinking":
            n = next(lengths_iter)
            blocks.append(ThinkingBlock(reasoning[offset : offset + n], value))
            offset += n
        else:
            blocks.append(RedactedBlock(value))
    return VerifiedSuffix(blocks, begin, shape.end())
