"""Errors in both client protocols, and the mapping of upstream errors onto them.

The status/type table here is the one the native transducer (rust/src/errors.rs) also uses
for in-stream errors; keep the two identical.
"""

from __future__ import annotations

from typing import Any

import orjson

from .json_read import uint

ANTHROPIC_ERROR_TYPES = frozenset(
    {
        "invalid_request_error",
        "authentication_error",
        "billing_error",
        "permission_error",
        "not_found_error",
        "request_too_large",
        "rate_limit_error",
        "api_error",
        "timeout_error",
        "overloaded_error",
    }
)

# OpenAI-style error `type`/`code` strings seen from upstreams, by Anthropic meaning.
_OPENAI_KINDS = {
    "rate_limit_exceeded": "rate_limit_error",
    "tokens": "rate_limit_error",
    "requests": "rate_limit_error",
    "insufficient_quota": "billing_error",
    "invalid_api_key": "authentication_error",
    "server_error": "api_error",
    "model_not_found": "not_found_error",
    "context_length_exceeded": "invalid_request_error",
}

_STATUS_BY_ANTHROPIC_TYPE = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}

# The status each Anthropic type is sent with, read backwards (503: another overload).
_ANTHROPIC_TYPE_BY_STATUS = {status: kind for kind, status in _STATUS_BY_ANTHROPIC_TYPE.items()}
_ANTHROPIC_TYPE_BY_STATUS[503] = "overloaded_error"

_OPENAI_TYPE_BY_STATUS = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "insufficient_quota",
    403: "permission_error",
    404: "not_found_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def anthropic_error_type(status: int | None, kind: str | None) -> str:
    """The Anthropic error type for an upstream error's HTTP status and type/code string."""
    if kind is not None and kind in ANTHROPIC_ERROR_TYPES:
        return kind
    if status is not None:
        if status in _ANTHROPIC_TYPE_BY_STATUS:
            return _ANTHROPIC_TYPE_BY_STATUS[status]
        if status >= 500:
            return "api_error"
        if status >= 400:
            return "invalid_request_error"
    if kind is not None and kind in _OPENAI_KINDS:
        return _OPENAI_KINDS[kind]
    return "api_error"


def status_for_anthropic_type(error_type: str) -> int:
    return _STATUS_BY_ANTHROPIC_TYPE.get(error_type, 500)


def anthropic_error_body(error_type: str, message: str, request_id: str | None = None) -> bytes:
    body: dict[str, Any] = {"type": "error", "error": {"type": error_type, "message": message}}
    if request_id is not None:
        body["request_id"] = request_id
    return orjson.dumps(body)


def openai_error_body(
    message: str, error_type: str, param: str | None = None, code: str | None = None
) -> bytes:
    return orjson.dumps(
        {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    )


def openai_error_type(status: int) -> str:
    if status in _OPENAI_TYPE_BY_STATUS:
        return _OPENAI_TYPE_BY_STATUS[status]
    return "server_error" if status >= 500 else "invalid_request_error"


class ProxyError(Exception):
    """A failure to answer in the client's own protocol, with the HTTP status to use.

    `param` names the offending request field (OpenAI clients show it; Anthropic clients get
    it inside the message). `retry_after` is passed through from an upstream.
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        error_type: str | None = None,
        param: str | None = None,
        retry_after: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type or anthropic_error_type(status, None)
        self.param = param
        self.retry_after = retry_after

    def anthropic_body(self, request_id: str | None = None) -> bytes:
        return anthropic_error_body(self.error_type, self.message, request_id)

    def openai_body(self) -> bytes:
        return openai_error_body(self.message, openai_error_type(self.status), self.param)


def invalid_request(message: str, param: str | None = None) -> ProxyError:
    """A 400 for a bad client request; the message names the problem."""
    return ProxyError(400, message, error_type="invalid_request_error", param=param)


MSG_UPSTREAM_DEFAULT = "the upstream reported an error"


def upstream_error(payload: object) -> tuple[str, str]:
    """(Anthropic error type, message) for an upstream error object in any common shape."""
    err = payload
    if type(payload) is dict and payload.get("error") is not None:
        err = payload["error"]
    status: int | None = None
    kind: str | None = None
    message: str | None = None
    if type(err) is str:
        message = err
    elif type(err) is dict:
        if type(err.get("message")) is str:
            message = err["message"]
        for key in ("code", "status_code", "status"):
            status = uint(err.get(key))
            if status is not None:
                break
        if type(err.get("type")) is str:
            kind = err["type"]
        elif type(err.get("code")) is str:
            kind = err["code"]
    return anthropic_error_type(status, kind), message or MSG_UPSTREAM_DEFAULT
