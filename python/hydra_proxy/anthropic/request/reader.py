"""The Anthropic request reader: a Messages client's request -> the canonical request.

The canonical request is an Anthropic Messages request, so the client's body is it; what
the proxy reads of it before planning is checked here, the rest where it is translated
(each writer, on `canonical/`) or, passed through, by the Anthropic upstream.
"""

from __future__ import annotations

from typing import Any

from ...errors import invalid_request

__all__ = ["messages_request_from_anthropic"]


def messages_request_from_anthropic(body: dict[str, Any]) -> dict[str, Any]:
    """The canonical request of a Messages client's body (the body itself)."""
    if not isinstance(body.get("stream", False), bool):
        # Read as `is True`: "yes" would silently become a non-streamed request.
        raise invalid_request("stream: must be a boolean", "stream")
    return body
