"""The Responses request reader's entry: an OpenAI Responses request -> the canonical
request (an Anthropic Messages request).

Pure translation, no I/O. `messages_request_from_responses` returns a `Translation` (the
Anthropic body, the `ResponsesContext` the reply needs, and what the server logs) or
raises `ProxyError` (400 ``invalid_request_error``) whose `param` is the offending field in
OpenAI's notation, e.g. ``input[3].call_id``; the message starts with the same path. The
input is never modified; the output shares sub-objects with it (tool schemas, the text
format schema), so copy before mutating those.

Each job has its module, whose docstring lists its decisions (each covered by a test):
`validation` (state the proxy does not keep, ``include``), `input` (system text, input
items, calls and their outputs), `content` (content parts), `replay` (reasoning items),
`tools`, `params` (limits, reasoning, text format, metadata, prompt caching). The rules
that tie the fields together (max_tokens and the thinking budget, sampling while
thinking, thinking turned off for a forced tool choice or an unrestorable tool loop) are
`canonical.request`'s, the same as for a Chat client. Here: the reply's context echoes
the request as the client sent it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ....canonical.fields import bad, type_name
from ....canonical.params import read_number, read_output_format, read_user_id
from ....canonical.request import Requested, canonical_request
from ....canonical.target import MessagesTarget
from ....canonical.thinking import requested_thinking
from ....errors import invalid_request
from ...compaction import SUMMARY_REQUEST
from ...context import ENCRYPTED_REASONING, ResponsesContext
from .input import InputReader
from .params import (
    SUMMARIES,
    echoed_string,
    read_max_output_tokens,
    read_metadata,
    read_prompt_cache_key,
    read_reasoning,
    read_text,
)
from .tools import read_tool_choice, read_tools
from .validation import read_bool, read_include, refuse_logprobs, refuse_state

__all__ = ["Translation", "messages_request_from_responses"]


@dataclass
class Translation:
    body: dict[str, Any]  # the Anthropic Messages request
    context: ResponsesContext  # what the reply echoes and needs
    stream: bool = False
    dropped_tools: list[str] = field(default_factory=list)  # server tool types left out
    dropped_items: list[str] = field(default_factory=list)  # hosted-tool input item types
    restored_blocks: int = 0  # thinking/redacted blocks restored from carriers and sent
    skipped_reasoning: int = 0  # reasoning items that were not a valid carrier
    thinking_disabled: bool = False  # thinking off: the tool loop's thinking was not restorable
    compaction: bool = False  # a compaction_trigger: the reply is the summary, as one item
    foreign_compaction: str | None = None  # where a compaction item not the proxy's stands


def messages_request_from_responses(body: Any, target: MessagesTarget) -> Translation:
    """Translate a Responses request body into an Anthropic Messages request.

    `target.continuation_key` is the proxy's signing key: reasoning carriers are trusted
    only when they verify with it (None: none is trusted).
    """
    if not isinstance(body, dict):
        raise invalid_request("request body must be a JSON object")
    refuse_state(body)
    asked = Requested(stream=read_bool(body, "stream") or False)
    include = read_include(body.get("include"))
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise bad("instructions", f"must be a string, got {type_name(instructions)}")
    asked.max_tokens = read_max_output_tokens(body.get("max_output_tokens"))
    asked.temperature = read_number(body, "temperature", 0.0, 2.0)
    asked.top_p = read_number(body, "top_p", 0.0, 1.0)
    refuse_logprobs(body)
    toolset = read_tools(body.get("tools"))
    asked.tools, asked.tool_choice = read_tool_choice(
        body.get("tool_choice"), toolset, body.get("parallel_tool_calls")
    )
    reasoning = read_reasoning(body.get("reasoning"))
    effort = reasoning.get("effort")
    asked.thinking, asked.effort = requested_thinking(effort, body.get("thinking"), target)
    text = read_text(body.get("text"))
    asked.output_format, asked.json_object = read_output_format(
        (text or {}).get("format"), "text.format", None
    )
    metadata = read_metadata(body.get("metadata"))
    asked.user_id = read_user_id(body)
    prompt_cache_key = read_prompt_cache_key(body)
    asked.cache = bool(prompt_cache_key)

    reader = InputReader(target.continuation_key, toolset.names)
    if instructions and instructions.strip():
        reader.system.append(instructions)
    reader.add_input(body.get("input"))
    if reader.compaction_asked:
        # The model writes the summary as text: the tools stay declared (a history with
        # tool calls needs them) but none may be called.
        reader.user_turn().blocks.append({"type": "text", "text": SUMMARY_REQUEST})
        if asked.tools:
            asked.tool_choice = {"type": "none"}
    request = canonical_request(asked, reader, target)
    parallel = body.get("parallel_tool_calls")
    context = ResponsesContext(
        model=body["model"] if isinstance(body.get("model"), str) else target.model,
        tool_names=toolset.names,
        include_encrypted=ENCRYPTED_REASONING in include,
        summary=reasoning.get("summary") in SUMMARIES,
        instructions=instructions,
        tools=body.get("tools") or [],
        tool_choice=body.get("tool_choice", "auto"),
        parallel_tool_calls=parallel if isinstance(parallel, bool) else True,
        max_output_tokens=asked.max_tokens,
        temperature=body.get("temperature"),
        top_p=body.get("top_p"),
        reasoning={"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
        text=text or {"format": {"type": "text"}},
        metadata=metadata,
        prompt_cache_key=prompt_cache_key,
        safety_identifier=echoed_string(body, "safety_identifier"),
        user=echoed_string(body, "user"),
    )
    return Translation(
        body=request.body,
        context=context,
        stream=asked.stream,
        dropped_tools=toolset.dropped,
        dropped_items=reader.dropped,
        restored_blocks=request.restored_blocks,
        skipped_reasoning=reader.skipped,
        thinking_disabled=request.thinking_disabled,
        compaction=reader.compaction_asked,
        foreign_compaction=reader.foreign_compaction,
    )
