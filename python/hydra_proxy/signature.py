"""Thinking signatures made by the proxy (the "signature carrier").

Claude Code keeps a thinking block in its history only when it carries a signature, and
replays it verbatim. For upstreams that need their reasoning back (DeepSeek-style
`reasoning_content` on tool turns) the proxy signs the reasoning text it streamed, so a
replayed block can be recognised as its own and turned back into `reasoning_content`.

Two kinds share the ``hydra1.`` prefix (so every consumer that strips or recognises proxy
signatures handles both), told apart by what follows it:

- Reasoning text: ``hydra1.<base64url(HMAC-SHA256(key, b"hydra1\\0" + utf8(thinking))[:18])>``
  (24 characters after the prefix, no ``.``): the block's own `thinking` text is what is
  carried, and the MAC binds it.
- Carried upstream token: ``hydra1.<kind>.<payload>.<base64url(HMAC-SHA256(key,
  b"hydra1-carried\\0" + kind + b"\\0" + payload)[:18])>`` (its own domain, so no reasoning text
  the proxy signs can ever double as a carrier). `kind` is lowercase letters/digits, the
  payload is carried verbatim (its alphabet may not contain ``.``), the MAC binds kind and
  payload, not the block's text. Kinds: ``gts`` = a Gemini ``thoughtSignature`` exactly as
  Gemini sent it (standard or URL-safe base64); see hydra_proxy.gemini.thought_signature.

Integrity-checked by the MAC, never accepted from anyone but this proxy; verified with each
of the signing keys (hydra_proxy.signing_key: a rotation keeps the previous key verifying). The native
transducer (rust/src/signature.rs) computes the same bytes for the reasoning-text kind.
Signatures with this prefix are never forwarded to Anthropic.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re

from .signing_key import verifying_keys

PREFIX = "hydra1."
_DOMAIN = b"hydra1\x00"
_MAC_BYTES = 18
_CARRIED_DOMAIN = b"hydra1-carried\x00"
_MAC_CHARS = 24  # base64url of 18 bytes, no padding needed

KIND_GEMINI_THOUGHT_SIGNATURE = "gts"
_KIND = re.compile(r"[a-z0-9]{1,16}")
# Characters a carried payload may hold: both base64 alphabets and padding (never ".").
_PAYLOAD = re.compile(r"[A-Za-z0-9+/_=-]+")


def sign_thinking(thinking: str, key: bytes) -> str:
    mac = hmac.new(key, _DOMAIN + thinking.encode("utf-8", "surrogatepass"), hashlib.sha256)
    return PREFIX + base64.urlsafe_b64encode(mac.digest()[:_MAC_BYTES]).decode("ascii")


def is_proxy_signature(signature: object) -> bool:
    return isinstance(signature, str) and signature.startswith(PREFIX)


def verify_thinking(thinking: str, signature: str, key: bytes) -> bool:
    """True when `signature` is this proxy's signature of exactly `thinking`."""
    if not is_proxy_signature(signature):
        return False
    return any(
        hmac.compare_digest(sign_thinking(thinking, k), signature) for k in verifying_keys(key)
    )


def _carrier_mac(kind: str, payload: str, key: bytes) -> str:
    message = _CARRIED_DOMAIN + kind.encode("ascii") + b"\x00" + payload.encode("ascii")
    mac = hmac.new(key, message, hashlib.sha256).digest()[:_MAC_BYTES]
    return base64.urlsafe_b64encode(mac).decode("ascii")


def sign_carried(kind: str, payload: str, key: bytes) -> str:
    """A proxy signature that carries `payload` (an upstream token) of the given kind.

    Raises ValueError for a kind or payload outside the allowed alphabets (a payload must not
    contain ``.``, the field separator).
    """
    if not _KIND.fullmatch(kind):
        raise ValueError(f"invalid carrier kind {kind!r}")
    if not _PAYLOAD.fullmatch(payload):
        raise ValueError("carried payload must be base64 text (standard or URL-safe)")
    return f"{PREFIX}{kind}.{payload}.{_carrier_mac(kind, payload, key)}"


def open_carried(signature: object, kind: str, key: bytes) -> str | None:
    """The payload a proxy signature of `kind` carries, or None.

    None when `signature` is not a carrier of this kind, is malformed, or its MAC does not
    verify under `key` (tampered, made with another key, or forged).
    """
    if not isinstance(signature, str) or not signature.startswith(PREFIX):
        return None
    rest = signature[len(PREFIX) :]
    head, dot, tail = rest.partition(".")
    if not dot or head != kind:
        return None
    payload, dot, mac = tail.rpartition(".")
    if not dot or len(mac) != _MAC_CHARS or not _PAYLOAD.fullmatch(payload):
        return None
    if not any(
        hmac.compare_digest(_carrier_mac(kind, payload, k), mac) for k in verifying_keys(key)
    ):
        return None
    return payload
