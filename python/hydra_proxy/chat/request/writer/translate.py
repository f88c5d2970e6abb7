"""The Chat request writer's entry: the canonical request (an Anthropic Messages request)
-> an OpenAI Chat Completions request.

Pure translation, no I/O. `chat_request_from_messages` either returns the Chat request
body or raises `ProxyError` (400 invalid_request_error) whose message starts with the
offending field path, e.g. ``messages.3.content.1.source: ...`` (the same path is in
`param`). The input is never modified; the output shares sub-objects with it (tool
schemas, response format schema), so copy before mutating those.

Each job has its module, whose docstring lists the decisions it makes where the two
protocols leave room (all covered by tests): `messages` (turns, tool results, sequence),
`content` (blocks -> parts), `tools` and `thinking` (reasoning replay); what every
writer reads the same way (system text, content blocks, limits, stop sequences, user id,
effort) is `canonical`'s. Here: ``max_tokens`` -> ``target.max_tokens_field``;
``stop_sequences`` -> ``stop`` (at most `MAX_STOP_SEQUENCES`); ``temperature``/``top_p``
are passed unless the target has ``sampling=False`` (o-series/GPT-5 reasoning models
reject non-default values); ``top_k`` is dropped; ``reasoning_effort`` for a
``reasoning`` target, or the route's effort for any (`canonical.effort`); ``output_config.format`` (or the older top-level
``output_format``) json_schema -> ``response_format`` json_schema named ``output``
without ``strict`` (OpenAI strict mode requires a schema subset Anthropic does not);
``metadata.user_id`` -> ``user``; ``target.prompt_cache_key`` -> ``prompt_cache_key``;
``cache_control`` is carried for a ``cache_control`` target (`messages`), else dropped, as
are ``context_management``,
``service_tier``, ``container`` and unknown fields are dropped; streaming asks for the
usage chunk when ``target.include_usage``.
"""

from __future__ import annotations

from typing import Any

from ....canonical.effort import openai_effort
from ....canonical.params import (
    max_tokens,
    openai_user,
    output_schema,
    sampling,
    stop_sequences,
    user_id,
)
from ....canonical.thinking import thinking_effort
from ....canonical.tools import refuse_mcp_servers
from ....canonical.web_search import openrouter_plugin, web_search_tool, without_forced_search
from ....errors import invalid_request
from ..limits import MAX_STOP_SEQUENCES
from .messages import MessagesWriter
from .target import ChatTarget
from .tools import UPSTREAM, write_tool_choice, write_tools

__all__ = ["chat_request_from_messages"]


def chat_request_from_messages(
    body: dict[str, Any], target: ChatTarget, *, stream: bool
) -> dict[str, Any]:
    """Translate an Anthropic Messages request body into a Chat Completions request body."""
    if not isinstance(body, dict):
        raise invalid_request("request body must be a JSON object")
    limit = max_tokens(body, target.max_tokens_limit)
    writer = MessagesWriter(target)
    writer.write(body)
    # Only an upstream with a web plugin (OpenRouter) gets here with web search.
    search = web_search_tool(body.get("tools"))
    if search is not None:
        body = without_forced_search(body, search)
    tools = write_tools(body.get("tools"))
    refuse_mcp_servers(body.get("mcp_servers"), UPSTREAM)

    out: dict[str, Any] = {"model": target.model, "messages": writer.finish()}
    out[target.max_tokens_field] = limit

    stop = stop_sequences(body.get("stop_sequences"), MAX_STOP_SEQUENCES)
    if stop:
        out["stop"] = stop
    numbers = sampling(body)
    if target.sampling:
        out.update(numbers)

    choice, parallel = write_tool_choice(body.get("tool_choice"), tools)
    if tools:
        out["tools"] = tools
        if choice is not None:
            out["tool_choice"] = choice
        if parallel is not None:
            out["parallel_tool_calls"] = parallel

    if search is not None:
        out["plugins"] = [openrouter_plugin(search)]

    if target.effort is not None:
        out["reasoning_effort"] = openai_effort(target.effort)
    elif target.reasoning:
        effort = thinking_effort(body)
        if effort is not None:
            out["reasoning_effort"] = effort

    schema = output_schema(body)
    if schema is not None:
        out["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "output", "schema": schema},
        }

    user = user_id(body)
    if user is not None:
        out["user"] = openai_user(user)

    if target.prompt_cache_key is not None:
        out["prompt_cache_key"] = target.prompt_cache_key
    if stream:
        out["stream"] = True
        if target.include_usage:
            out["stream_options"] = {"include_usage": True}
    return out
