"""What the Chat request reader and writer share: OpenAI's limits and the error shape."""

from __future__ import annotations

from ...errors import ProxyError, invalid_request

__all__ = ["LEADING_USER_PLACEHOLDER", "MAX_STOP_SEQUENCES", "bad"]

# OpenAI accepts at most 4 stop sequences.
MAX_STOP_SEQUENCES = 4
# The user turn put before a conversation that starts with an assistant turn (both
# Anthropic and strict chat templates want a user turn first).
LEADING_USER_PLACEHOLDER = "(continued)"


def bad(path: str, problem: str) -> ProxyError:
    """A 400 for the request field at `path` (the message starts with the path)."""
    return invalid_request(f"{path}: {problem}", path)
