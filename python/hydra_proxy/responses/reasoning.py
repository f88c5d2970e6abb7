"""Thinking that survives ``store: false``: the two reasoning carriers of the Responses API.
The native stream's side of them (the client carrier, an upstream item's signature) is
rust/src/responses/reasoning.rs.

The proxy keeps no conversation state, so everything a later turn needs travels with the
client, versioned and integrity-checked with the proxy's signing key (HMAC-SHA256), and is
restored only when it verifies: never forged, never forwarded in carrier form.

Client carrier: a reasoning item's ``encrypted_content`` (Responses clients in)
  Holds one or more canonical ``thinking`` / ``redacted_thinking`` blocks, in order:
  Claude's thinking with its Anthropic signature, redacted thinking, or proxy-signed
  (``hydra1.``) reasoning of a Chat upstream that wants it back (DeepSeek, Kimi: the Chat
  writer replays it as ``reasoning_content`` and drops it for everyone else). Wire form::

      hydra-reasoning:v1:<thinking texts, concatenated><continuation suffix>

  i.e. `CARRIER_PREFIX` followed by exactly what `hydra_proxy.continuation` appends to a
  Chat ``reasoning_content`` (one definition of the format and its MAC, shared with the
  native transducer): the suffix records each block's text length and signature and each
  redacted payload, and its MAC covers them and the texts. The text is readable (the
  client shows it as the summary anyway); what matters is that nothing in it can be
  changed. `decode_carrier` returns the blocks only when the whole value is one carrier
  that verifies with the key.

Upstream carrier: a thinking block's ``signature`` (the ``responses`` provider kind)
  An OpenAI reasoning item (its ``id`` and opaque ``encrypted_content``) kept inside the
  canonical thinking block made from it, so Claude Code (or any client) replays it and the
  Responses request writer can send the item back. Wire form::

      hydra1.rs1.<base64url(ITEM)>.<base64url(MAC)>

  ITEM is compact JSON ``{"id":...,"encrypted_content":...}``; MAC is the first 18 bytes of
  HMAC-SHA256(key, b"hydra1.rs1\\0" + ITEM + b"\\0" + utf8(thinking text)). It starts with
  `signature.PREFIX`, so the Anthropic passthrough strips it like every proxy signature,
  and the Chat writer (which verifies ``hydra1.`` signatures over the text alone) drops it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from typing import Any

import orjson

from .. import continuation, signature
from ..signing_key import verifying_keys

__all__ = [
    "CARRIER_PREFIX",
    "UPSTREAM_PREFIX",
    "UpstreamItem",
    "decode_carrier",
    "encode_carrier",
    "is_carrier",
    "sign_upstream_item",
    "verify_upstream_item",
]

CARRIER_PREFIX = "hydra-reasoning:v1:"
UPSTREAM_PREFIX = signature.PREFIX + "rs1."
_UPSTREAM_DOMAIN = b"hydra1.rs1\x00"
_MAC_BYTES = 18

Block = dict[str, Any]
UpstreamItem = dict[str, str]  # {"id": ..., "encrypted_content": ...}


def is_carrier(value: object) -> bool:
    return isinstance(value, str) and value.startswith(CARRIER_PREFIX)


def encode_carrier(blocks: list[Block], key: bytes) -> str:
    """The ``encrypted_content`` for canonical thinking/redacted_thinking blocks."""
    carried: list[continuation.Block] = []
    for block in blocks:
        if block.get("type") == "thinking":
            text, sig = block.get("thinking"), block.get("signature")
            carried.append(
                continuation.ThinkingBlock(
                    text if isinstance(text, str) else "", sig if isinstance(sig, str) else ""
                )
            )
        elif block.get("type") == "redacted_thinking" and isinstance(block.get("data"), str):
            carried.append(continuation.RedactedBlock(block["data"]))
    texts = "".join(b.text for b in carried if isinstance(b, continuation.ThinkingBlock))
    return CARRIER_PREFIX + texts + continuation.encode(carried, key)


def decode_carrier(value: object, key: bytes | None) -> list[Block] | None:
    """The blocks of a carrier that verifies with `key`; None for anything else."""
    if key is None or not is_carrier(value):
        return None
    assert isinstance(value, str)
    body = value[len(CARRIER_PREFIX) :]
    found = continuation.find(body, key)
    if (
        not isinstance(found, continuation.VerifiedSuffix)
        or found.start != 0
        or found.end != len(body)
    ):
        return None
    out: list[Block] = []
    for block in found.blocks:
        if isinstance(block, continuation.ThinkingBlock):
            out.append({"type": "thinking", "thinking": block.text, "signature": block.signature})
        else:
            out.append({"type": "redacted_thinking", "data": block.data})
    return out


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _upstream_mac(key: bytes, item: bytes, thinking: str) -> bytes:
    message = _UPSTREAM_DOMAIN + item + b"\x00" + thinking.encode("utf-8", "surrogatepass")
    return hmac.new(key, message, hashlib.sha256).digest()[:_MAC_BYTES]


def sign_upstream_item(thinking: str, item_id: str, encrypted_content: str, key: bytes) -> str:
    """The thinking block signature that carries an upstream OpenAI reasoning item."""
    item = orjson.dumps({"id": item_id, "encrypted_content": encrypted_content})
    return UPSTREAM_PREFIX + _b64(item) + "." + _b64(_upstream_mac(key, item, thinking))


def verify_upstream_item(thinking: str, sig: object, key: bytes) -> UpstreamItem | None:
    """The reasoning item inside a signature made by `sign_upstream_item` for exactly
    `thinking` with `key`; None when the signature is anything else or does not verify."""
    if not key or not isinstance(sig, str) or not sig.startswith(UPSTREAM_PREFIX):
        return None
    item_b64, dot, mac_b64 = sig[len(UPSTREAM_PREFIX) :].partition(".")
    if not dot:
        return None
    try:
        item = _unb64(item_b64)
        mac = _unb64(mac_b64)
    except (binascii.Error, ValueError):
        return None
    if not any(
        hmac.compare_digest(_upstream_mac(k, item, thinking), mac) for k in verifying_keys(key)
    ):
        return None
    parsed = orjson.loads(item)
    if not (
        isinstance(parsed, dict)
        and isinstance(parsed.get("id"), str)
        and isinstance(parsed.get("encrypted_content"), str)
    ):
        return None
    return {"id": parsed["id"], "encrypted_content": parsed["encrypted_content"]}
