"""Limits on what a client sends: body size, the time to send it, its content type and
the shape of its JSON. Each breach is a ProxyError the app answers in the client's own
protocol, with a message that names the problem and the limit (and the setting).

- A body larger than `max_body_bytes` (a telemetry batch: `TELEMETRY_MAX_BYTES`) is refused from its Content-Length before a byte is
  kept, and a chunked one as soon as it passes the bound (413). The rest of it is read
  and dropped (within `body_timeout`) before the answer, because clients write their
  whole request before they read: answered early, they see a broken pipe, not the 413.
  A client that sent `Expect: 100-continue` is answered at once, its body never sent.
- A body not complete within `body_timeout` seconds of the start of its reading is a 408
  (slow-loris uploads); the response says ``connection: close`` and the connection
  carries no other request (granian closes it at once, or once the declared body is in).
- A Content-Type other than JSON (`application/json`, `application/*+json`), or none, is
  a 400: a web page can send any other body to any address (server/checks/browser_guard.py).
- Invalid JSON, invalid UTF-8, JSON that is not an object, and JSON nested deeper than
  `max_json_depth` (default 128 levels; orjson's own bound is 1024) are 400s.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

import orjson

from ...errors import ProxyError, invalid_request
from ...json_depth import nested_deeper_than
from ..pipeline.exchange import BodyTooLarge, ClientGone, Receive, Scope, header, read_body
from ..pipeline.previous_turn import KeptRequest, PreviousTurns
from .browser_guard import content_type_refusal

_text_deeper_than: Callable[[bytes, int], bool] | None
try:  # the native core reads the depth off the bytes, faster than the walk
    from ..._native import json_nested_deeper_than as _text_deeper_than
except ImportError:  # pragma: no cover - the pure-Python install
    _text_deeper_than = None

if sys.version_info >= (3, 11):
    _timeout = asyncio.timeout
else:  # pragma: no cover - exercised on 3.10 only
    from async_timeout import timeout as _timeout

DEFAULT_MAX_JSON_DEPTH = 128


class LimitError(ProxyError):
    """A ProxyError for a request past a limit; `close`: the body was left unread, so the
    connection cannot carry another request."""

    def __init__(
        self, status: int, message: str, *, error_type: str, code: str, close: bool = False
    ) -> None:
        super().__init__(status, message, error_type=error_type, code=code)
        self.close = close


def too_large(limit: int, *, close: bool = False, bound: str = "max_body_bytes") -> LimitError:
    return LimitError(
        413,
        f"the request body exceeds {limit} bytes ({bound})",
        error_type="request_too_large",
        code="request_too_large",
        close=close,
    )


def too_slow(seconds: float) -> LimitError:
    return LimitError(
        408,
        f"the request body did not arrive within {seconds:g} s (body_timeout)",
        error_type="invalid_request_error",
        code="request_timeout",
        close=True,
    )


def closes_connection(exc: ProxyError) -> bool:
    """Whether the answer to `exc` ends the connection: the body was left unread."""
    return isinstance(exc, LimitError) and exc.close


def check_content_type(scope: Scope) -> None:
    """A 400 unless the request's Content-Type says JSON (server/checks/browser_guard.py)."""
    refusal = content_type_refusal(header(scope, b"content-type"))
    if refusal is not None:
        raise refusal


def declared_length(scope: Scope) -> int | None:
    value = header(scope, b"content-length")
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise invalid_request("content-length is not a number") from None


async def read_json_body(
    scope: Scope, receive: Receive, max_bytes: int, seconds: float, bound: str = "max_body_bytes"
) -> bytes:
    """The request body, within `max_bytes` (named `bound` in the 413) and `seconds`
    (LimitError otherwise); raises ClientGone when the client leaves first."""
    length = declared_length(scope)
    too_big = length is not None and length > max_bytes
    if too_big and (header(scope, b"expect") or b"").lower() == b"100-continue":
        raise too_large(max_bytes, close=True, bound=bound)  # its body was never asked for
    try:
        async with _timeout(seconds):
            if not too_big:
                try:
                    return await read_body(receive, max_bytes)
                except BodyTooLarge:
                    too_big = True
            await _discard(receive)
    except TimeoutError:
        if too_big:
            raise too_large(max_bytes, close=True, bound=bound) from None
        raise too_slow(seconds) from None
    raise too_large(max_bytes, bound=bound)


# Claude Code's telemetry batches are a few kB; nothing of them is kept.
TELEMETRY_MAX_BYTES = 1 << 20


async def read_telemetry(scope: Scope, receive: Receive, seconds: float) -> None:
    """Read and drop a telemetry body: JSON, at most `TELEMETRY_MAX_BYTES` (a 413 past it,
    whatever max_body_bytes allows a model request)."""
    check_content_type(scope)
    await read_json_body(scope, receive, TELEMETRY_MAX_BYTES, seconds, "the telemetry bound, 1 MiB")


async def _discard(receive: Receive) -> None:
    """Read the rest of a refused body, keeping none of it."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        if not message.get("more_body", False):
            return


def parse_request(
    body: bytes,
    max_depth: int,
    turns: PreviousTurns,
    session: Callable[[], object],
    conversation: bytes = b"messages",
) -> tuple[dict[str, Any], KeptRequest | None]:
    """`parse_object`, reusing what the client's `session` parsed of the same turns (the
    body's `conversation` member) in its previous requests (server/pipeline/previous_turn.py); with
    the KeptRequest kept for the next request. A small body is parsed whole: there is little to
    reuse."""
    if len(body) < turns.min_bytes:
        return parse_object(body, max_depth), None
    try:
        value, turn = turns.parse(session(), body, conversation)
    except orjson.JSONDecodeError:
        return parse_object(body, max_depth), None  # parsed again for the error's message
    if type(value) is not dict:
        return parse_object(body, max_depth), None
    if turn is None:
        _check_depth(body, value, max_depth)
    elif turn.depth > max_depth:
        raise too_deep(max_depth)
    return value, turn


def parse_object(body: bytes, max_depth: int = DEFAULT_MAX_JSON_DEPTH) -> dict[str, Any]:
    """The request body as a JSON object, or a 400 naming what is wrong with it."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        text = str(exc)
        if "UTF-8" in text:
            raise invalid_request("the request body is not valid UTF-8") from None
        if "depth limit" in text:
            raise too_deep(max_depth) from None
        raise invalid_request(f"the request body is not valid JSON: {text}") from None
    if type(value) is not dict:
        raise invalid_request(f"the request body must be a JSON object, not {_json_kind(value)}")
    _check_depth(body, value, max_depth)
    return value


def _check_depth(body: bytes, value: object, max_depth: int) -> None:
    if body.count(b"{") + body.count(b"[") > max_depth and (
        _text_deeper_than(body, max_depth)
        if _text_deeper_than is not None
        else nested_deeper_than(value, max_depth)
    ):
        raise too_deep(max_depth)


# Model names are kept in caches and metrics, written to the ledger and logged: bounded,
# and without the characters that would break a log line or a label.
MAX_MODEL_CHARS = 256


def require_model(request: dict[str, Any]) -> dict[str, Any]:
    """A parsed model request, or a 400 when it names no model or a name out of bounds."""
    model = request.get("model")
    if not isinstance(model, str) or not model:
        raise invalid_request("model: a model name (string) is required", "model")
    check_model_name(model)
    return request


def check_model_name(model: str, param: str = "model") -> None:
    """A 400 unless `model` is at most MAX_MODEL_CHARS printable characters."""
    if len(model) > MAX_MODEL_CHARS:
        raise invalid_request(
            f"model: a model name is at most {MAX_MODEL_CHARS} characters, not {len(model)}",
            param,
        )
    if not model.isprintable():
        at, char = next((i, c) for i, c in enumerate(model) if not c.isprintable())
        raise invalid_request(
            f"model: the model name holds a character that is not printable "
            f"(U+{ord(char):04X} at position {at + 1})",
            param,
        )


def too_deep(limit: int) -> ProxyError:
    return invalid_request(
        f"the request body's JSON is nested deeper than {limit} levels (max_json_depth)"
    )


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


__all__ = [
    "DEFAULT_MAX_JSON_DEPTH",
    "MAX_MODEL_CHARS",
    "ClientGone",
    "LimitError",
    "check_content_type",
    "check_model_name",
    "closes_connection",
    "parse_object",
    "parse_request",
    "read_json_body",
    "read_telemetry",
    "require_model",
    "too_large",
    "too_slow",
]
