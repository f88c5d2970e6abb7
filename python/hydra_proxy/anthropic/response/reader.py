"""The Anthropic response reader: an upstream's non-streamed Message -> the canonical
Message (the same shape: the reply is checked to be one and named by the model the client
asked for)."""

from __future__ import annotations

from typing import Any

from ...errors import ProxyError

__all__ = ["message_from_anthropic_message"]


def message_from_anthropic_message(reply: Any, *, model: str) -> dict[str, Any]:
    if not isinstance(reply, dict) or reply.get("type") != "message":
        raise ProxyError(
            502, "the upstream sent a reply that is not a Message", error_type="api_error"
        )
    message = dict(reply)
    message["model"] = model
    return message
