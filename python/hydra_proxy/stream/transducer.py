"""A transducer is a decoder composed with an encoder (twin of
rust/src/stream/transducer.rs): the SSE parser feeds upstream events to the decoder, whose
canonical events go straight to the encoder, whose bytes are the client's."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Generic, Protocol, TypeVar

from ..errors import ANTHROPIC_ERROR_TYPES
from ..sse import SseParser
from .events import Error, Event, MessageStart, MessageStop, Ping, StopReason, Usage
from .messages import MSG_BAD_SHAPE, MSG_CUT_INSIDE_EVENT, MSG_CUT_OFF, MSG_INVALID_JSON

# Where a decoder's events go (Rust: the `Sink` trait).
Emit = Callable[[Event], None]


# What a decoder says of an event it cannot read or of a stream that ended early: at EOF
# with an event cut in the middle, the truth is the cut.
_CUT_VERDICTS = frozenset((MSG_INVALID_JSON, MSG_BAD_SHAPE, MSG_CUT_OFF))


def _cut_inside_event(emit: Emit, event: Event) -> None:
    if type(event) is Error and event.message in _CUT_VERDICTS:
        event = Error(event.kind, MSG_CUT_INSIDE_EVENT)
    emit(event)


class Decoder(Protocol):
    """Upstream protocol -> canonical events."""

    def begin(self, emit: Emit) -> None:
        """Called before the bytes of every `feed` and `finish` (a protocol without a start
        event begins the message here)."""

    def event(self, event: bytes | None, data: bytes, emit: Emit) -> None:
        """One upstream SSE event (`event:` name and `data:` payload)."""

    def finish(self, emit: Emit) -> None:
        """Upstream EOF after its last event: end the message, or say it was cut off."""


class Decoding:
    """What every decoder keeps: whether the message has ended (the rest of the upstream is
    then not read), and how an error ends it."""

    def __init__(self) -> None:
        self._ended = False

    def begin(self, emit: Emit) -> None:
        """(A protocol with a start event starts the message with it.)"""

    def _fail(self, error_type: str, message: str, emit: Emit) -> None:
        emit(Error(error_type, message))
        self._ended = True


class StartsAtFirstBytes(Decoding):
    """A decoder of a protocol without a start event: the message starts at the upstream's
    first bytes."""

    def __init__(self) -> None:
        super().__init__()
        self._started = False

    def begin(self, emit: Emit) -> None:
        if not self._started:
            self._started = True
            emit(MessageStart())


class Ending:
    """How an encoder's output has ended, which every encoder keeps (Rust: `Outcome` and the
    `Encoder` trait's methods over it): not yet, with the client protocol's end (`complete`:
    the reply is whole), or with an error event. Plain attributes, read on every `feed`.
    Also what leads there, the same in every encoder: the upstream's counts, its stop reason,
    the end and an error."""

    finished: bool = False
    complete: bool = False
    # (Anthropic error type, message) of the error that ended the output.
    error: tuple[str, str] | None = None

    def __init__(self) -> None:
        self._usage = Usage()  # the latest counts
        self._stop_reason: str | None = None  # the canonical (Anthropic) stop reason

    def _message_event(self, parts: list[bytes], event: Event) -> None:
        """An event of the message as a whole (an encoder's own match leaves them here);
        any other is one the client protocol has no form for."""
        match event:
            case Usage():
                self._usage.update(event)
            case StopReason(reason):
                self._stop_reason = reason
            case MessageStop():
                self._end(parts)
            case Error(kind, message):
                self._fail(parts, kind, message)

    def _end(self, parts: list[bytes]) -> None:
        """Write the client protocol's end, then `_ended_complete`."""
        raise NotImplementedError

    def _fail(self, parts: list[bytes], error_type: str, message: str) -> None:
        parts.append(self._error_event(error_type, message))
        self._ended_with_error(error_type, message)

    @staticmethod
    def _error_event(error_type: str, message: str) -> bytes:
        """The client protocol's error event (an encoder names its writer)."""
        raise NotImplementedError

    def _ended_complete(self) -> None:
        self.finished = self.complete = True

    def _ended_with_error(self, error_type: str, message: str) -> None:
        self.error = (error_type, message)
        self.finished = True

    @property
    def reasoning_tokens(self) -> int:
        return self._usage.reasoning_tokens or 0


class Encoder(Protocol):
    """Canonical events -> client protocol SSE bytes, and what the server asks of them."""

    def event(self, out: list[bytes], event: Event) -> None: ...
    @property
    def finished(self) -> bool:
        """The output has ended (complete or with an error)."""

    @property
    def complete(self) -> bool:
        """The output ended with the client protocol's end: the reply is whole."""

    @property
    def error(self) -> tuple[str, str] | None: ...
    @property
    def has_content(self) -> bool:
        """The client has been sent a response (not only keepalives or an error)."""

    @property
    def stop_reason(self) -> str | None:
        """The client protocol's stop reason, once the stream has ended cleanly."""

    @property
    def usage(self) -> tuple[int, int, int]:
        """The client protocol's token counts."""

    @property
    def reasoning_tokens(self) -> int:
        """The part of the output the upstream said was reasoning (0: it did not say)."""


D = TypeVar("D", bound=Decoder)
E = TypeVar("E", bound=Encoder)


class Transducer(Generic[D, E]):
    def __init__(self, decoder: D, encoder: E, max_event_bytes: int) -> None:
        self._parser = SseParser(max_event_bytes)
        self._decoder = decoder
        self._encoder = encoder
        self._out: list[bytes] = []
        self._emit: Emit = partial(encoder.event, self._out)

    def _take(self) -> bytes:
        data = b"".join(self._out)
        self._out.clear()
        return data

    def feed(self, chunk: bytes) -> bytes:
        """Translate any slice of the upstream body; returns the complete events it made."""
        if self._encoder.finished:
            return b""
        decoder, emit = self._decoder, self._emit
        decoder.begin(emit)
        for event, data in self._parser.feed(chunk):
            decoder.event(event, data, emit)
        self._parser_error()
        return self._take()

    def finish(self) -> bytes:
        """Upstream EOF: the closing events, or an error event if the stream was cut short."""
        if self._encoder.finished:
            return b""
        decoder, emit = self._decoder, self._emit
        if self._parser.in_event:
            emit = partial(_cut_inside_event, emit)
        decoder.begin(emit)
        for event, data in self._parser.finish():
            decoder.event(event, data, emit)
        self._parser_error()
        if not self._encoder.finished:
            decoder.finish(emit)
        return self._take()

    def ping(self) -> bytes:
        """A keepalive for a silent upstream (nothing once the stream has ended)."""
        if not self._encoder.finished:
            self._emit(Ping())
        return self._take()

    def fail(self, error_type: str, message: str) -> bytes:
        """End the stream with an error event (e.g. the upstream connection broke)."""
        if error_type not in ANTHROPIC_ERROR_TYPES:
            error_type = "api_error"  # (the native wrapper maps it the same way)
        if not self._encoder.finished:
            self._emit(Error(error_type, message))
        return self._take()

    def _parser_error(self) -> None:
        if not self._encoder.finished and self._parser.error is not None:
            self._emit(Error("api_error", self._parser.error))

    @property
    def buffered_bytes(self) -> int:
        """The bytes the SSE parser holds for the event being read (bounded by
        `max_event_bytes` between calls)."""
        return self._parser.buffered_bytes

    @property
    def finished(self) -> bool:
        return self._encoder.finished

    @property
    def complete(self) -> bool:
        return self._encoder.complete

    @property
    def error(self) -> tuple[str, str] | None:
        return self._encoder.error

    @property
    def has_content(self) -> bool:
        return self._encoder.has_content

    @property
    def stop_reason(self) -> str | None:
        return self._encoder.stop_reason

    @property
    def usage(self) -> tuple[int, int, int]:
        return self._encoder.usage

    @property
    def reasoning_tokens(self) -> int:
        return self._encoder.reasoning_tokens
