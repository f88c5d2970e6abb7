"""Gemini HTTP error bodies -> the proxy's `ProxyError` (status, Anthropic type, message,
retry-after); a streamed ``error`` chunk's type and message are read alike by the native
decoder (rust/src/gemini/errors.rs).

Gemini answers errors with a google.rpc.Status in JSON::

    {"error": {"code": 429, "message": "...", "status": "RESOURCE_EXHAUSTED",
               "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                            "retryDelay": "34.4s"}, ...]}}

(``streamGenerateContent`` without ``alt=sse`` wraps it in a one-element list.) The class
comes from the HTTP status, through the same table as every other upstream
(hydra_proxy.errors.anthropic_error_type): 400 invalid_request, 401 authentication, 403
permission, 404 not_found, 429 rate_limit, 503 overloaded, 504 timeout, other 5xx api. One
exception: Gemini reports a bad API key as 400 INVALID_ARGUMENT with an ``ErrorInfo``
reason ``API_KEY_INVALID``; that is an authentication error (401), so clients say "check
your key" rather than "fix your request". The message is Gemini's own. Retry-after: the
``RetryInfo.retryDelay`` (a protobuf Duration like ``"34.4s"``) rounded up to whole
seconds, else the HTTP ``Retry-After`` header the caller passes.
"""

from __future__ import annotations

import math
import re
from typing import Any

import orjson

from ..errors import ProxyError, anthropic_error_type, client_status

__all__ = ["AUTH_REASONS", "error_reasons", "gemini_error", "retry_delay_seconds"]

_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)s\s*")
AUTH_REASONS = frozenset({"API_KEY_INVALID", "API_KEY_EXPIRED", "ACCESS_TOKEN_EXPIRED"})
_MAX_MESSAGE = 2000


def retry_delay_seconds(details: Any) -> str | None:
    """Whole seconds (as a Retry-After value) from a RetryInfo in `details`, else None."""
    if not isinstance(details, list):
        return None
    for detail in details:
        if isinstance(detail, dict) and detail.get("@type") == _RETRY_INFO:
            delay = detail.get("retryDelay")
            match = _DURATION.fullmatch(delay) if isinstance(delay, str) else None
            if match:
                return str(math.ceil(float(match.group(1))))
    return None


def _error_object(body: Any) -> dict[str, Any]:
    if isinstance(body, (bytes, bytearray, memoryview, str)):
        try:
            body = orjson.loads(body)
        except orjson.JSONDecodeError:
            return {}
    if isinstance(body, list) and body:
        body = body[0]
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error: dict[str, Any] = body["error"]
        return error
    return {}


def error_reasons(details: Any) -> set[str]:
    """The ``ErrorInfo`` reasons in `details` (``API_KEY_INVALID``, ...)."""
    if not isinstance(details, list):
        return set()
    return {
        detail["reason"]
        for detail in details
        if isinstance(detail, dict)
        and detail.get("@type") == _ERROR_INFO
        and isinstance(detail.get("reason"), str)
    }


def gemini_error(status: int, body: Any, retry_after: str | None = None) -> ProxyError:
    """The proxy error for a Gemini HTTP error `status` and its body (bytes or parsed JSON).

    `retry_after` is the upstream ``Retry-After`` header, used when the body has no
    RetryInfo.
    """
    error = _error_object(body)
    details = error.get("details")
    if status == 400 and error_reasons(details) & AUTH_REASONS:
        error_type = "authentication_error"
    else:
        error_type = anthropic_error_type(status, None)
    message = error.get("message")
    if not isinstance(message, str) or not message.strip():
        state = error.get("status")
        message = f"Gemini returned HTTP {status}" + (f" {state}" if isinstance(state, str) else "")
    return ProxyError(
        client_status(status, error_type),
        message[:_MAX_MESSAGE],
        error_type=error_type,
        retry_after=retry_delay_seconds(details) or retry_after,
    )
