"""The Chat request writer's entry: the canonical request (an Anthropic Messages request)
-> an OpenAI Chat Completions request.

Pure translation, no I/O. `chat_request_from_messages` either returns the Chat request
body or raises `ProxyError` (400 invalid_request_error) whose message starts with the
offending field path, e.g. ``messages.3.content.1.source: ...`` (the same path is in
`param`). The input is never modified; the output shares sub-objects with it (tool
schemas, response format schema), so copy before mutating those.

Each job has its module, whose docstring lists the decisions it makes where the two
protocols leave room (all covered by tests): `messages` (the target, turns, tool results,
sequence, blocks -> parts), `thinking` (reasoning replay), and the tools below; what every
writer reads the same way (system text, content blocks, limits, stop sequences, user id,
effort) is `canonical`'s. Here: ``max_tokens`` -> ``target.max_tokens_field``;
``stop_sequences`` -> ``stop`` (at most `MAX_STOP_SEQUENCES`); ``temperature``/``top_p``
are passed unless the target has ``sampling=False`` (o-series/GPT-5 reasoning models
reject non-default values); ``top_k`` is dropped; ``reasoning_effort`` for a
the upstream's effort form, or the route's effort for any (`canonical.effort`); ``output_config.format`` (or the older top-level
``output_format``) json_schema -> ``response_format`` json_schema named ``output``
without ``strict`` (OpenAI strict mode requires a schema subset Anthropic does not);
``metadata.user_id`` -> ``user``; ``target.prompt_cache_key`` -> ``prompt_cache_key``;
``cache_control`` is carried for a ``cache_control`` target (`messages`), else dropped, as
are ``context_management``,
``service_tier``, ``container`` and unknown fields are dropped; streaming asks for the
usage chunk when ``target.include_usage``.

Tools and tool choice -> Chat ``tools``, ``tool_choice``, ``parallel_tool_calls``.

Custom tools -> ``{"type": "function", "function": {name, description, parameters}}``
with the JSON schema as given (``$schema``, ``additionalProperties`` kept);
``cache_control``, ``strict``, ``input_examples`` dropped. ``defer_loading`` tools are
sent like any other tool: a Chat upstream has no tool search, and they stay callable.
Server tools and ``mcp_servers`` are refused (`canonical.tools`). ``tool_choice``
auto/any/tool/none -> "auto"/"required"/named function/"none";
``disable_parallel_tool_use`` -> ``parallel_tool_calls: false``; both only when tools are
sent (OpenAI rejects ``tool_choice`` without tools; applied in `translate`).
"""

from __future__ import annotations

from typing import Any

from ....canonical.effort import chat_effort, requested_level
from ....canonical.params import (
    max_tokens,
    openai_user,
    output_schema,
    sampling,
    stop_sequences,
    user_id,
)
from ....canonical.tools import custom_tools, read_tool_choice, refuse_mcp_servers, web_search_tool
from ....canonical.web_search import openrouter_plugin, without_forced_search
from ....errors import invalid_request
from ..limits import MAX_STOP_SEQUENCES
from .messages import ChatTarget, MessagesWriter

__all__ = ["UPSTREAM", "chat_request_from_messages", "write_tool_choice", "write_tools"]


def chat_request_from_messages(
    body: dict[str, Any], target: ChatTarget, *, stream: bool, memo: dict[Any, Any] | None = None
) -> dict[str, Any]:
    """Translate an Anthropic Messages request body into a Chat Completions request body.

    `memo`: what the session's previous request left (server/previous_turn.Turn.memo); the
    messages writer resumes from its record for this target and leaves its own, and each
    message it wrote before is given as its JSON text then (an `orjson.Fragment`, which
    orjson.dumps writes as it is)."""
    if not isinstance(body, dict):
        raise invalid_request("request body must be a JSON object")
    limit = max_tokens(body, target.max_tokens_limit)
    previous = memo.get((_MEMO, target)) if memo is not None else None
    writer = MessagesWriter(target, previous, keep=memo is not None)
    writer.write(body)
    if memo is not None:
        memo[(_MEMO, target)] = writer.record
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

    out.update(_tool_fields(body.get("tool_choice"), tools))

    if search is not None:
        out["plugins"] = [openrouter_plugin(search)]

    out.update(_effort(body, target))

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


def _tool_fields(tool_choice: Any, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The tools and how the model may call them (the choice is checked without tools too)."""
    choice, parallel = write_tool_choice(tool_choice, tools)
    if not tools:
        return {}
    fields: dict[str, Any] = {"tools": tools}
    if choice is not None:
        fields["tool_choice"] = choice
    if parallel is not None:
        fields["parallel_tool_calls"] = parallel
    return fields


def _effort(body: dict[str, Any], target: ChatTarget) -> dict[str, Any]:
    """The level in the upstream's own form (canonical.effort): the route's, else the
    request's; a route's level goes as reasoning_effort to an upstream of no other form."""
    form = target.effort_form or ("reasoning_effort" if target.reasoning else "none")
    if target.effort is not None:
        if form == "none":
            form = "reasoning_effort"
        return chat_effort(target.effort, form, target.effort_levels)
    if form == "none":
        return {}
    level = requested_level(body)
    # Thinking off says no level to a reasoning_effort model: its own default (not every
    # one takes "none"); a thinking switch is turned off.
    if level is None or (level == "none" and form == "reasoning_effort"):
        return {}
    return chat_effort(level, form, target.effort_levels)


UPSTREAM = "the target model"  # how a refusal names a Chat upstream
_MEMO = "chat messages writer"
_CHOICES = {"auto": "auto", "any": "required", "none": "none"}


def write_tools(value: Any) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    for name, description, schema, _ in custom_tools(value, UPSTREAM):
        function: dict[str, Any] = {"name": name}
        if isinstance(description, str):
            function["description"] = description
        function["parameters"] = schema
        tools.append({"type": "function", "function": function})
    return tools


def write_tool_choice(value: Any, tools: list[dict[str, Any]]) -> tuple[Any, bool | None]:
    """The Chat ``tool_choice`` (None: leave it out) and ``parallel_tool_calls``."""
    if value is None:
        return None, None
    ctype, name, parallel_off = read_tool_choice(
        value, {tool["function"]["name"] for tool in tools}
    )
    parallel = False if parallel_off else None
    if ctype == "tool":
        return {"type": "function", "function": {"name": name}}, parallel
    return _CHOICES.get(ctype) if ctype is not None else None, parallel
