"""Reasoning of any upstream carried through Gemini clients in a part's ``thoughtSignature``.

A Gemini client (Gemini CLI, the google-genai SDKs) keeps the ``thoughtSignature`` of each
part it received and sends it back on the same part of its next request; it reads nothing
in it. So the thinking an upstream needs back (Claude's signed and redacted thinking,
proxy-signed DeepSeek reasoning, a Responses ``encrypted_content``, a Gemini upstream's
own signature: whatever canonical thinking blocks the stream held) travels there::

    thoughtSignature = base64(utf8(<responses.reasoning carrier of the blocks>))

the same versioned, MAC-checked carrier a Responses client gets in ``encrypted_content``
(``hydra-reasoning:v1:`` + the thinking texts + the continuation suffix), in standard
base64 with padding, as Gemini's own signatures are (the SDKs may give it back URL-safe:
either alphabet is read). `restored_blocks` returns the blocks only when the whole value
is one carrier that verifies with the key: never forged, never turned into text.
"""

from __future__ import annotations

import base64
from typing import Any

from .. import continuation
from ..responses.reasoning import decode_carrier, encode_carrier
from .thought_signature import signature_bytes

__all__ = ["restored_blocks", "thought_signature"]

Block = dict[str, Any]


def thought_signature(blocks: list[continuation.Block], key: bytes) -> str:
    """The ``thoughtSignature`` carrying these blocks (twin of rust/src/gemini/encoder.rs)."""
    canonical: list[Block] = [
        {"type": "thinking", "thinking": b.text, "signature": b.signature}
        if isinstance(b, continuation.Thinking)
        else {"type": "redacted_thinking", "data": b.data}
        for b in blocks
    ]
    carrier = encode_carrier(canonical, key)
    return base64.b64encode(carrier.encode("utf-8", "surrogatepass")).decode("ascii")


def restored_blocks(value: object, key: bytes | None) -> list[Block] | None:
    """The thinking blocks a replayed ``thoughtSignature`` carries; None when it is not this
    proxy's carrier or does not verify with `key`."""
    if not key or not isinstance(value, str) or not value:
        return None
    try:
        text = signature_bytes(value).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    return decode_carrier(text, key)
