"""The transducers the server runs, and which implementation runs them.

Each transducer is an upstream's decoder composed with a client protocol's encoder
(stream/transducer.py); the pure-Python compositions here are the twins of
rust/src/transducers.rs, and `hydra_proxy._native` has a class of the same name and
constructor for each. HYDRA_PROXY_IMPL=auto (default) uses the native extension when it imports
and falls back to Python, saying so once in the log; `native` insists on it; `python` forces
the fallback.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from .anthropic.decoder import AnthropicDecoder
from .anthropic.encoder import AnthropicEncoder
from .chat.decoder import ChatDecoder
from .chat.encoder import ChatEncoder
from .gemini.decoder import GeminiDecoder
from .gemini.encoder import GeminiEncoder
from .responses.decoder import ResponsesDecoder
from .responses.encoder import NameTable, ResponsesEncoder, ResponsesOptions
from .stream import DEFAULT_MAX_EVENT_BYTES
from .stream.transducer import Decoder, E, Transducer

log = logging.getLogger("hydra_proxy")


class StreamTransducer(Protocol):
    """One response stream: upstream bytes in, client SSE bytes out; what the server asks
    of either implementation's transducers."""

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


# -- how a composition is made -------------------------------------------------------------


def _anthropic_decoder(reply_id: str, signing_key: bytes | None) -> AnthropicDecoder:
    # An Anthropic stream names its own tool calls and signs its own thinking.
    return AnthropicDecoder()


# Each upstream kind's decoder (a `Provider.kind`; Rust: the `Upstream` trait), made from the
# id of the client's reply, which names the tool calls an upstream sends without an id of
# its own, and the key that signs the replay state (reasoning, thought signatures) a client
# must send back for the upstream to go on.
DECODERS: dict[str, Callable[[str, bytes | None], Decoder]] = {
    "chat": ChatDecoder,
    "anthropic": _anthropic_decoder,
    "gemini": GeminiDecoder,
    "responses": ResponsesDecoder,
}

# (upstream kind, client protocol) -> the composition relaying the one to the other (a pair
# of the same protocol is passed through, not transduced). Each composition class enters
# itself here.
COMPOSITIONS: dict[tuple[str, str], type[Composition[Any]]] = {}


class Composition(Transducer[Decoder, E]):
    """An upstream kind's decoder composed with a client protocol's encoder. A client base
    below gives the constructor; a composition is one line, `class
    AnthropicViaGeminiStream(AnthropicClient, upstream="gemini"): ...`, which enters it in
    COMPOSITIONS (Rust: the `compositions!` table)."""

    client: ClassVar[str]
    upstream: ClassVar[str]

    def __init_subclass__(
        cls, *, client: str | None = None, upstream: str | None = None, **kwargs: Any
    ) -> None:
        super().__init_subclass__(**kwargs)
        if client is not None:
            cls.client = client
        if upstream is not None:
            cls.upstream = upstream
            COMPOSITIONS[upstream, cls.client] = cls

    def _upstream_decoder(self, reply_id: str, signing_key: bytes | None) -> Decoder:
        return DECODERS[self.upstream](reply_id, signing_key)


class AnthropicClient(Composition[AnthropicEncoder], client="anthropic"):
    """Anthropic Messages clients: `input_tokens` is the estimate message_start reports
    until the upstream counts them; `signing_key` signs the upstream's replay state into
    the thinking signatures."""

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
            self._upstream_decoder(message_id, signing_key),
            AnthropicEncoder(message_id, model, input_tokens),
            max_event_bytes,
        )


class ChatClient(Composition[ChatEncoder], client="chat"):
    """OpenAI Chat Completions clients: `continuation_key` carries the thinking blocks'
    replay state through the client inside `reasoning_content`; `message_id` names the
    decoder's tool calls (default: the completion id), `signing_key` signs the upstream's
    replay state."""

    def __init__(
        self,
        completion_id: str,
        model: str,
        created: int,
        *,
        include_usage: bool = False,
        continuation_key: bytes | None = None,
        message_id: str | None = None,
        signing_key: bytes | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        reply_id = completion_id if message_id is None else message_id
        super().__init__(
            self._upstream_decoder(reply_id, signing_key),
            ChatEncoder(completion_id, model, created, include_usage, continuation_key),
            max_event_bytes,
        )


class ResponsesClient(Composition[ResponsesEncoder], client="responses"):
    """OpenAI Responses clients (Codex CLI): `echo` is the request echo as JSON text
    (`responses.encoder.echo_text`), `tool_names` the name table
    (`responses.encoder.name_table`); `signing_key` signs the upstream's replay state and
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
        options = ResponsesOptions(echo, include_encrypted, summary, tool_names)
        encoder = ResponsesEncoder(
            response_id, model, created_at, input_tokens, signing_key, options
        )
        super().__init__(self._upstream_decoder(response_id, signing_key), encoder, max_event_bytes)


class GeminiClient(Composition[GeminiEncoder], client="gemini"):
    """Gemini API clients (Gemini CLI, the google-genai SDKs): `include_thoughts` is the
    request's ``thinkingConfig.includeThoughts``; `signing_key` signs the upstream's replay
    state and the ``thoughtSignature`` carrier."""

    def __init__(
        self,
        response_id: str,
        model: str,
        *,
        include_thoughts: bool = True,
        signing_key: bytes | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        super().__init__(
            self._upstream_decoder(response_id, signing_key),
            GeminiEncoder(response_id, model, include_thoughts, signing_key),
            max_event_bytes,
        )


# -- the compositions, one line each (the same table as rust/src/transducers.rs) -------------


# fmt: off
class AnthropicViaChatStream(AnthropicClient, upstream="chat"): ...
class ChatViaAnthropicStream(ChatClient, upstream="anthropic"): ...
class AnthropicViaGeminiStream(AnthropicClient, upstream="gemini"): ...
class ChatViaGeminiStream(ChatClient, upstream="gemini"): ...
class ResponsesViaChatStream(ResponsesClient, upstream="chat"): ...
class ResponsesViaAnthropicStream(ResponsesClient, upstream="anthropic"): ...
class AnthropicViaResponsesStream(AnthropicClient, upstream="responses"): ...
class ChatViaResponsesStream(ChatClient, upstream="responses"): ...
class ResponsesViaGeminiStream(ResponsesClient, upstream="gemini"): ...
class GeminiViaChatStream(GeminiClient, upstream="chat"): ...
class GeminiViaAnthropicStream(GeminiClient, upstream="anthropic"): ...
class GeminiViaResponsesStream(GeminiClient, upstream="responses"): ...
# fmt: on


# -- which implementation runs them ---------------------------------------------------------

Factory = Callable[..., StreamTransducer]


@dataclass(frozen=True)
class Implementation:
    """One implementation's transducer constructors, by class name (also as attributes:
    `impl.AnthropicViaChatStream`)."""

    name: str
    classes: Mapping[str, Factory]

    def __getattr__(self, class_name: str) -> Factory:
        # Called for names that are not attributes; `classes` itself may not be set yet
        # (while unpickling), so it is looked up without recursing.
        classes: Mapping[str, Factory] = self.__dict__.get("classes", {})
        try:
            return classes[class_name]
        except KeyError:
            raise AttributeError(class_name) from None

    def transducer(self, upstream: str, client: str) -> Factory:
        """The composition relaying an `upstream` kind's stream (a `Provider.kind`) to a
        `client` protocol (`config.protocols.PROTOCOLS`, the names of both); KeyError for a
        pair without one (same-protocol pairs are passed through, not transduced)."""
        return self.classes[COMPOSITIONS[upstream, client].__name__]


PYTHON = Implementation("python", {c.__name__: c for c in COMPOSITIONS.values()})


def native() -> Implementation:
    """The native core's transducers; ImportError when the extension is not built."""
    from . import _native

    names = [c.__name__ for c in COMPOSITIONS.values()]
    return Implementation("native", {name: getattr(_native, name) for name in names})


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
