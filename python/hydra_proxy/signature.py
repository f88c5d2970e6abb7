"""Thinking signatures made by the proxy (the "signature carrier").

Claude Code keeps a thinking block in its history only when it carries a signature, and
replays it verbatim. For upstreams that need their reasoning back (DeepSeek-style
`reasoning_content` on tool turns) the proxy signs the reasoning text it streamed, so a
replayed block can be recognised as its own and turned back into `reasoning_content`.

Format: ``hydra1.<base64url(HMAC-SHA256(key, b"hydra1\\0" + utf8(thinking))[:18])>``.
Versioned by its prefix; integrity-checked by the MAC. The native transducer
(rust/src/signature.rs) computes the same bytes. Signatures with this prefix are never
forwarded to Anthropic.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

PREFIX = "hydra1."
_DOMAIN = b"hydra1\x00"
_MAC_BYTES = 18


def sign_thinking(thinking: str, key: bytes) -> str:
    mac = hmac.new(key, _DOMAIN + thinking.encode("utf-8", "surrogatepass"), hashlib.sha256)
    return PREFIX + base64.urlsafe_b64encode(mac.digest()[:_MAC_BYTES]).decode("ascii")


def is_proxy_signature(signature: object) -> bool:
    return isinstance(signature, str) and signature.startswith(PREFIX)


def verify_thinking(thinking: str, signature: str, key: bytes) -> bool:
    """True when `signature` is this proxy's signature of exactly `thinking`."""
    if not is_proxy_signature(signature):
        return False
    return hmac.compare_digest(sign_thinking(thinking, key), signature)
