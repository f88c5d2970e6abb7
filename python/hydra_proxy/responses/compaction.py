"""Remote compaction on any upstream: the ``compaction`` item the proxy writes, and reads
back.

Codex asks a provider to compact its history in two ways: a Responses request whose input
ends with ``{"type": "compaction_trigger"}`` (it then wants exactly one ``compaction``
output item, streamed or not), and ``POST /v1/responses/compact`` (the older form: the
new history as ``{"output": [...]}``). OpenAI answers with an opaque encrypted item that
only it can read; here the route's own model writes a summary of the conversation and the
item carries that summary, integrity-checked with the proxy's signing key (the client
key's, like every carrier), so a later request restores it as text the model reads::

    encrypted_content = "hydra-compaction:v1:" + base64url(utf8(summary)) + "." + base64url(MAC)

MAC: the first 18 bytes of HMAC-SHA256(key, b"hydra-compaction:v1\\0" + utf8(summary)).
The summary is readable (the client shows it anyway); what matters is that nothing in it
can be changed or forged. A ``compaction`` item that is not such a carrier (OpenAI's own)
cannot be read by any other upstream: the reader says so with a 400.

Pure: no I/O; ids are passed in.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from typing import Any

import orjson

from ..signing_key import verifying_keys
from .output import item_event, response_event

__all__ = [
    "COMPACTION_PREFIX",
    "SUMMARY_REQUEST",
    "compact_history",
    "compaction_item",
    "compaction_stream",
    "decode_compaction",
    "encode_compaction",
    "is_compaction_carrier",
    "restored_summary",
]

COMPACTION_PREFIX = "hydra-compaction:v1:"
_DOMAIN = b"hydra-compaction:v1\x00"
_MAC_BYTES = 18

# What the route's model is asked at the end of the conversation it compacts. The model
# answers in text; tools stay declared (histories with tool calls need them) but unused.
SUMMARY_REQUEST = (
    "Your context window is about to be compacted. Write a handoff summary that replaces "
    "the whole conversation above for whoever continues this work (it may be you, without "
    "any of the messages above). Include: the user's goals and constraints as stated, "
    "what has been done so far (files read or changed, commands run and their relevant "
    "output, decisions taken and why), the current state, what remains to do and the "
    "immediate next step. Keep exact names, paths, identifiers and values. Answer with the "
    "summary only, as plain text; do not call any tool."
)

# How a restored summary reads to the model, in place of what it replaced.
_RESTORED = "Summary of the earlier conversation, which was compacted:\n\n"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(key: bytes, summary: bytes) -> bytes:
    return hmac.new(key, _DOMAIN + summary, hashlib.sha256).digest()[:_MAC_BYTES]


def is_compaction_carrier(value: object) -> bool:
    return isinstance(value, str) and value.startswith(COMPACTION_PREFIX)


def encode_compaction(summary: str, key: bytes) -> str:
    data = summary.encode("utf-8", "surrogatepass")
    return COMPACTION_PREFIX + _b64(data) + "." + _b64(_mac(key, data))


def decode_compaction(value: object, key: bytes | None) -> str | None:
    """The summary of a carrier made by `encode_compaction` with `key` (or a key it
    verifies with after a rotation); None for anything else."""
    if key is None or not is_compaction_carrier(value):
        return None
    assert isinstance(value, str)
    data_b64, dot, mac_b64 = value[len(COMPACTION_PREFIX) :].partition(".")
    if not dot:
        return None
    try:
        data, mac = _unb64(data_b64), _unb64(mac_b64)
    except (binascii.Error, ValueError):
        return None
    if not any(hmac.compare_digest(_mac(k, data), mac) for k in verifying_keys(key)):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def restored_summary(summary: str) -> str:
    """The text the model reads where a compaction item stood."""
    return _RESTORED + summary


def compaction_item(summary: str, key: bytes, item_id: str) -> dict[str, Any]:
    return {
        "type": "compaction",
        "id": item_id,
        "encrypted_content": encode_compaction(summary, key),
    }


def compact_history(input_items: list[Any], item: dict[str, Any]) -> dict[str, Any]:
    """The reply of ``POST /v1/responses/compact``: the new history, the user's own
    messages kept (as OpenAI's endpoint keeps them) and the compaction item after them."""
    kept = [
        i
        for i in input_items
        if isinstance(i, dict) and i.get("type", "message") == "message" and i.get("role") == "user"
    ]
    return {"output": [*kept, item]}


def compaction_stream(response: dict[str, Any]) -> bytes:
    """A finished compaction ``response`` as the events of a Responses stream: created,
    its one item added and done, completed."""
    output = response["output"]
    started = {**response, "status": "in_progress", "output": [], "usage": None}
    events = [response_event(b"response.created", 0, orjson.dumps(started))]
    sequence = 1
    for index, item in enumerate(output):
        encoded = orjson.dumps(item)
        events.append(item_event(b"response.output_item.added", sequence, index, encoded))
        events.append(item_event(b"response.output_item.done", sequence + 1, index, encoded))
        sequence += 2
    events.append(response_event(b"response.completed", sequence, orjson.dumps(response)))
    return b"".join(events)
