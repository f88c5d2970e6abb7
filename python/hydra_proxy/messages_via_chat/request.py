"""Compatibility re-export: the Chat request writer moved to `hydra_proxy.chat.request.writer`.

Kept only until the server imports the new path; delete it then.
"""

from ..chat.request.writer import (
    LEADING_USER_PLACEHOLDER,
    MAX_STOP_SEQUENCES,
    MISSING_TOOL_RESULT,
    ChatTarget,
    chat_request_from_messages,
)

__all__ = [
    "LEADING_USER_PLACEHOLDER",
    "MAX_STOP_SEQUENCES",
    "MISSING_TOOL_RESULT",
    "ChatTarget",
    "chat_request_from_messages",
]
