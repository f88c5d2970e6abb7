"""Type stubs for the native core (rust/src/python.rs), checked by mypy.stubtest."""

from typing import Final, final

from typing_extensions import Self

__all__ = [
    "ANTHROPIC_ERROR_TYPES",
    "DEFAULT_MAX_EVENT_BYTES",
    "FINISH_REASONS",
    "GEMINI_ERROR_FINISH_REASONS",
    "GEMINI_REFUSAL_FINISH_REASONS",
    "MESSAGES",
    "MSG_BAD_JSON_PATH",
    "STOP_REASONS",
    "ChatViaGeminiStream",
    "ChatViaMessagesStream",
    "MessagesViaChatStream",
    "MessagesViaGeminiStream",
    "__version__",
]

@final
class MessagesViaChatStream:
    def __new__(
        cls,
        message_id: str,
        model: str,
        input_tokens: int,
        *,
        signing_key: bytes | None = None,
        max_event_bytes: int = ...,
    ) -> Self: ...
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

@final
class ChatViaMessagesStream:
    def __new__(
        cls,
        completion_id: str,
        model: str,
        created: int,
        *,
        include_usage: bool = False,
        continuation_key: bytes | None = None,
        max_event_bytes: int = ...,
    ) -> Self: ...
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

# -- Gemini upstream

@final
class MessagesViaGeminiStream:
    def __new__(
        cls,
        message_id: str,
        model: str,
        input_tokens: int,
        *,
        signing_key: bytes | None = None,
        max_event_bytes: int = ...,
    ) -> Self: ...
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

@final
class ChatViaGeminiStream:
    def __new__(
        cls,
        completion_id: str,
        model: str,
        created: int,
        *,
        message_id: str,
        include_usage: bool = False,
        signing_key: bytes | None = None,
        continuation_key: bytes | None = None,
        max_event_bytes: int = ...,
    ) -> Self: ...
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

__version__: Final[str]
DEFAULT_MAX_EVENT_BYTES: Final[int]
ANTHROPIC_ERROR_TYPES: Final[list[str]]
STOP_REASONS: Final[dict[str, str]]
FINISH_REASONS: Final[dict[str, str]]
MESSAGES: Final[dict[str, str]]
GEMINI_REFUSAL_FINISH_REASONS: Final[list[str]]
GEMINI_ERROR_FINISH_REASONS: Final[list[str]]
MSG_BAD_JSON_PATH: Final[str]
