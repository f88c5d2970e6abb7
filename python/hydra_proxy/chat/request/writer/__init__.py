"""The Chat request writer: the canonical request -> an OpenAI Chat Completions request.

The entry is `translate.chat_request_from_messages`; one module per job (see there).
"""

from ..common import LEADING_USER_PLACEHOLDER, MAX_STOP_SEQUENCES
from .messages import MISSING_TOOL_RESULT
from .translate import ChatTarget, chat_request_from_messages

__all__ = [
    "LEADING_USER_PLACEHOLDER",
    "MAX_STOP_SEQUENCES",
    "MISSING_TOOL_RESULT",
    "ChatTarget",
    "chat_request_from_messages",
]
