"""The transducers the server runs, and which implementation runs them.

Each transducer is a decoder composed with an encoder (stream/transducer.py); the pure-Python
compositions here are the twins of rust/src/transducers.rs, and `hydra_proxy._native` has the
same two classes. HYDRA_PROXY_IMPL=auto (default) uses the native extension when it imports
and falls back to Python, saying so once in the log; `native` insists on it; `python` forces
the fallback.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from .anthropic.decoder import AnthropicDecoder
from .anthropic.encoder import AnthropicEncoder
from .chat.decoder import ChatDecoder
from .chat.encoder import ChatEncoder
from .gemini.decoder import GeminiDecoder
from .responses.decoder import ResponsesDecoder
from .responses.encoder import NameTable, ResponsesEncoder
from .stream import DEFAULT_MAX_EVENT_BYTES
from .stream.transducer import Transducer

log = logging.getLogger("hydra_proxy")


class StreamTransducer(Protocol):
    """One response stream: upstream bytes in, client SSE bytes out (SPEC section 1)."""

    def feed(self, chunk: bytes) -> bytes: ...
    def finish(self) -> bytes: ...
    def ping(self) -> bytes: ...
    def fail(self, error_type: str, message: str) -> bytes: ...
    @property
    def finished(self) -> bool: ...
    @property
    def complete(self) -> bool: ...
    @property
    def error(self) -> tuple[str, str] | None: ...
    @property
    def has_content(self) -> bool: ...
    @property
    def stop_reason(self) -> str | None: ...
    @property
    def usage(self) -> tuple[int, int, int]: ...
    @property
    def buffered_bytes(self) -> int: ...
    @property
    def reasoning_tokens(self) -> int: ...


class MessagesViaChatStream(Transducer[ChatDecoder, AnthropicEncoder]):
    """Translate one OpenAI Chat Completions SSE body into Anthropic Messages SSE events."""

    def __init__(
        self,
        message_id: str,
        model: str,
        input_tokens: int,
        *,
        signing_key: bytes | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        super().__init__(
            ChatDecoder(message_id, signing_key),
            AnthropicEncoder(message_id, model, input_tokens),
            max_event_bytes,
        )


class ChatViaMessagesStream(Transducer[AnthropicDecoder, ChatEncoder]):
    """Translate one Anthropic Messages SSE body into OpenAI Chat Completions chunks."""

    def __init__(
        self,
        completion_id: str,
        model: str,
        created: int,
        *,
        include_usage: bool = False,
        continuation_key: bytes | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        super().__init__(
            AnthropicDecoder(),
            ChatEncoder(completion_id, model, created, include_usage, continuation_key),
            max_event_bytes,
        )


# -- OpenAI Responses clients (issue 10) --------------------------------------------------


def _responses_encoder(
    response_id: str,
    model: str,
    created_at: int,
    input_tokens: int,
    echo: str,
    include_encrypted: bool,
    summary: bool,
    signing_key: bytes | None,
    tool_names: NameTable | None,
) -> ResponsesEncoder:
    return ResponsesEncoder(
        response_id,
        model,
        created_at,
        input_tokens,
        echo,
        include_encrypted,
        summary,
        signing_key,
        tool_names,
    )


class ResponsesViaChatStream(Transducer[ChatDecoder, ResponsesEncoder]):
    """Translate one OpenAI Chat Completions SSE body into OpenAI Responses SSE events.

    `echo` is the request echo as JSON text (`responses.encoder.echo_text`), `tool_names`
    the name table (`responses.encoder.name_table`); `signing_key` signs Chat reasoning and
    the reasoning carrier."""

    def __init__(
        self,
        response_id: str,
        model: str,
        created_at: int,
        input_tokens: int,
        *,
        echo: str = "{}",
        include_encrypted: bool = False,
        summary: bool = False,
        signing_key: bytes | None = None,
        tool_names: NameTable | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        super().__init__(
            ChatDecoder(response_id, signing_key),
            _responses_encoder(
                response_id,
                model,
                created_at,
                input_tokens,
                echo,
                include_encrypted,
                summary,
                signing_key,
                tool_names,
            ),
            max_event_bytes,
        )


class ResponsesViaMessagesStream(Transducer[AnthropicDecoder, ResponsesEncoder]):
    """Translate one Anthropic Messages SSE body into OpenAI Responses SSE events (the
    arguments as for `ResponsesViaChatStream`)."""

    def __init__(
        self,
        response_id: str,
        model: str,
        created_at: int,
        input_tokens: int,
        *,
        echo: str = "{}",
        include_encrypted: bool = False,
        summary: bool = False,
        signing_key: bytes | None = None,
        tool_names: NameTable | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        super().__init__(
            AnthropicDecoder(),
            _responses_encoder(
                response_id,
                model,
                created_at,
                input_tokens,
                echo,
                include_encrypted,
                summary,
                signing_key,
                tool_names,
            ),
            max_event_bytes,
        )


class ResponsesViaGeminiStream(Transducer[GeminiDecoder, ResponsesEncoder]):
    """Translate one Gemini streamGenerateContent SSE body into OpenAI Responses SSE events
    (the arguments as for `ResponsesViaChatStream`; `signing_key` also signs Gemini's
    thought signatures, and the response id names the tool calls)."""

    def __init__(
        self,
        response_id: str,
        model: str,
        created_at: int,
        input_tokens: int,
        *,
        echo: str = "{}",
        include_encrypted: bool = False,
        summary: bool = False,
        signing_key: bytes | None = None,
        tool_names: NameTable | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        super().__init__(
            GeminiDecoder(response_id, signing_key),
            _responses_encoder(
                response_id,
                model,
                created_at,
                input_tokens,
                echo,
                include_encrypted,
                summary,
                signing_key,
                tool_names,
            ),
            max_event_bytes,
        )


class ResponsesStreamFactory(Protocol):
    """The constructor of a ResponsesVia*Stream, either implementation's."""

    def __call__(
        self,
        response_id: str,
        model: str,
        created_at: int,
        input_tokens: int,
        *,
        echo: str = ...,
        include_encrypted: bool = ...,
        summary: bool = ...,
        signing_key: bytes | None = ...,
        tool_names: NameTable | None = ...,
        max_event_bytes: int = ...,
    ) -> StreamTransducer: ...


# -- OpenAI Responses upstreams (the `responses` provider kind, issue 10) -------------------


class MessagesViaResponsesStream(Transducer[ResponsesDecoder, AnthropicEncoder]):
    """Translate one OpenAI Responses SSE body into Anthropic Messages SSE events;
    `signing_key` signs the upstream reasoning items into the thinking signatures."""

    def __init__(
        self,
        message_id: str,
        model: str,
        input_tokens: int,
        *,
        signing_key: bytes | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        super().__init__(
            ResponsesDecoder(message_id, signing_key),
            AnthropicEncoder(message_id, model, input_tokens),
            max_event_bytes,
        )


class ChatViaResponsesStream(Transducer[ResponsesDecoder, ChatEncoder]):
    """Translate one OpenAI Responses SSE body into OpenAI Chat Completions chunks;
    `signing_key` signs the upstream reasoning items, `continuation_key` carries them
    through the Chat client."""

    def __init__(
        self,
        completion_id: str,
        model: str,
        created: int,
        *,
        include_usage: bool = False,
        continuation_key: bytes | None = None,
        signing_key: bytes | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        super().__init__(
            ResponsesDecoder(completion_id, signing_key),
            ChatEncoder(completion_id, model, created, include_usage, continuation_key),
            max_event_bytes,
        )


class ChatViaResponsesFactory(Protocol):
    """The constructor of a ChatViaResponsesStream, either implementation's."""

    def __call__(
        self,
        completion_id: str,
        model: str,
        created: int,
        *,
        include_usage: bool = ...,
        continuation_key: bytes | None = ...,
        signing_key: bytes | None = ...,
        max_event_bytes: int = ...,
    ) -> StreamTransducer: ...


# -- end of OpenAI Responses ----------------------------------------------------------------


class MessagesViaChatFactory(Protocol):
    """The constructor of a MessagesViaChatStream, either implementation's."""

    def __call__(
        self,
        message_id: str,
        model: str,
        input_tokens: int,
        *,
        signing_key: bytes | None = ...,
        max_event_bytes: int = ...,
    ) -> StreamTransducer: ...


class ChatViaMessagesFactory(Protocol):
    """The constructor of a ChatViaMessagesStream, either implementation's."""

    def __call__(
        self,
        completion_id: str,
        model: str,
        created: int,
        *,
        include_usage: bool = ...,
        continuation_key: bytes | None = ...,
        max_event_bytes: int = ...,
    ) -> StreamTransducer: ...


# -- Gemini upstream (streamGenerateContent?alt=sse) ------------------------------------


class MessagesViaGeminiStream(Transducer[GeminiDecoder, AnthropicEncoder]):
    """Translate one Gemini streamGenerateContent SSE body into Anthropic Messages events."""

    def __init__(
        self,
        message_id: str,
        model: str,
        input_tokens: int,
        *,
        signing_key: bytes | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        super().__init__(
            GeminiDecoder(message_id, signing_key),
            AnthropicEncoder(message_id, model, input_tokens),
            max_event_bytes,
        )


class ChatViaGeminiStream(Transducer[GeminiDecoder, ChatEncoder]):
    """Translate one Gemini streamGenerateContent SSE body into OpenAI Chat chunks.

    `message_id` names the tool calls (the Gemini decoder's `tool_use_id`); `signing_key`
    signs the thinking blocks and carries the thought signatures, `continuation_key` the
    Chat continuation suffix that brings them back on replay.
    """

    def __init__(
        self,
        completion_id: str,
        model: str,
        created: int,
        *,
        message_id: str,
        include_usage: bool = False,
        signing_key: bytes | None = None,
        continuation_key: bytes | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        super().__init__(
            GeminiDecoder(message_id, signing_key),
            ChatEncoder(completion_id, model, created, include_usage, continuation_key),
            max_event_bytes,
        )


class MessagesViaGeminiFactory(Protocol):
    """The constructor of a MessagesViaGeminiStream, either implementation's."""

    def __call__(
        self,
        message_id: str,
        model: str,
        input_tokens: int,
        *,
        signing_key: bytes | None = ...,
        max_event_bytes: int = ...,
    ) -> StreamTransducer: ...


class ChatViaGeminiFactory(Protocol):
    """The constructor of a ChatViaGeminiStream, either implementation's."""

    def __call__(
        self,
        completion_id: str,
        model: str,
        created: int,
        *,
        message_id: str,
        include_usage: bool = ...,
        signing_key: bytes | None = ...,
        continuation_key: bytes | None = ...,
        max_event_bytes: int = ...,
    ) -> StreamTransducer: ...


# The same constructor as a MessagesViaChatStream's.
MessagesViaResponsesFactory = MessagesViaChatFactory


@dataclass(frozen=True)
class Implementation:
    """One implementation's transducer constructors, named as the classes they are."""

    name: str
    MessagesViaChatStream: MessagesViaChatFactory
    ChatViaMessagesStream: ChatViaMessagesFactory
    MessagesViaGeminiStream: MessagesViaGeminiFactory
    ChatViaGeminiStream: ChatViaGeminiFactory
    ResponsesViaChatStream: ResponsesStreamFactory
    ResponsesViaMessagesStream: ResponsesStreamFactory
    MessagesViaResponsesStream: MessagesViaResponsesFactory
    ChatViaResponsesStream: ChatViaResponsesFactory
    ResponsesViaGeminiStream: ResponsesStreamFactory

    def transducer(self, upstream: str, client: str) -> Callable[..., StreamTransducer]:
        """The composition relaying an `upstream` kind's stream (a `Provider.kind`) to a
        `client` protocol ("anthropic", "openai" for Chat, "responses"); KeyError for a
        pair without one (same-protocol pairs are passed through, not transduced)."""
        factory: Callable[..., StreamTransducer] = getattr(self, COMPOSITIONS[upstream, client])
        return factory


# (upstream kind, client protocol) -> the composition's class name: Decoder x Encoder.
COMPOSITIONS: dict[tuple[str, str], str] = {
    ("openai", "anthropic"): "MessagesViaChatStream",
    ("anthropic", "openai"): "ChatViaMessagesStream",
    ("gemini", "anthropic"): "MessagesViaGeminiStream",
    ("gemini", "openai"): "ChatViaGeminiStream",
    ("openai", "responses"): "ResponsesViaChatStream",
    ("anthropic", "responses"): "ResponsesViaMessagesStream",
    ("responses", "anthropic"): "MessagesViaResponsesStream",
    ("responses", "openai"): "ChatViaResponsesStream",
    ("gemini", "responses"): "ResponsesViaGeminiStream",
}


PYTHON = Implementation(
    "python",
    MessagesViaChatStream,
    ChatViaMessagesStream,
    MessagesViaGeminiStream,
    ChatViaGeminiStream,
    ResponsesViaChatStream=ResponsesViaChatStream,
    ResponsesViaMessagesStream=ResponsesViaMessagesStream,
    MessagesViaResponsesStream=MessagesViaResponsesStream,
    ChatViaResponsesStream=ChatViaResponsesStream,
    ResponsesViaGeminiStream=ResponsesViaGeminiStream,
)


def native() -> Implementation:
    """The native core's transducers; ImportError when the extension is not built."""
    from . import _native

    return Implementation(
        "native",
        _native.MessagesViaChatStream,
        _native.ChatViaMessagesStream,
        _native.MessagesViaGeminiStream,
        _native.ChatViaGeminiStream,
        ResponsesViaChatStream=_native.ResponsesViaChatStream,
        ResponsesViaMessagesStream=_native.ResponsesViaMessagesStream,
        MessagesViaResponsesStream=_native.MessagesViaResponsesStream,
        ChatViaResponsesStream=_native.ChatViaResponsesStream,
        ResponsesViaGeminiStream=_native.ResponsesViaGeminiStream,
    )


def select(requested: str | None = None) -> Implementation:
    choice = (requested or os.environ.get("HYDRA_PROXY_IMPL") or "auto").strip().lower()
    if choice == "python":
        return PYTHON
    if choice == "native":
        return native()  # an ImportError here is the user's answer
    if choice != "auto":
        raise ValueError(f"HYDRA_PROXY_IMPL must be auto, native or python, not {choice!r}")
    try:
        return native()
    except ImportError as exc:
        log.warning("native core unavailable (%s); using the pure-Python transducers", exc)
        return PYTHON
