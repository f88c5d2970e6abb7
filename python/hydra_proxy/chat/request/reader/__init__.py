"""The Chat request reader: an OpenAI Chat Completions request -> the canonical request.

The entry is `translate.messages_request_from_chat`; one module per job (see there).
"""

from ..common import LEADING_USER_PLACEHOLDER, MAX_STOP_SEQUENCES
from .params import JSON_OBJECT_INSTRUCTION
from .thinking import DEFAULT_THINKING_BUDGETS, MIN_THINKING_BUDGET
from .translate import MessagesTarget, Translation, messages_request_from_chat

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
