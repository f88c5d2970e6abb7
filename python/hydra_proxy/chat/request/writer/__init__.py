"""The Chat request writer: the canonical request -> an OpenAI Chat Completions request.

The entry is `translate.chat_request_from_messages`; one module per job (see there).
"""

from .messages import ChatTarget
from .translate import chat_request_from_messages

__all__ = ["ChatTarget", "chat_request_from_messages"]
