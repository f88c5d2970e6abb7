"""Incremental Server-Sent Events parser (the pure-Python twin of rust/src/sse.rs).

Follows the WHATWG event-stream rules: lines end in CRLF, LF or CR (a CR at the end of one
chunk and an LF at the start of the next are one line end); `:` lines are comments; `data:`
lines accumulate, joined by LF; a blank line dispatches; `event:` names the event; a leading
UTF-8 BOM is dropped. Input may be split anywhere, including inside a UTF-8 character.

Unlike a browser, an event still pending at end of input is dispatched, not discarded:
upstreams that omit the final blank line must not lose their last event (`in_event` says
there is one, so a cut inside it can be told from a clean end).

Memory is bounded: the bytes buffered for one event (its partial line, data and name) past
`max_event_bytes` set `error`. So does a line that is no SSE field at all (a field name that
is not a token: an HTML page, binary): a browser would skip it, but from an upstream it
means the body is not an event stream. The events complete before the error are still
returned, nothing is parsed after it, and the buffers are released.
"""

from __future__ import annotations

import re

from .stream.messages import MSG_EVENT_TOO_LARGE, MSG_NOT_EVENT_STREAM

_BOM = b"\xef\xbb\xbf"
# A field name as SSE streams write them (data, event, id, retry, or any other token).
_FIELD_NAME = re.compile(rb"[A-Za-z0-9_-]+")


class _TooLarge(Exception):
    pass


class _NotSse(Exception):
    pass


class SseParser:
    """Feed bytes, get complete events as (event name or None, data bytes)."""

    __slots__ = (
        "_data",
        "_data_len",
        "_event",
        "_max",
        "_pending",
        "_skip_lf",
        "_started",
        "error",
    )

    def __init__(self, max_event_bytes: int) -> None:
        self._max = max_event_bytes
        self._pending = b""  # bytes of the current, not yet terminated line
        self._skip_lf = False  # the previous chunk ended in CR: a leading LF is its pair
        self._started = False  # the BOM check has been done
        self._event: bytes | None = None
        self._data: list[bytes] = []
        self._data_len = 0
        # Set once the bounds are exceeded or the input is not SSE; then nothing more.
        self.error: str | None = None

    @property
    def buffered_bytes(self) -> int:
        """The bytes held for the event being read (partial line, data, name): at most
        `max_event_bytes` between calls."""
        event = self._event
        return len(self._pending) + self._data_len + (0 if event is None else len(event))

    @property
    def in_event(self) -> bool:
        """Part of an event is buffered, not yet ended by a blank line (a partial comment
        line is not): at end of input, the stream was cut inside that event."""
        pending = self._pending
        return bool(self._data) or self._event is not None or (pending[:1] not in (b"", b":"))

    def _stop(self, error: str) -> None:
        self.error = error
        self._pending = b""
        self._data = []
        self._data_len = 0
        self._event = None

    def feed(self, chunk: bytes) -> list[tuple[bytes | None, bytes]]:
        if not chunk or self.error is not None:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if b"\r" in chunk:
            if chunk[-1:] == b"\r":
                self._skip_lf = True
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buf = self._pending + chunk if self._pending else chunk
        if not self._started:
            if len(buf) < 3 and _BOM.startswith(buf):
                self._pending = buf
                return []
            self._started = True
            if buf.startswith(_BOM):
                buf = buf[3:]
        lines = buf.split(b"\n")
        self._pending = lines.pop()
        events: list[tuple[bytes | None, bytes]] = []
        try:
            for line in lines:
                self._line(line, events)
        except _TooLarge:
            self._stop(MSG_EVENT_TOO_LARGE.replace("{}", str(self._max)))
            return events
        except _NotSse:
            self._stop(MSG_NOT_EVENT_STREAM)
            return events
        if self.buffered_bytes > self._max:
            self._stop(MSG_EVENT_TOO_LARGE.replace("{}", str(self._max)))
        return events

    def finish(self) -> list[tuple[bytes | None, bytes]]:
        """End of input: the unterminated last line and pending event are dispatched."""
        events: list[tuple[bytes | None, bytes]] = []
        if self.error is not None:
            return events
        line, self._pending = self._pending, b""
        if line.startswith(_BOM) and not self._started:
            line = line[3:]
        self._started = True
        try:
            if line:
                self._line(line, events)
            self._line(b"", events)
        except _TooLarge:
            self._stop(MSG_EVENT_TOO_LARGE.replace("{}", str(self._max)))
        except _NotSse:
            self._stop(MSG_NOT_EVENT_STREAM)
        return events

    def _line(self, line: bytes, events: list[tuple[bytes | None, bytes]]) -> None:
        if not line:
            if self._data:
                events.append((self._event, b"\n".join(self._data)))
                self._data = []
                self._data_len = 0
            self._event = None
            return
        if line[0] == 58:  # ':' comment
            return
        colon = line.find(b":")
        if colon < 0:
            name, value = line, b""
        else:
            name = line[:colon]
            value = line[colon + 1 :]
            if value[:1] == b" ":
                value = value[1:]
        if name == b"data":
            size = self._data_len + len(value) + (1 if self._data else 0)
            if size > self._max:
                raise _TooLarge
            self._data.append(value)
            self._data_len = size
        elif name == b"event":
            self._event = value
        elif _FIELD_NAME.fullmatch(name) is None:
            raise _NotSse
