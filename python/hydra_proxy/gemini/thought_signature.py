"""Gemini ``thoughtSignature``s carried through clients, and restored on replay.

Gemini returns an opaque ``thoughtSignature`` (base64 bytes) on some response parts: on the
first ``functionCall`` part of each step, and sometimes on a text part or a trailing empty
text part. Gemini 3 rejects a request (400) whose current-turn function calls lack the
signature they came with; Gemini 2.5 accepts that but reasons worse. Anthropic ``tool_use``
has no field for it, so the proxy carries it in a thinking block of its own,
signed with the proxy's signature carrier (`hydra_proxy.signature`, kind ``gts``):

    {"type": "thinking", "thinking": <thought summary text, often "">,
     "signature": "hydra1.gts.<thoughtSignature as Gemini sent it>.<MAC>"}

Placement: the response reader / stream decoder emits the block immediately BEFORE the
content block made from the part that carried the signature (thought summaries that
preceded that part are the block's text). On replay the request writer gives the signature
back to the part made from the next text or tool_use block of the same assistant turn;
when no such block follows (the signature sat on an empty trailing text part) it becomes
an empty text part with the signature again, as Gemini sent it.

The MAC binds the carried signature, not the summary text: Gemini validates the signature
itself and never sees the summary again, and clients that rebuild reasoning text (Chat
clients) must not lose a signature Gemini 3 insists on. A block whose MAC does not verify
is never turned into a signature (nor into text).

Base64: Gemini sends standard base64 (``+``, ``/``, ``=``); clients built on the
google-genai SDK replay the same bytes URL-safe (``-``, ``_``), as the pydantic-ai
recordings show. The carrier keeps the exact text Gemini sent and gives it back unchanged;
`signature_bytes` / `same_signature` decode either alphabet for comparison.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from ..signature import KIND_GEMINI_THOUGHT_SIGNATURE, open_carried, sign_carried

__all__ = [
    "SKIP_VALIDATOR",
    "carried_thought_signature",
    "same_signature",
    "sign_thought_signature",
    "signature_bytes",
    "thought_signature_block",
]

# Documented sentinel (ai.google.dev/gemini-api/docs/thought-signatures) for function calls
# Gemini did not produce (another model's history, a block without a carrier).
SKIP_VALIDATOR = "skip_thought_signature_validator"


def signature_bytes(signature: str) -> bytes:
    """The bytes a thoughtSignature encodes, whichever base64 alphabet and padding it uses.

    Raises ValueError when it is not base64.
    """
    text = signature.replace("-", "+").replace("_", "/").rstrip("=")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except binascii.Error as exc:
        raise ValueError("thoughtSignature is not base64") from exc


def same_signature(a: str, b: str) -> bool:
    """True when two thoughtSignatures encode the same bytes (standard vs URL-safe base64)."""
    try:
        return signature_bytes(a) == signature_bytes(b)
    except ValueError:
        return False


def sign_thought_signature(thought_signature: str, key: bytes) -> str | None:
    """The proxy signature carrying `thought_signature`; None when it is not base64 text."""
    try:
        signature_bytes(thought_signature)
        return sign_carried(KIND_GEMINI_THOUGHT_SIGNATURE, thought_signature, key)
    except ValueError:
        return None


def thought_signature_block(
    thought_signature: str, key: bytes, thinking: str = ""
) -> dict[str, Any] | None:
    """The thinking block that carries `thought_signature` (None when it is not base64)."""
    signature = sign_thought_signature(thought_signature, key)
    if signature is None:
        return None
    return {"type": "thinking", "thinking": thinking, "signature": signature}


def carried_thought_signature(block: Any, key: bytes) -> str | None:
    """The thoughtSignature a replayed thinking block carries, exactly as Gemini sent it.

    None for any block that is not a verified ``gts`` carrier made with `key`.
    """
    if not isinstance(block, dict) or block.get("type") != "thinking":
        return None
    return open_carried(block.get("signature"), KIND_GEMINI_THOUGHT_SIGNATURE, key)
