"""The Anthropic response writer: the canonical Message -> a Messages client's reply.

The canonical Message is an Anthropic Message, made whole by the upstream's response
reader (its id, the model the client asked for, its usage): the client gets it as it is.
"""

from __future__ import annotations

from typing import Any

__all__ = ["anthropic_message_from_message"]


def anthropic_message_from_message(message: dict[str, Any]) -> dict[str, Any]:
    return message
