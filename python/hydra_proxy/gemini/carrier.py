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
from ..responses.reasoning import CARRIER_PREFIX, decode_carrier, encode_carrier
from .thought_signature import SKIP_VALIDATOR, signature_bytes

__all__ = ["is_carrier_signature", "restored_blocks", "thought_signature", "without_carriers"]

Block = dict[str, Any]


def thought_signature(blocks: list[continuation.Block], key: bytes) -> str:
    """The ``thoughtSignature`` carrying these blocks (twin of rust/src/gemini/encoder.rs)."""
    canonical: list[Block] = [
        {"type": "thinking", "thinking": b.text, "signature": b.signature}
        if isinstance(b, continuation.ThinkingBlock)
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


_PREFIX_BYTES = CARRIER_PREFIX.encode()


def is_carrier_signature(value: object) -> bool:
    """Whether a ``thoughtSignature`` is this proxy's carrier (verified or not)."""
    if not isinstance(value, str):
        return False
    try:
        return signature_bytes(value[:40]).startswith(_PREFIX_BYTES)  # 40 digits: 30 bytes
    except ValueError:
        return False


def without_carriers(contents: list[Any]) -> list[Any]:
    """`contents` with the proxy's carriers taken out (for a Gemini upstream): a function
    call's becomes Google's documented ``skip_thought_signature_validator`` (Gemini 3 wants
    a signature there), any other part's is dropped. Unchanged objects are shared."""
    out: list[Any] = []
    for content in contents:
        parts = content.get("parts") if isinstance(content, dict) else None
        if not isinstance(parts, list) or not any(
            isinstance(p, dict) and is_carrier_signature(p.get("thoughtSignature")) for p in parts
        ):
            out.append(content)
            continue
        cleaned = []
        for part in parts:
            if isinstance(part, dict) and is_carrier_signature(part.get("thoughtSignature")):
                part = {k: v for k, v in part.items() if k != "thoughtSignature"}
                if "functionCall" in part:
                    part["thoughtSignature"] = SKIP_VALIDATOR
            cleaned.append(part)
        out.append({**content, "parts": cleaned})
    return out
