"""Compatibility re-export: the Chat request reader moved to `hydra_proxy.chat.request.reader`.

Kept only until the server imports the new path; delete it then.
"""

from ..chat.request.reader import (
    DEFAULT_THINKING_BUDGETS,
    JSON_OBJECT_INSTRUCTION,
    LEADING_USER_PLACEHOLDER,
    MAX_STOP_SEQUENCES,
    MIN_THINKING_BUDGET,
    MessagesTarget,
    Translation,
    messages_request_from_chat,
)

__all__ = [
    "DEFAULT_THINKING_BUDGETS",
    "JSON_OBJECT_INSTRUCTION",
    "LEADING_USER_PLACEHOLDER",
    "MAX_STOP_SEQUENCES",
    "MIN_THINKING_BUDGET",
    "MessagesTarget",
    "Translation",
    "messages_request_from_chat",
]
