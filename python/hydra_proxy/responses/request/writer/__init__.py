"""The Responses request writer: the canonical request -> an OpenAI Responses request.

The entry is `translate.responses_request_from_messages`; one module per job (see there).
"""

from .target import ResponsesTarget
from .translate import responses_request_from_messages

__all__ = ["ResponsesTarget", "responses_request_from_messages"]
