"""Small ASGI helpers: bounded request bodies and plain responses."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from .secrets import SCOPE_KEY as REDACT_KEY

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]

JSON = b"application/json"
SSE = b"text/event-stream"


class BodyTooLarge(Exception):
    pass


class ClientGone(Exception):
    pass


async def read_body(receive: Receive, limit: int) -> bytes:
    """The whole request body, or BodyTooLarge past `limit` bytes."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        body = message.get("body", b"")
        if body:
            size += len(body)
            if size > limit:
                raise BodyTooLarge
            parts.append(body)
        if not message.get("more_body", False):
            return b"".join(parts) if len(parts) != 1 else parts[0]


def header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


def start(scope: Scope, status: int, headers: Headers) -> Message:
    """The http.response.start message, tagged with the request id; notes the status for
    the access log (every response of this app starts here: body sends are not wrapped)."""
    scope["hydra.status"] = status
    tag = scope.get("hydra.request_id")
    if tag is not None:
        headers = [*headers, (b"x-request-id", tag.encode())]
    return {"type": "http.response.start", "status": status, "headers": headers}


async def respond(
    scope: Scope,
    send: Send,
    status: int,
    body: bytes,
    content_type: bytes = JSON,
    headers: Iterable[tuple[bytes, bytes]] = (),
) -> None:
    if status >= 400:
        redact = scope.get(REDACT_KEY)  # provider keys masked (server/secrets.py)
        if redact is not None:
            body = redact(body)
    await send(start(scope, status, [(b"content-type", content_type), *headers]))
    await send({"type": "http.response.body", "body": body})
