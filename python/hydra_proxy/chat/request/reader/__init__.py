"""The Chat request reader: an OpenAI Chat Completions request -> the canonical request.

The entry is `translate.messages_request_from_chat`; one module per job (see there).
"""

from .translate import Translation, messages_request_from_chat

__all__ = ["Translation", "messages_request_from_chat"]
