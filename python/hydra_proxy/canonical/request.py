"""The canonical request a reader writes, from what the client asked for.

A reader reads its protocol's fields into a `Requested` (each field checked, in canonical
terms) and its conversation into a `turns.TurnBuilder`; `canonical_request` then applies
the rules that tie them together, the same for every client protocol:

- ``max_tokens`` defaults to `MessagesTarget.default_max_tokens` and is clamped to
  `MessagesTarget.max_tokens_limit` (after `thinking.fit_budget` has made room for the
  budget).
- Sampling: ``temperature`` values above 1 -> 1. Claude 4.5+ models reject
  ``temperature`` together with ``top_p``: when both are given, a temperature of exactly 1
  (Anthropic's default) is dropped, otherwise ``top_p`` is dropped. While thinking is on,
  ``temperature`` and ``top_k`` are dropped and ``top_p`` is raised to at least 0.95
  (Anthropic's rules).
- A forced tool choice (any, or a named tool) turns thinking off (Anthropic rejects both
  together). When thinking is on and the current tool loop (the assistant turns after the
  last user turn without tool results) does not start with a restored thinking block,
  thinking is turned off for this request (``{"type": "disabled"}``,
  `CanonicalRequest.thinking_disabled`) rather than sending a request Anthropic rejects; a
  user turn that holds tool results and text counts as part of the loop (the safe
  reading). Thinking the client asked for and the proxy turned off is sent as
  ``{"type": "disabled"}``; with no request for it, no ``thinking`` is sent. Whenever
  thinking is off, thinking blocks are removed from a final assistant turn; earlier turns
  keep theirs (Anthropic accepts and ignores them).
- Prompt caching asked for (`Requested.cache`) -> Anthropic's top-level ``cache_control:
  {"type": "ephemeral"}`` (automatic caching: the breakpoint goes on the last cacheable
  block), since Anthropic, unlike OpenAI, caches nothing unasked. A breakpoint the reader
  put on the system text (`TurnBuilder.system_breakpoint`) makes ``system`` one text
  block that carries it. Anthropic takes at most `MAX_BREAKPOINTS` (the top-level one
  counts): past that the earliest are dropped, since the last ones cover the longest
  prefix.
- A JSON object asked for (Anthropic has no "any JSON object" mode) ->
  `JSON_OBJECT_INSTRUCTION` after the system texts.
- No user or assistant message with content left -> a 400 naming the client's
  conversation field.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from .content import THINKING_TYPES
from .fields import bad
from .params import JSON_OBJECT_INSTRUCTION
from .target import MessagesTarget
from .thinking import fit_budget, loop_starts_with_thinking, strip_final_thinking
from .turns import ConversationTurn, TurnBuilder, finish_turns, strip_final_whitespace

__all__ = ["MAX_BREAKPOINTS", "CanonicalRequest", "Requested", "canonical_request"]

MAX_BREAKPOINTS = 4

log = logging.getLogger(__name__)
trace = logging.getLogger("hydra_proxy.continuation")


@dataclass(slots=True)
class Requested:
    """What a client request asks for, in canonical terms (a reader fills it in)."""

    stream: bool
    max_tokens: int | None = None
    thinking: dict[str, Any] | None = None
    effort: str | None = None  # the effort of adaptive thinking
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: dict[str, Any] | None = None
    stop: list[str] = field(default_factory=list)
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    output_format: dict[str, Any] | None = None
    json_object: bool = False  # the reply must be a JSON object (no schema given)
    user_id: str | None = None
    cache: bool = False  # the client wants its prompt prefix cached


@dataclass(slots=True)
class CanonicalRequest:
    body: dict[str, Any]  # the Anthropic Messages request
    restored_blocks: int  # thinking/redacted blocks restored from the client and sent
    thinking_disabled: bool  # thinking off: the tool loop's thinking was not restorable


def canonical_request(
    asked: Requested, conversation: TurnBuilder, target: MessagesTarget
) -> CanonicalRequest:
    """The Anthropic Messages request for `asked` and `conversation`, written for `target`."""
    turns = conversation.finish()
    thinking, thinking_disabled = _thinking(asked, turns)
    max_tokens, thinking = _max_tokens(asked, thinking, target)
    thinking_on = thinking is not None and thinking["type"] != "disabled"
    if not thinking_on:
        strip_final_thinking(turns)
    strip_final_whitespace(turns)
    messages = finish_turns(turns)
    if not messages:
        raise bad(
            conversation.conversation_field,
            "no user or assistant message with content is left to send",
        )

    out: dict[str, Any] = {"model": target.model, "max_tokens": max_tokens}
    system = _system(asked, conversation)
    if system and conversation.system_breakpoint is not None:
        out["system"] = [
            {"type": "text", "text": system, "cache_control": conversation.system_breakpoint}
        ]
    elif system:
        out["system"] = system
    out["messages"] = messages
    if asked.tools:
        out["tools"] = asked.tools
        if asked.tool_choice is not None:
            out["tool_choice"] = asked.tool_choice
    if asked.stop:
        out["stop_sequences"] = asked.stop
    _sampling(out, asked, thinking_on)
    if thinking is not None:
        out["thinking"] = thinking
    output_config = _output_config(asked, thinking)
    if output_config:
        out["output_config"] = output_config
    if asked.user_id is not None:
        out["metadata"] = {"user_id": asked.user_id}
    if asked.cache:
        out["cache_control"] = {"type": "ephemeral"}
    marked = conversation.breakpoints + (conversation.system_breakpoint is not None) + asked.cache
    if marked > MAX_BREAKPOINTS:
        _keep_last_breakpoints(out)
    out["stream"] = asked.stream

    restored = sum(
        block["type"] in THINKING_TYPES
        for message in messages
        if message["role"] == "assistant"
        for block in message["content"]
    )
    return CanonicalRequest(out, restored, thinking_disabled)


def _keep_last_breakpoints(out: dict[str, Any]) -> None:
    """At most `MAX_BREAKPOINTS` breakpoints (the top-level one counts): the earliest go."""
    marked: list[tuple[list[Any], int]] = []  # (the list holding a marked block, its index)
    for field_name in ("tools", "system"):
        items = out.get(field_name)
        if isinstance(items, list):
            marked.extend((items, i) for i, b in enumerate(items) if "cache_control" in b)
    for message in out["messages"]:
        content = message["content"]
        marked.extend((content, i) for i, b in enumerate(content) if "cache_control" in b)
    extra = len(marked) + ("cache_control" in out) - MAX_BREAKPOINTS
    for items, i in marked[: max(extra, 0)]:
        items[i] = {k: v for k, v in items[i].items() if k != "cache_control"}


def _system(asked: Requested, conversation: TurnBuilder) -> str:
    texts = conversation.system
    if asked.json_object:
        texts = [*texts, JSON_OBJECT_INSTRUCTION]
    return conversation.system_separator.join(texts)


def _output_config(asked: Requested, thinking: dict[str, Any] | None) -> dict[str, Any]:
    output_config: dict[str, Any] = {}
    if asked.effort is not None and thinking is not None and thinking["type"] == "adaptive":
        output_config["effort"] = asked.effort
    if asked.output_format is not None:
        output_config["format"] = asked.output_format
    return output_config


def _thinking(
    asked: Requested, turns: list[ConversationTurn]
) -> tuple[dict[str, Any] | None, bool]:
    """The thinking to send, and whether it was turned off for an unrestorable tool loop."""
    thinking = asked.thinking
    if thinking is None or thinking["type"] == "disabled":
        return thinking, False
    choice = asked.tool_choice
    if choice is not None and choice["type"] in ("any", "tool"):
        log.debug("thinking turned off: tool_choice forces tool use")
        return {"type": "disabled"}, False
    if not loop_starts_with_thinking(turns):
        trace.debug("thinking turned off: the current tool loop has no restorable thinking")
        return {"type": "disabled"}, True
    return thinking, False


def _max_tokens(
    asked: Requested, thinking: dict[str, Any] | None, target: MessagesTarget
) -> tuple[int, dict[str, Any] | None]:
    """``max_tokens``, and the thinking with its budget fitted under it."""
    max_tokens = asked.max_tokens if asked.max_tokens is not None else target.default_max_tokens
    if thinking is not None and thinking["type"] == "enabled":
        max_tokens, budget = fit_budget(thinking["budget_tokens"], max_tokens, target)
        if budget is None:
            log.debug("thinking turned off: max_tokens_limit leaves no room for a budget")
            thinking = {"type": "disabled"}
        else:
            thinking = {**thinking, "budget_tokens": budget}
    if target.max_tokens_limit is not None:
        max_tokens = min(max_tokens, target.max_tokens_limit)
    return max_tokens, thinking


def _sampling(out: dict[str, Any], asked: Requested, thinking_on: bool) -> None:
    temperature, top_p = asked.temperature, asked.top_p
    if thinking_on:
        if top_p is not None:
            out["top_p"] = max(top_p, 0.95)
        return
    if temperature is not None and top_p is not None:
        if temperature == 1:
            temperature = None
        else:
            top_p = None
    if temperature is not None:
        out["temperature"] = min(temperature, 1.0)
    if top_p is not None:
        out["top_p"] = top_p
    if asked.top_k is not None:
        out["top_k"] = asked.top_k
