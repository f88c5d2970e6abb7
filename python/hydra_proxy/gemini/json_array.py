"""``streamGenerateContent`` without ``alt=sse``: the same chunks as one JSON array, as
Gemini answers it (``[{...}\\r\\n,{...}\\r\\n]``), made from the SSE transducer's output.

`JsonArrayStream` wraps any Gemini-client transducer: every call's output is whole
``data: <chunk>\\r\\n\\r\\n`` events (the encoder writes nothing else), each becomes an
element of the array, and the array is closed when the stream has ended (an error is its
last element, as Gemini puts it). Pure bytes, no I/O.
"""

from __future__ import annotations

from typing import Any

__all__ = ["JsonArrayStream"]

_EVENT_END = b"\r\n\r\n"
_DATA = b"data: "


class JsonArrayStream:
    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._opened = False
        self._closed = False

    def _array(self, out: bytes) -> bytes:
        pieces = []
        for event in out.split(_EVENT_END):
            if not event.startswith(_DATA):
                continue
            pieces.append((b"," if self._opened else b"[") + event[len(_DATA) :] + b"\r\n")
            self._opened = True
        if self._inner.finished and not self._closed:
            self._closed = True
            pieces.append(b"]" if self._opened else b"[]")
        return b"".join(pieces)

    def feed(self, chunk: bytes) -> bytes:
        return self._array(self._inner.feed(chunk))

    def finish(self) -> bytes:
        return self._array(self._inner.finish())

    def ping(self) -> bytes:
        return self._array(self._inner.ping())

    def fail(self, error_type: str, message: str) -> bytes:
        return self._array(self._inner.fail(error_type, message))

    def __getattr__(self, name: str) -> Any:  # finished, complete, error, usage...
        return getattr(self._inner, name)
