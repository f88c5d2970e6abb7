"""The Responses request reader: an OpenAI Responses request -> the canonical request.

The entry is `translate.messages_request_from_responses`; one module per job (see there).
"""

from .translate import Translation, messages_request_from_responses

__all__ = ["Translation", "messages_request_from_responses"]
