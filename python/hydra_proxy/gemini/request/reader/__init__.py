"""The Gemini request reader: a Gemini ``generateContent`` request -> the canonical request.

The entry is `translate.messages_request_from_gemini`; one module per job (see there).
"""

from .translate import Translation, messages_request_from_gemini

__all__ = ["Translation", "messages_request_from_gemini"]
