"""Gemini ``streamGenerateContent?alt=sse`` chunks, as bytes (twin of
rust/src/gemini/output.rs), and the Gemini error shape.

Every chunk is ``data: <compact GenerateContentResponse>\\r\\n\\r\\n`` (CRLF, as Gemini frames
them) with one candidate (``index: 0``, ``role: "model"``), ``modelVersion`` and
``responseId``; the fixed tail is rendered once per stream. Errors are a google.rpc.Status
``{"error": {"code", "message", "status"}}`` (first key ``error``: the google-genai SDK
raises on a chunk that starts so), with the HTTP code and status string Gemini uses for
each class of failure (`ERROR_STATUSES`).
"""

from __future__ import annotations

from orjson import dumps

__all__ = [
    "ERROR_STATUSES",
    "FINISH_REASONS",
    "ChunkWriter",
    "error_body",
    "error_chunk",
    "error_status",
    "finish_reason",
]

# Anthropic error type -> (HTTP code, google.rpc status), the codes Gemini answers with.
ERROR_STATUSES: dict[str, tuple[int, str]] = {
    "invalid_request_error": (400, "INVALID_ARGUMENT"),
    "authentication_error": (401, "UNAUTHENTICATED"),
    "billing_error": (400, "FAILED_PRECONDITION"),
    "permission_error": (403, "PERMISSION_DENIED"),
    "not_found_error": (404, "NOT_FOUND"),
    "request_too_large": (413, "INVALID_ARGUMENT"),
    "rate_limit_error": (429, "RESOURCE_EXHAUSTED"),
    "api_error": (500, "INTERNAL"),
    "timeout_error": (504, "DEADLINE_EXCEEDED"),
    "overloaded_error": (503, "UNAVAILABLE"),
}

# Anthropic stop_reason -> Gemini finishReason (anything else: STOP).
FINISH_REASONS: dict[str, str] = {
    "max_tokens": "MAX_TOKENS",
    "model_context_window_exceeded": "MAX_TOKENS",
    "refusal": "SAFETY",
}


def finish_reason(stop_reason: str | None) -> str:
    return FINISH_REASONS.get(stop_reason or "", "STOP")


def error_status(error_type: str) -> tuple[int, str]:
    return ERROR_STATUSES.get(error_type, (500, "INTERNAL"))


def error_body(error_type: str, message: str) -> bytes:
    """A Gemini error body for an error of this class."""
    code, status = error_status(error_type)
    return b'{"error":{"code":%d,"message":%s,"status":"%s"}}' % (
        code,
        dumps(message),
        status.encode(),
    )


def error_chunk(error_type: str, message: str) -> bytes:
    return b"data: " + error_body(error_type, message) + b"\r\n\r\n"


_HEAD = b'data: {"candidates":[{"content":{"parts":['


class ChunkWriter:
    __slots__ = ("_tail",)

    def __init__(self, response_id: str, model: str) -> None:
        self._tail = b',"modelVersion":%s,"responseId":%s}\r\n\r\n' % (
            dumps(model),
            dumps(response_id),
        )

    def parts(self, parts: bytes) -> bytes:
        """A chunk of content parts (JSON objects, comma-separated)."""
        return _HEAD + parts + b'],"role":"model"},"index":0}]' + self._tail

    def last(self, parts: bytes, reason: str, usage: bytes) -> bytes:
        """The final chunk: its parts, the finishReason and the usageMetadata."""
        return (
            _HEAD
            + parts
            + b'],"role":"model"},"finishReason":"%s","index":0}],"usageMetadata":'
            % reason.encode()
            + usage
            + self._tail
        )


def text_part(text: str, signature: str | None, *, thought: bool = False) -> bytes:
    out = b'{"text":' + dumps(text)
    if thought:
        out += b',"thought":true'
    if signature is not None:
        out += b',"thoughtSignature":"' + signature.encode() + b'"'
    return out + b"}"


def call_part(call_id: str, name: str, args: bytes, signature: str | None) -> bytes:
    out = b'{"functionCall":{"id":%s,"name":%s,"args":%s}' % (dumps(call_id), dumps(name), args)
    if signature is not None:
        out += b',"thoughtSignature":"' + signature.encode() + b'"'
    return out + b"}"


def usage_metadata(prompt: int, cached: int, candidates: int, thoughts: int) -> bytes:
    out = b'{"promptTokenCount":%d,"candidatesTokenCount":%d' % (prompt, candidates)
    if cached:
        out += b',"cachedContentTokenCount":%d' % cached
    if thoughts:
        out += b',"thoughtsTokenCount":%d' % thoughts
    return out + b',"totalTokenCount":%d}' % (prompt + candidates + thoughts)
