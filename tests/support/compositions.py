"""Every stream composition, on either implementation, with the checker of its client
protocol's output: what tests over every decoder x encoder pair iterate.

The table is the code's own (`hydra_proxy.transducers.COMPOSITIONS`, made from the same
list as rust/src/transducers.rs), so a composition added there is tested here with no
edit; only each client protocol's constructor arguments are written below."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from hydra_proxy import transducers
from support import anthropic_grammar, chat_grammar, gemini_grammar, responses_grammar
from support.implementations import NATIVE_MISSING, _native

KEY = b"compositions-key"

# client protocol -> the encoder's leading arguments and the options that add output (every
# composition signs its upstream's replay state; Chat clients carry the continuation).
CLIENT_ARGUMENTS: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "anthropic": (("msg_c", "claude-c", 42), {"signing_key": KEY}),
    "chat": (
        ("chatcmpl-c", "claude-c", 1764547200),
        {"include_usage": True, "continuation_key": KEY, "signing_key": KEY},
    ),
    "responses": (("resp_c", "gpt-c", 1764547200, 42), {"signing_key": KEY}),
    "gemini": (("resp_c", "gemini-c"), {"signing_key": KEY}),
}


# name -> (upstream protocol, client protocol, class name, leading arguments, options); the
# name is the class's (`AnthropicViaChatStream`: anthropic_via_chat).
COMPOSITIONS: dict[str, tuple[str, str, str, tuple[Any, ...], dict[str, Any]]] = {
    f"{client}_via_{upstream}": (upstream, client, cls.__name__, *CLIENT_ARGUMENTS[client])
    for (upstream, client), cls in transducers.COMPOSITIONS.items()
}


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
    if client == "gemini":
        gemini = gemini_grammar.check(out, tool_json=tool_json)
        if gemini["error"] is not None:
            return gemini["error"]["status"], gemini["error"]["message"]
        assert gemini["finish"] is not None, "a Gemini output ends in a finish reason or an error"
        return None
    response = responses_grammar.check(out)
    if response["status"] == "failed":
        return response["error"]["code"], response["error"]["message"]
    return None
