"""A rendered reply: status, headers and the body as a list of events (the pacing unit)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

Headers = list[tuple[bytes, bytes]]

SSE_HEADERS: Headers = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
]
JSON_CONTENT_TYPE = (b"content-type", b"application/json")


@dataclass(frozen=True, slots=True)
class RenderContext:
    """What a wire renderer needs from the request, plus the ids the caller chose."""

    model: str
    stream: bool
    include_usage: bool
    chunk_size: int
    message_id: str
    created: int
    request_id: str


class Reply:
    """One HTTP answer. ``events`` concatenated is the body; pacing pauses between them."""

    __slots__ = ("_body", "abort", "events", "headers", "status")

    def __init__(self, status: int, headers: Headers, events: list[bytes], abort: bool = False):
        self.status = status
        self.headers = headers
        self.events = events
        self.abort = abort
        self._body: bytes | None = None

    @staticmethod
    def complete_json(body: Any, headers: Headers, cut: bool | int, abort: bool) -> Reply:
        """A non-streaming 200 reply as a turn shapes it: cut in half (and then not aborted),
        or whole and aborted after the body when the turn says so."""
        reply = json_reply(200, body, headers)
        if cut is not False:
            return truncated_json_reply(reply)
        reply.abort = abort
        return reply

    @property
    def body(self) -> bytes:
        if self._body is None:
            self._body = b"".join(self.events)
        return self._body


def json_reply(status: int, obj: Any, extra_headers: Headers | None = None) -> Reply:
    body = orjson.dumps(obj)
    headers: Headers = [JSON_CONTENT_TYPE, (b"content-length", str(len(body)).encode())]
    if extra_headers:
        headers.extend(extra_headers)
    return Reply(status, headers, [body])


def truncated_json_reply(reply: Reply) -> Reply:
    """The first half of a JSON reply's body (a non-streaming "cut")."""
    body = reply.body[: len(reply.body) // 2]
    headers = [h for h in reply.headers if h[0] != b"content-length"]
    headers.append((b"content-length", str(len(body)).encode()))
    return Reply(reply.status, headers, [body], abort=reply.abort)


def cut_events(events: list[bytes], content_end: int, cut: bool | int) -> list[bytes]:
    """Apply a turn's ``cut``: ``True`` keeps the content events, N keeps the first N."""
    if cut is True:
        return events[:content_end]
    if cut is False:
        return events
    return events[:cut]
