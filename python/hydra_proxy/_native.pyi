"""Type stubs for the native core (rust/src/python.rs), checked by mypy.stubtest."""

from typing import Final, final

from typing_extensions import Self

__all__ = [
    "ANTHROPIC_ERROR_TYPES",
    "DEFAULT_MAX_EVENT_BYTES",
    "FINISH_REASONS",
    "GEMINI_ERROR_FINISH_REASONS",
    "GEMINI_ERROR_STATUSES",
    "GEMINI_FINISH_REASONS",
    "GEMINI_REFUSAL_FINISH_REASONS",
    "INCOMPLETE_REASONS",
    "MESSAGES",
    "MSG_BAD_JSON_PATH",
    "RESPONSE_ERROR_CODES",
    "STOP_REASONS",
    "AnthropicViaChatStream",
    "AnthropicViaGeminiStream",
    "AnthropicViaResponsesStream",
    "ChatViaAnthropicStream",
    "ChatViaGeminiStream",
    "ChatViaResponsesStream",
    "GeminiViaAnthropicStream",
    "GeminiViaChatStream",
    "GeminiViaResponsesStream",
    "ResponsesViaAnthropicStream",
    "ResponsesViaChatStream",
    "ResponsesViaGeminiStream",
    "__version__",
    "json_member_elements",
    "json_nested_deeper_than",
    "json_same_leading",
]

class _Transducer:
    """What every class below has (this base exists only in the stubs)."""

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

class _AnthropicClient(_Transducer):
    def __new__(
        cls,
        message_id: str,
        model: str,
        input_tokens: int,
        *,
        signing_key: bytes | None = None,
        max_event_bytes: int = ...,
    ) -> Self: ...

class _ChatClient(_Transducer):
    def __new__(
        cls,
        completion_id: str,
        model: str,
        created: int,
        *,
        include_usage: bool = False,
        continuation_key: bytes | None = None,
        message_id: str | None = None,
        signing_key: bytes | None = None,
        max_event_bytes: int = ...,
    ) -> Self: ...

class _ResponsesClient(_Transducer):
    def __new__(
        cls,
        response_id: str,
        model: str,
        created_at: int,
        input_tokens: int,
        *,
        echo: str = "{}",
        include_encrypted: bool = False,
        summary: bool = False,
        signing_key: bytes | None = None,
        tool_names: list[tuple[str, str, str | None, bool]] | None = None,
        max_event_bytes: int = ...,
    ) -> Self: ...

class _GeminiClient(_Transducer):
    def __new__(
        cls,
        response_id: str,
        model: str,
        *,
        include_thoughts: bool = True,
        signing_key: bytes | None = None,
        max_event_bytes: int = ...,
    ) -> Self: ...

@final
class AnthropicViaChatStream(_AnthropicClient): ...

@final
class ChatViaAnthropicStream(_ChatClient): ...

@final
class AnthropicViaGeminiStream(_AnthropicClient): ...

@final
class ChatViaGeminiStream(_ChatClient): ...

@final
class ResponsesViaChatStream(_ResponsesClient): ...

@final
class ResponsesViaAnthropicStream(_ResponsesClient): ...

@final
class AnthropicViaResponsesStream(_AnthropicClient): ...

@final
class ChatViaResponsesStream(_ChatClient): ...

@final
class ResponsesViaGeminiStream(_ResponsesClient): ...

@final
class GeminiViaChatStream(_GeminiClient): ...

@final
class GeminiViaAnthropicStream(_GeminiClient): ...

@final
class GeminiViaResponsesStream(_GeminiClient): ...

__version__: Final[str]
DEFAULT_MAX_EVENT_BYTES: Final[int]
ANTHROPIC_ERROR_TYPES: Final[list[str]]
STOP_REASONS: Final[dict[str, str]]
FINISH_REASONS: Final[dict[str, str]]
MESSAGES: Final[dict[str, str]]
GEMINI_REFUSAL_FINISH_REASONS: Final[list[str]]
GEMINI_ERROR_FINISH_REASONS: Final[list[str]]
MSG_BAD_JSON_PATH: Final[str]
RESPONSE_ERROR_CODES: Final[dict[str, str]]
INCOMPLETE_REASONS: Final[dict[str, str]]
GEMINI_ERROR_STATUSES: Final[dict[str, tuple[int, str]]]
GEMINI_FINISH_REASONS: Final[dict[str, str]]

def json_nested_deeper_than(data: bytes, limit: int) -> bool: ...
def json_member_elements(data: bytes, key: bytes) -> tuple[int, int, list[int], int] | None: ...
def json_same_leading(
    before: bytes, before_at: list[int], now: bytes, now_at: list[int]
) -> int: ...
