"""Failures in the Responses API's shapes, both directions (the codes and the upstream
failure of the native stream: rust/src/responses/errors.rs).

Before the first byte a client gets an HTTP error with OpenAI's body
``{"error": {message, type, param, code}}`` (`error_body`, the same shape the Chat
endpoint sends). After it, a stream reports a failure as a ``response.failed`` event whose
``response`` has ``status: "failed"`` and ``error: {code, message}`` (`failed_event`), or as
a bare ``error`` event (`error_event`). ``code`` is one of the values the openai SDK knows
for `ResponseError.code` (`RESPONSE_ERROR_CODES`): a rate limit is
``rate_limit_exceeded``, a problem with the request ``invalid_prompt``, anything else
``server_error``.

From a ``responses`` upstream, a reply with ``status: "failed"`` or an ``error`` object
becomes a `ProxyError` with the Anthropic error type for its code (`upstream_failure`).
"""

from __future__ import annotations

import copy
from typing import Any

from ..errors import ProxyError, status_for_anthropic_type

__all__ = [
    "RESPONSE_ERROR_CODES",
    "error_body",
    "error_event",
    "failed_event",
    "failed_response",
    "response_error",
    "response_error_code",
    "upstream_failure",
]

# Anthropic error type -> ResponseError.code
RESPONSE_ERROR_CODES: dict[str, str] = {
    "rate_limit_error": "rate_limit_exceeded",
    "invalid_request_error": "invalid_prompt",
    "request_too_large": "invalid_prompt",
}
_DEFAULT_CODE = "server_error"
# ResponseError.code -> Anthropic error type (other codes are problems with the input)
_ANTHROPIC_TYPES = {
    "server_error": "api_error",
    "rate_limit_exceeded": "rate_limit_error",
    "vector_store_timeout": "timeout_error",
}
MSG_UPSTREAM_FAILED = "the upstream failed to generate a response"


def error_body(error: ProxyError) -> bytes:
    """The HTTP error body before the first byte: OpenAI's ``{"error": {...}}``."""
    return error.openai_body()


def response_error_code(error_type: str) -> str:
    return RESPONSE_ERROR_CODES.get(error_type, _DEFAULT_CODE)


def response_error(error_type: str, message: str) -> dict[str, Any]:
    """A ``response.error`` object for an Anthropic error type and message."""
    return {"code": response_error_code(error_type), "message": message}


def failed_response(response: dict[str, Any], error_type: str, message: str) -> dict[str, Any]:
    """A copy of `response` (the one the stream started) marked failed with this error."""
    out = copy.copy(response)
    out["status"] = "failed"
    out["error"] = response_error(error_type, message)
    out["incomplete_details"] = None
    return out


def failed_event(
    response: dict[str, Any], error_type: str, message: str, sequence_number: int
) -> dict[str, Any]:
    """The ``response.failed`` event payload for a failure after the first byte."""
    return {
        "type": "response.failed",
        "sequence_number": sequence_number,
        "response": failed_response(response, error_type, message),
    }


def error_event(
    error_type: str, message: str, sequence_number: int, param: str | None = None
) -> dict[str, Any]:
    """The ``error`` event payload (the stream's own failure report, no response)."""
    return {
        "type": "error",
        "code": response_error_code(error_type),
        "message": message,
        "param": param,
        "sequence_number": sequence_number,
    }


def upstream_failure(response: dict[str, Any]) -> ProxyError | None:
    """The `ProxyError` for a failed Responses reply; None when it did not fail."""
    error = response.get("error")
    if error is None and response.get("status") != "failed":
        return None
    code = error.get("code") if isinstance(error, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    error_type = (
        _ANTHROPIC_TYPES.get(code, "invalid_request_error")
        if isinstance(code, str)
        else "api_error"
    )
    text = message if isinstance(message, str) and message else MSG_UPSTREAM_FAILED
    return ProxyError(status_for_anthropic_type(error_type), text, error_type=error_type)
