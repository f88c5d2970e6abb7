"""The nine stream compositions, on either implementation, with the checker of their
client protocol's output: what tests over every decoder x encoder pair iterate."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import anthropic_grammar
import chat_grammar
import responses_grammar
from hydra_proxy import transducers
from implementations import NATIVE_MISSING, _native

KEY = b"compositions-key"

# name -> (upstream protocol, client protocol, class name, leading arguments, options)
COMPOSITIONS: dict[str, tuple[str, str, str, tuple[Any, ...], dict[str, Any]]] = {
    "messages_via_chat": ("chat", "anthropic", "MessagesViaChatStream", ("msg_c", "claude-c", 42), {"signing_key": KEY}),
    "chat_via_messages": ("anthropic", "chat", "ChatViaMessagesStream", ("chatcmpl-c", "claude-c", 1764547200), {"include_usage": True, "continuation_key": KEY}),
    "responses_via_chat": ("chat", "responses", "ResponsesViaChatStream", ("resp_c", "gpt-c", 1764547200, 42), {"signing_key": KEY}),
    "responses_via_messages": ("anthropic", "responses", "ResponsesViaMessagesStream", ("resp_c", "gpt-c", 1764547200, 42), {"signing_key": KEY}),
    "responses_via_gemini": ("gemini", "responses", "ResponsesViaGeminiStream", ("resp_c", "gpt-c", 1764547200, 42), {"signing_key": KEY}),
    "messages_via_responses": ("responses", "anthropic", "MessagesViaResponsesStream", ("msg_c", "claude-c", 42), {"signing_key": KEY}),
    "chat_via_responses": ("responses", "chat", "ChatViaResponsesStream", ("chatcmpl-c", "claude-c", 1764547200), {"include_usage": True, "signing_key": KEY}),
    "messages_via_gemini": ("gemini", "anthropic", "MessagesViaGeminiStream", ("msg_c", "claude-c", 42), {"signing_key": KEY}),
    "chat_via_gemini": ("gemini", "chat", "ChatViaGeminiStream", ("chatcmpl-c", "gemini-c", 1764547200), {"include_usage": True, "message_id": "msg_c"}),
}  # fmt: skip


def make(name: str, impl: str, **options: Any) -> Any:
    """A fresh transducer of composition `name` on implementation `impl`."""
    _, _, class_name, args, defaults = COMPOSITIONS[name]
    if impl == "native":
        if _native is None:
            pytest.skip(NATIVE_MISSING)
        cls: Callable[..., Any] = getattr(_native, class_name)
    else:
        cls = getattr(transducers, class_name)
    return cls(*args, **{**defaults, **options})


def client_error(name: str, out: bytes, *, tool_json: bool = True) -> tuple[str, str] | None:
    """Check `out` (a whole output) against its client protocol's grammar; the error it
    ends with, as (type or code, message), or None when it ended complete."""
    client = COMPOSITIONS[name][1]
    if client == "anthropic":
        rebuilt = anthropic_grammar.check(out, tool_json=tool_json)
        if rebuilt.error is not None:
            return rebuilt.error["type"], rebuilt.error["message"]
        assert rebuilt.complete, "an Anthropic output ends in message_stop or an error"
        return None
    if client == "chat":
        chat = chat_grammar.check(out, tool_json=tool_json)
        if chat["error"] is not None:
            return chat["error"]["type"], chat["error"]["message"]
        return None
    response = responses_grammar.check(out)
    if response["status"] == "failed":
        return response["error"]["code"], response["error"]["message"]
    return None
