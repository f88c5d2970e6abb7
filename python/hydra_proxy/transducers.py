"""Which transducer implementation runs: the native core or its pure-Python twin.

HYDRA_PROXY_IMPL=auto (default) uses the native extension when it imports and falls back to
Python, saying so once in the log; `native` insists on it; `python` forces the fallback.
"""

from __future__ import annotations

import logging
import os
from typing import Protocol

from .chat_via_messages import stream as _py_chat_via_messages
from .messages_via_chat import stream as _py_messages_via_chat

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


class _Implementation:
    def __init__(self, name: str, messages_via_chat: type, chat_via_messages: type) -> None:
        self.name = name
        self.MessagesViaChatStream = messages_via_chat
        self.ChatViaMessagesStream = chat_via_messages


def _python() -> _Implementation:
    return _Implementation(
        "python",
        _py_messages_via_chat.MessagesViaChatStream,
        _py_chat_via_messages.ChatViaMessagesStream,
    )


def _native() -> _Implementation:
    from . import _native

    return _Implementation("native", _native.MessagesViaChatStream, _native.ChatViaMessagesStream)


def select(requested: str | None = None) -> _Implementation:
    choice = (requested or os.environ.get("HYDRA_PROXY_IMPL") or "auto").strip().lower()
    if choice == "python":
        return _python()
    if choice == "native":
        return _native()  # an ImportError here is the user's answer
    if choice != "auto":
        raise ValueError(f"HYDRA_PROXY_IMPL must be auto, native or python, not {choice!r}")
    try:
        return _native()
    except ImportError as exc:
        log.warning("native core unavailable (%s); using the pure-Python transducers", exc)
        return _python()
