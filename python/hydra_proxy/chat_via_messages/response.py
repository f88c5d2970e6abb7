"""Compatibility re-export: the Chat response writer moved to `hydra_proxy.chat.response.writer`.

Kept only until the server imports the new path; delete it then.
"""

from ..chat.mapping import FINISH_REASONS, chat_usage, finish_reason, tool_arguments
from ..chat.response.writer import chat_completion_from_message

__all__ = [
    "FINISH_REASONS",
    "chat_completion_from_message",
    "chat_usage",
    "finish_reason",
    "tool_arguments",
]
