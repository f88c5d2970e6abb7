"""An upstream's HTTP error, in any provider's shape -> the client's error (pure, no I/O).

The HTTP status decides the class (hydra_proxy.errors.anthropic_error_type): a 401 is an
authentication error whatever the body's generic ``type`` says. The body decides only the
message, and may refine within the status's class: a 500 that says it is overloaded, an
OpenAI 429 that is ``insufficient_quota``, Gemini's 400 ``API_KEY_INVALID`` (its way of
saying 401). Bodies come in these shapes, all read here:

- OpenAI and the OpenAI-compatible (Groq, DeepSeek, OpenRouter, Z.AI, vLLM):
  ``{"error": {"message", "type", "param", "code"}}``, ``code`` a string or a number,
  sometimes ``{"error": "text"}`` or a top-level ``message`` / ``detail``;
- Anthropic: ``{"type": "error", "error": {"type", "message"}}``;
- Gemini: ``{"error": {"code", "message", "status", "details": [...]}}`` (in a one-element
  list from ``streamGenerateContent`` without ``alt=sse``), whose ``RetryInfo`` is the only
  retry-after a 429 has;
- not JSON (an HTML page from a load balancer, plain text) or empty, or JSON that is no
  object.

Whatever reaches the client is bounded (MAX_MESSAGE) and scrubbed of keys: the caller's
`redact` (hydra_proxy.redaction: the keys it knows, and anything that looks like an API
key), applied before the bound so that no key is cut in half. An HTML page is never
echoed, only its title.

A prompt longer than the model's window, said in any provider's words (OpenAI's
``context_length_exceeded``, Anthropic's "prompt is too long", DeepSeek's "maximum context
length", Gemini's "input token count... exceeds"), becomes one error every client knows
how to recover from (by compacting): a 400 ``invalid_request_error`` whose message starts
with Anthropic's "prompt is too long" (Claude Code's check) and goes on in Gemini's words
("the input token count exceeds the maximum number of tokens allowed"), and whose OpenAI
code is ``context_length_exceeded`` (Codex's and the Chat SDKs').

A body is read once (`read_error_body`): the same reading gives the client's error, the
retry-after a Gemini body carries, and whether a same-protocol body may be passed on as it
is (`ErrorBody.inner_message` and the type fields).
"""

from __future__ import annotations

import html
import http
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from .errors import ProxyError, anthropic_error_type, client_status
from .gemini.errors import AUTH_REASONS, error_reasons, retry_delay_seconds
from .redaction import SCRUB

__all__ = [
    "CONTEXT_LENGTH_EXCEEDED",
    "GEMINI_TOO_LONG",
    "MAX_MESSAGE",
    "PROMPT_TOO_LONG",
    "ErrorBody",
    "is_context_overflow",
    "read_error_body",
    "upstream_http_error",
]

MAX_MESSAGE = 2000
_MAX_TEXT = 200  # of a plain-text body
_MAX_TITLE = 100  # of an HTML page's title
_CODE = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)

Form = Literal["json", "html", "text", "empty", "other"]

CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"
PROMPT_TOO_LONG = "prompt is too long"
GEMINI_TOO_LONG = "the input token count exceeds the maximum number of tokens allowed"
_OVERFLOW = re.compile(
    r"prompt is too long|context[_ ]length|maximum context|context window|"
    r"input token count.{0,40}exceeds|too many (?:input )?tokens",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ErrorBody:
    """What an error body says; `message` is the provider's own, as sent (unbounded)."""

    form: Form
    message: str | None = None
    kind: str | None = None  # the body's type, or its status/code string
    code: str | None = None  # an OpenAI-style error code
    param: str | None = None
    retry_after: str | None = None  # from a Gemini RetryInfo
    reasons: frozenset[str] = field(default_factory=frozenset)  # Gemini ErrorInfo reasons
    title: str | None = None  # an HTML page's
    # A JSON object body's own fields, as sent, for passing it on unchanged: its top-level
    # ``type`` (Anthropic's "error"), and ``error.type`` and ``error.message`` when strings.
    top_type: str | None = None
    inner_type: str | None = None
    inner_message: str | None = None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _string(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _read_object(obj: dict[str, Any], *, top: bool) -> ErrorBody:
    err = obj.get("error")
    if isinstance(err, str):
        return ErrorBody("json", message=_text(err))
    wrapped = isinstance(err, dict) and top
    if not isinstance(err, dict):  # vLLM / FastAPI: the fields at the top
        err = obj
    message = _text(err.get("message")) or _text(err.get("msg")) or _text(err.get("detail"))
    raw_code = err.get("code")
    code = raw_code if isinstance(raw_code, str) and _CODE.fullmatch(raw_code) else None
    kind = next(
        (v for v in (err.get("type"), code, err.get("status")) if isinstance(v, str) and v),
        None,
    )
    param = err.get("param")
    details = err.get("details")
    return ErrorBody(
        "json",
        message=message,
        kind=kind if kind != "error" else None,
        code=code,
        param=param if isinstance(param, str) and len(param) <= 200 else None,
        retry_after=retry_delay_seconds(details),
        reasons=frozenset(error_reasons(details)),
        top_type=_string(obj.get("type")) if wrapped else None,
        inner_type=_string(err.get("type")) if wrapped else None,
        inner_message=_string(err.get("message")) if wrapped else None,
    )


def read_error_body(body: bytes) -> ErrorBody:
    """Read an upstream error body of any shape (at most the bytes the caller bounded)."""
    stripped = body.strip()
    if not stripped:
        return ErrorBody("empty")
    try:
        payload: Any = orjson.loads(stripped)
    except orjson.JSONDecodeError:
        head = stripped[:1024].lower()
        if head.startswith(b"<") or b"<html" in head or b"<!doctype" in head:
            match = _TITLE.search(stripped[:8192])
            title = None
            if match:
                words = html.unescape(match.group(1).decode("utf-8", "replace")).split()
                title = " ".join(words)[:_MAX_TITLE] or None
            return ErrorBody("html", title=title)
        line = stripped.decode("utf-8", "replace").splitlines()[0]
        text = "".join(ch for ch in line if ch.isprintable()).strip()
        return ErrorBody("text", message=text[:_MAX_TEXT] or None)
    if isinstance(payload, list) and payload and isinstance(payload[0], dict):
        return _read_object(payload[0], top=False)
    if isinstance(payload, dict):
        return _read_object(payload, top=True)
    if isinstance(payload, str):
        return ErrorBody("text", message=_text(payload))
    return ErrorBody("other")


def _status_text(status: int) -> str:
    try:
        return f"HTTP {status} {http.HTTPStatus(status).phrase}"
    except ValueError:
        return f"HTTP {status}"


def _message(status: int, body: ErrorBody, provider: str | None) -> str:
    where = f"{_status_text(status)} from provider {provider!r}" if provider else None
    where = where or _status_text(status)
    if body.message is not None:
        return f"upstream error ({where}): {body.message[:MAX_MESSAGE]}"
    if body.form == "html":
        titled = f' titled "{body.title}"' if body.title else ""
        return f"upstream error ({where}): an HTML page{titled}, not an API error"
    if body.form == "empty":
        return f"upstream error ({where}) with an empty body"
    if body.form == "json" and body.kind:
        return f"upstream error ({where}): {body.kind}"
    return f"upstream error ({where}) without an error message"


def is_context_overflow(status: int, body: ErrorBody) -> bool:
    """Whether an upstream's error says the prompt does not fit the model's window."""
    if status not in (400, 413, 422):
        return False
    if CONTEXT_LENGTH_EXCEEDED in (body.code, body.kind):
        return True
    return body.message is not None and _OVERFLOW.search(body.message[:MAX_MESSAGE]) is not None


def upstream_http_error(
    status: int,
    body: bytes | ErrorBody,
    retry_after: str | None,
    *,
    provider: str | None = None,
    redact: Callable[[str], str] = SCRUB.text,
) -> ProxyError:
    """The client's error for an upstream's HTTP error `status`, `body` (or its reading)
    and ``Retry-After`` header (a Gemini RetryInfo wins: it is the precise one). `provider`
    names the upstream in messages; `redact` takes the keys out of the message."""
    read = body if isinstance(body, ErrorBody) else read_error_body(body)
    if is_context_overflow(status, read):
        text = redact(_message(status, read, provider))[: MAX_MESSAGE - 120]
        return ProxyError(
            400,
            f"{PROMPT_TOO_LONG}: {GEMINI_TOO_LONG}; {text}",
            error_type="invalid_request_error",
            param=read.param,
            code=CONTEXT_LENGTH_EXCEEDED,
        )
    if status == 400 and read.reasons & AUTH_REASONS:
        error_type = "authentication_error"  # Gemini's bad key
    else:
        error_type = anthropic_error_type(status, read.kind)
    message = redact(_message(status, read, provider))
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 3] + "..."
    code = read.code
    if code is None and read.kind == "insufficient_quota":
        code = read.kind
    return ProxyError(
        client_status(status, error_type),
        message,
        error_type=error_type,
        param=read.param,
        retry_after=read.retry_after or retry_after,
        code=code,
    )
