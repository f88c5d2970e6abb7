"""The Chat request writer's entry: the canonical request (an Anthropic Messages request)
-> an OpenAI Chat Completions request (SPEC section 3).

Pure translation, no I/O. `chat_request_from_messages` either returns the Chat request
body or raises `ProxyError` (400 invalid_request_error) whose message starts with the
offending field path, e.g. ``messages.3.content.1.source: ...`` (the same path is in
`param`). The input is never modified; the output shares sub-objects with it (tool
schemas, response format schema), so copy before mutating those.

Each job has its module, whose docstring lists the decisions it makes where the two
protocols leave room (all covered by tests): `messages` (system text, turns, tool
results, sequence), `content` (blocks -> parts), `tools`, `params` (limits, stop, user,
response format) and `thinking` (reasoning effort, reasoning replay). Here:
``temperature``/``top_p`` are passed unless the target has ``sampling=False`` (o-series/
GPT-5 reasoning models reject non-default values); ``top_k`` is dropped;
``cache_control``, ``context_management``, ``service_tier``, ``container`` and unknown
fields are dropped; streaming asks for the usage chunk when ``target.include_usage``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ....errors import invalid_request
from ..common import bad
from .messages import MessagesWriter
from .params import user_field, write_max_tokens, write_response_format, write_stop
from .thinking import reasoning_effort
from .tools import refuse_mcp_servers, write_tool_choice, write_tools

__all__ = ["ChatTarget", "chat_request_from_messages"]


@dataclass(frozen=True)
class ChatTarget:
    """What the upstream model accepts (from the route/provider configuration)."""

    model: str
    # o-series and GPT-5 take only max_completion_tokens.
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    max_tokens_limit: int | None = None
    # The model takes `reasoning_effort`.
    reasoning: bool = False
    # DeepSeek/Kimi-style: needs `reasoning_content` back on assistant turns.
    replay_reasoning: bool = False
    # Key for hydra_proxy.signature.
    signing_key: bytes = b""
    include_usage: bool = True
    # The model accepts temperature/top_p (o-series/GPT-5 reasoning models reject them).
    sampling: bool = True


def chat_request_from_messages(
    body: dict[str, Any], target: ChatTarget, *, stream: bool
) -> dict[str, Any]:
    """Translate an Anthropic Messages request body into a Chat Completions request body."""
    if not isinstance(body, dict):
        raise invalid_request("request body must be a JSON object")
    max_tokens = write_max_tokens(body, target)
    translator = MessagesWriter(target)
    translator.system(body.get("system"))
    translator.messages(body.get("messages"))
    tools = write_tools(body.get("tools"))
    refuse_mcp_servers(body.get("mcp_servers"))

    out: dict[str, Any] = {"model": target.model, "messages": translator.finish()}
    out[target.max_tokens_field] = max_tokens

    stop = write_stop(body.get("stop_sequences"))
    if stop:
        out["stop"] = stop
    for name in ("temperature", "top_p"):
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad(name, "must be a number")
        if target.sampling:
            out[name] = value

    choice, parallel = write_tool_choice(body.get("tool_choice"), tools)
    if tools:
        out["tools"] = tools
        if choice is not None:
            out["tool_choice"] = choice
        if parallel is not None:
            out["parallel_tool_calls"] = parallel

    if target.reasoning:
        effort = reasoning_effort(body)
        if effort is not None:
            out["reasoning_effort"] = effort

    response_format = write_response_format(body)
    if response_format is not None:
        out["response_format"] = response_format

    metadata = body.get("metadata")
    if isinstance(metadata, dict):
        user_id = metadata.get("user_id")
        if isinstance(user_id, str) and user_id:
            out["user"] = user_field(user_id)

    if stream:
        out["stream"] = True
        if target.include_usage:
            out["stream_options"] = {"include_usage": True}
    return out
