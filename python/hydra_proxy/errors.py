"""Errors in both client protocols, and the mapping of upstream errors onto them.

The status/type table here is the one the native transducer (rust/src/errors.rs) also uses
for in-stream errors; keep the two identical.
"""

from __future__ import annotations

from typing import Any

import orjson

from .json.read import uint

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

# The class of an upstream HTTP status. Other 4xx: invalid_request_error; other 5xx:
# api_error. 408 is a timeout; 503 is another overload: it becomes a 529, which Anthropic
# clients retry.
_ANTHROPIC_TYPE_BY_STATUS = {status: kind for kind, status in _STATUS_BY_ANTHROPIC_TYPE.items()}
_ANTHROPIC_TYPE_BY_STATUS[408] = "timeout_error"
_ANTHROPIC_TYPE_BY_STATUS[503] = "overloaded_error"

# What a body may say to refine a generic server error (api_error) within the 5xx class.
_SERVER_REFINEMENTS = {
    "overloaded_error": "overloaded_error",
    "UNAVAILABLE": "overloaded_error",  # Gemini's google.rpc status
    "timeout_error": "timeout_error",
    "DEADLINE_EXCEEDED": "timeout_error",
}

# The OpenAI `type` for each class (OpenAI's own words where it has them: invalid_request_error,
# insufficient_quota, server_error), and the `code` a client gets when the upstream gave none.
_OPENAI_TYPES = {
    "invalid_request_error": "invalid_request_error",
    "authentication_error": "authentication_error",
    "billing_error": "insufficient_quota",
    "permission_error": "permission_error",
    "not_found_error": "not_found_error",
    "request_too_large": "invalid_request_error",
    "rate_limit_error": "rate_limit_error",
    "api_error": "server_error",
    "timeout_error": "timeout_error",
    "overloaded_error": "overloaded_error",
}
_OPENAI_CODES = {
    "authentication_error": "invalid_api_key",
    "billing_error": "insufficient_quota",
    "request_too_large": "request_too_large",
    "rate_limit_error": "rate_limit_exceeded",
}


def status_class(status: int) -> str:
    """The Anthropic error type of an upstream HTTP error status (400-599) by itself."""
    if status in _ANTHROPIC_TYPE_BY_STATUS:
        return _ANTHROPIC_TYPE_BY_STATUS[status]
    return "api_error" if status >= 500 else "invalid_request_error"


def anthropic_error_type(status: int | None, kind: str | None) -> str:
    """The Anthropic error type for an upstream error's HTTP status and type/code string.

    The status decides the class; `kind` (the body's type, code or status string) only
    refines a generic server error (500, 502, ...) into an overload or a timeout. Without
    an error status (an in-stream error), `kind` decides.
    """
    if status is not None and 400 <= status <= 599:
        base = status_class(status)
        if base == "api_error" and kind is not None and kind in _SERVER_REFINEMENTS:
            return _SERVER_REFINEMENTS[kind]
        return base
    if kind is not None:
        if kind in ANTHROPIC_ERROR_TYPES:
            return kind
        if kind in _OPENAI_KINDS:
            return _OPENAI_KINDS[kind]
    return "api_error"


def status_for_anthropic_type(error_type: str) -> int:
    return _STATUS_BY_ANTHROPIC_TYPE.get(error_type, 500)


def client_status(upstream_status: int, error_type: str) -> int:
    """The status an Anthropic client gets for an upstream error of this class: a 4xx as it
    came (a 422 stays a 422), unless the body moved it to another class (Gemini's 400 for a
    bad key); a 5xx as its class's (500 api_error, 504 timeout_error, 529 overloaded_error)."""
    if 400 <= upstream_status < 500 and status_class(upstream_status) == error_type:
        return upstream_status
    return status_for_anthropic_type(error_type)


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


def openai_error_type(error_type: str, code: str | None = None) -> str:
    """The OpenAI `type` of an Anthropic error type (and `code`: quota is its own type)."""
    if code == "insufficient_quota":
        return "insufficient_quota"
    return _OPENAI_TYPES.get(error_type, "server_error")


def openai_status(status: int, error_type: str) -> int:
    """The status an OpenAI client gets: an overload is OpenAI's 503, not Anthropic's 529."""
    return 503 if status == 529 and error_type == "overloaded_error" else status


class ProxyError(Exception):
    """A failure to answer in the client's own protocol, with the HTTP status to use.

    `status` is the Anthropic client's (`openai_status`: an OpenAI client's). `param` names
    the offending request field (OpenAI clients show it; Anthropic clients get it inside the
    message). `retry_after` is passed through from an upstream; `code` is OpenAI's error
    code (an upstream's, e.g. ``model_not_found``; else the class's default).
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        error_type: str | None = None,
        param: str | None = None,
        retry_after: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type or anthropic_error_type(status, None)
        self.param = param
        self.retry_after = retry_after
        self.code = code

    @property
    def openai_status(self) -> int:
        return openai_status(self.status, self.error_type)

    def anthropic_body(self, request_id: str | None = None) -> bytes:
        return anthropic_error_body(self.error_type, self.message, request_id)

    def openai_body(self) -> bytes:
        code = self.code or _OPENAI_CODES.get(self.error_type)
        error_type = openai_error_type(self.error_type, code)
        return openai_error_body(self.message, error_type, self.param, code)


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
