"""Compatibility re-export: the Chat response writer moved to `hydra_proxy.chat.response.writer`.

Kept only until the server imports the new path; delete it then.
"""

from ..chat.mapping import FINISH_REASONS, finish_reason
from ..chat.response.writer import chat_completion_from_message
from ..chat.tool_arguments import tool_arguments
from ..chat.usage import chat_usage

__all__ = [
    "FINISH_REASONS",
    "chat_completion_from_message",
    "chat_usage",
    "finish_reason",
    "tool_arguments",
]
