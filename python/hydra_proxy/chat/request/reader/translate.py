"""The Chat request reader's entry: an OpenAI Chat Completions request -> the canonical
request (an Anthropic Messages request; SPEC section 4).

Pure translation, no I/O. `messages_request_from_chat` returns a `Translation` (the
Anthropic body plus what the server traces) or raises `ProxyError` (400
``invalid_request_error``) whose `param` is the offending field in OpenAI's notation, e.g.
``messages[2].content[0].image_url.url``; the message starts with the same path. The input
is never modified; the output shares sub-objects with it (tool schemas, the response
format schema), so copy before mutating those.

Each job has its module, whose docstring lists the decisions it makes where the
specification leaves room (each covered by a test): `validation` (what is refused or
dropped), `messages` (system text, turns, tool results, sequence), `content` (text, image
and file parts), `replay` (thinking restored from continuation suffixes), `tools`,
`params` (limits, stop, sampling ranges, user, response format, stream options) and
`thinking` (effort and budgets). This module applies the rules that tie them together:

- ``max_tokens`` defaults to `MessagesTarget.default_max_tokens` and is clamped to
  `MessagesTarget.max_tokens_limit` (after `thinking.fit_budget` has made room for the
  budget).
- Sampling: ``temperature`` values above 1 -> 1. Claude 4.5+ models reject
  ``temperature`` together with ``top_p``: when both are given, a temperature of exactly 1
  (Anthropic's default) is dropped, otherwise ``top_p`` is dropped. While thinking is on,
  ``temperature`` and ``top_k`` are dropped and ``top_p`` is raised to at least 0.95
  (Anthropic's rules).
- A forced tool choice (``required`` or a named function) turns thinking off (Anthropic
  rejects both together). When thinking is on and the current tool loop (the assistant
  turns after the last user turn without tool results) does not start with a restored
  thinking block, thinking is turned off for this request (``{"type": "disabled"}``,
  `Translation.thinking_disabled`) rather than sending a request Anthropic rejects; a
  user turn that holds tool results and text counts as part of the loop (the safe
  reading). Thinking the client asked for and the proxy turned off is sent as
  ``{"type": "disabled"}``; with no request for it, no ``thinking`` is sent. Whenever
  thinking is off, thinking blocks are removed from a final assistant turn; earlier turns
  keep theirs (Anthropic accepts and ignores them).
- ``body["stream"]`` is set from the ``stream`` argument.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ....errors import invalid_request
from .messages import TurnBuilder, finish_turns, strip_final_whitespace
from .params import (
    JSON_OBJECT_INSTRUCTION,
    read_include_usage,
    read_max_tokens,
    read_number,
    read_response_format,
    read_stop,
    read_top_k,
    read_user_id,
)
from .thinking import (
    THINKING_TYPES,
    fit_budget,
    loop_starts_with_thinking,
    read_thinking,
    strip_final_thinking,
)
from .tools import read_tool_choice, read_tools
from .validation import refuse_unsupported

__all__ = ["MessagesTarget", "Translation", "messages_request_from_chat"]

log = logging.getLogger(__name__)
trace = logging.getLogger("hydra_proxy.continuation")


@dataclass(frozen=True)
class MessagesTarget:
    """The Anthropic upstream of a route."""

    model: str  # upstream Anthropic model name
    default_max_tokens: int = 8192  # Anthropic requires max_tokens; used when the client sends none
    max_tokens_limit: int | None = None
    continuation_key: bytes | None = None  # None: suffixes are neither trusted nor expected
    thinking_budget: dict[str, int] | None = None  # reasoning_effort -> budget_tokens override


@dataclass
class Translation:
    body: dict[str, Any]  # the Anthropic Messages request
    restored_blocks: int = 0  # thinking/redacted blocks restored from suffixes and sent
    skipped_reasoning: int = 0  # assistant turns whose reasoning had no valid suffix
    thinking_disabled: bool = False  # thinking off: the tool loop's thinking was not restorable
    include_usage: bool = False  # streaming: the client asked for the usage chunk


def messages_request_from_chat(
    body: dict[str, Any], target: MessagesTarget, *, stream: bool
) -> Translation:
    """Translate an OpenAI Chat Completions request body into an Anthropic Messages request."""
    if not isinstance(body, dict):
        raise invalid_request("request body must be a JSON object")
    refuse_unsupported(body)
    include_usage = read_include_usage(body, stream)
    requested_max = read_max_tokens(body)
    stop = read_stop(body.get("stop"))
    temperature = read_number(body, "temperature", 0.0, 2.0)
    top_p = read_number(body, "top_p", 0.0, 1.0)
    top_k = read_top_k(body.get("top_k"))
    tools = read_tools(body.get("tools"))
    tools, tool_choice = read_tool_choice(body.get("tool_choice"), tools, body)
    thinking, effort = read_thinking(body, target)
    output_format, json_object = read_response_format(body.get("response_format"))
    user_id = read_user_id(body)

    builder = TurnBuilder(target.continuation_key)
    builder.add_messages(body.get("messages"))
    if json_object:
        builder.system.append(JSON_OBJECT_INSTRUCTION)
    turns = builder.finish()

    thinking_disabled = False
    forced = tool_choice is not None and tool_choice["type"] in ("any", "tool")
    thinking_asked = thinking is not None and thinking["type"] != "disabled"
    if thinking_asked and forced:
        log.debug("thinking turned off: tool_choice forces tool use")
        thinking = {"type": "disabled"}
    elif thinking_asked and not loop_starts_with_thinking(turns):
        trace.debug("thinking turned off: the current tool loop has no restorable thinking")
        thinking = {"type": "disabled"}
        thinking_disabled = True

    max_tokens = requested_max if requested_max is not None else target.default_max_tokens
    if thinking is not None and thinking["type"] == "enabled":
        max_tokens, budget = fit_budget(thinking["budget_tokens"], max_tokens, target)
        if budget is None:
            log.debug("thinking turned off: max_tokens_limit leaves no room for a budget")
            thinking = {"type": "disabled"}
        else:
            thinking = {**thinking, "budget_tokens": budget}
    if target.max_tokens_limit is not None:
        max_tokens = min(max_tokens, target.max_tokens_limit)

    thinking_on = thinking is not None and thinking["type"] != "disabled"
    if not thinking_on:
        strip_final_thinking(turns)
    strip_final_whitespace(turns)
    messages = finish_turns(turns)
    if not messages:
        raise invalid_request(
            "messages: no user or assistant message with content is left to send", "messages"
        )

    out: dict[str, Any] = {"model": target.model, "max_tokens": max_tokens}
    system = "\n".join(builder.system)
    if system:
        out["system"] = system
    out["messages"] = messages
    if tools:
        out["tools"] = tools
        if tool_choice is not None:
            out["tool_choice"] = tool_choice
    if stop:
        out["stop_sequences"] = stop
    if thinking_on:
        if top_p is not None:
            out["top_p"] = max(top_p, 0.95)
    else:
        if temperature is not None and top_p is not None:
            if temperature == 1:
                temperature = None
            else:
                top_p = None
        if temperature is not None:
            out["temperature"] = min(temperature, 1.0)
        if top_p is not None:
            out["top_p"] = top_p
        if top_k is not None:
            out["top_k"] = top_k
    if thinking is not None:
        out["thinking"] = thinking
    output_config: dict[str, Any] = {}
    if effort is not None and thinking is not None and thinking["type"] == "adaptive":
        output_config["effort"] = effort
    if output_format is not None:
        output_config["format"] = output_format
    if output_config:
        out["output_config"] = output_config
    if user_id is not None:
        out["metadata"] = {"user_id": user_id}
    out["stream"] = stream

    restored = sum(
        1
        for message in messages
        if message["role"] == "assistant"
        for block in message["content"]
        if block["type"] in THINKING_TYPES
    )
    return Translation(
        body=out,
        restored_blocks=restored,
        skipped_reasoning=builder.skipped,
        thinking_disabled=thinking_disabled,
        include_usage=include_usage,
    )
