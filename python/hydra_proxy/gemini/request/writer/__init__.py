"""The Gemini request writer: the canonical request -> a Gemini ``generateContent`` request.

The entry is `translate.gemini_request_from_messages`; one module per job (see there).
"""

from .endpoint import gemini_headers, gemini_path
from .target import GeminiTarget, gemini_target
from .translate import gemini_request_from_messages

__all__ = [
    "GeminiTarget",
    "gemini_headers",
    "gemini_path",
    "gemini_request_from_messages",
    "gemini_target",
]
