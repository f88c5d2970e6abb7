"""Anthropic Messages request (canonical) -> OpenAI Responses request (``responses`` provider).

For models that only serve the Responses API (the gpt-5.x-codex family). Pure
translation, no I/O. `responses_request_from_messages` returns the Responses body or
raises `ProxyError` (400 ``invalid_request_error``) whose message starts with the
offending field path in Anthropic's notation (``messages.3.content.1.source``), as the
Chat writer does; content blocks, tools, tool choice, effort and output format are read
by the Chat writer's own functions, so both writers accept and refuse the same things.

Decisions (each covered by a test):

- ``store: false`` always (the proxy keeps no state, and neither should the upstream);
  ``stream`` as asked. For a ``reasoning`` target ``include:
  ["reasoning.encrypted_content"]`` and ``reasoning: {effort, summary: "auto"}`` (effort
  as the Chat writer maps it, omitted when there is none), so the reasoning comes back
  replayable and readable.
- ``system`` (string or text blocks; Claude Code's billing header dropped) and every
  ``role: "system"`` message -> ``instructions``, pieces joined with a blank line, in
  request order (as the Chat writer makes one leading system message).
- User turns: ``tool_result`` blocks answering the preceding assistant turn's calls ->
  ``function_call_output`` items first (``output`` the result's text, ``is_error`` prefixed
  ``"Error: "`` like the Chat writer; with images/PDFs an array of ``input_text`` /
  ``input_image`` / ``input_file`` parts), a call left unanswered gets
  ``MISSING_TOOL_RESULT`` (OpenAI rejects a call without output), a result answering no
  call becomes user text; then one user ``message`` with ``input_text`` / ``input_image``
  (``detail: "auto"``) / ``input_file`` parts.
- Assistant turns, in block order: ``thinking`` whose signature is this proxy's upstream
  carrier (`reasoning.verify_upstream_item`, made by the Responses response reader) -> the
  original ``reasoning`` item (``id``, ``encrypted_content``, the text as one
  ``summary_text``); every other thinking block and all ``redacted_thinking`` are
  dropped (another model's reasoning cannot be replayed to OpenAI); runs of text ->
  one assistant ``message`` item (texts joined with a blank line); ``tool_use`` ->
  ``function_call`` (``call_id`` = the id, ``arguments`` compact JSON).
- A conversation that starts with an assistant turn gets a user ``LEADING_USER_PLACEHOLDER``
  first.
- Tools -> ``{"type": "function", name, description, parameters, strict: false}``
  (Anthropic server tools are a 400, as in the Chat writer); ``tool_choice`` auto/any/
  tool/none -> ``"auto"``/``"required"``/``{"type": "function", name}``/``"none"``,
  ``disable_parallel_tool_use`` -> ``parallel_tool_calls: false``, only with tools.
- ``max_tokens`` -> ``max_output_tokens`` (clamped to the target's limit);
  ``temperature``/``top_p`` passed unless ``sampling=False``; ``stop_sequences`` are
  dropped (the Responses API has no stop parameter; debug log); ``output_config.format``
  json_schema -> ``text.format`` ``{type: json_schema, name: "output", schema, strict:
  false}``; ``metadata.user_id`` -> ``safety_identifier`` as the Chat writer shapes
  ``user``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..chat.request.common import LEADING_USER_PLACEHOLDER, bad
from ..chat.request.writer.content import (
    block_type,
    content_blocks,
    document_parts,
    fallback_text,
    image_part,
    text_of,
)
from ..chat.request.writer.messages import (
    BILLING_HEADER_PREFIX,
    MISSING_TOOL_RESULT,
    tool_result_content,
)
from ..chat.request.writer.params import user_field, write_response_format
from ..chat.request.writer.thinking import reasoning_effort
from ..chat.request.writer.tools import write_tool_choice, write_tools
from ..chat.tool_arguments import tool_arguments
from ..errors import invalid_request
from .context import ENCRYPTED_REASONING
from .reasoning import verify_upstream_item

__all__ = [
    "SYSTEM_SEPARATOR",
    "TEXT_SEPARATOR",
    "ResponsesTarget",
    "responses_request_from_messages",
]

log = logging.getLogger(__name__)

SYSTEM_SEPARATOR = "\n\n"
TEXT_SEPARATOR = "\n\n"

Item = dict[str, Any]
Part = dict[str, Any]


@dataclass(frozen=True)
class ResponsesTarget:
    """A model behind an OpenAI Responses API (from the route/provider configuration)."""

    model: str
    max_tokens_limit: int | None = None
    # The model reasons (gpt-5.x, o-series): send reasoning.effort, ask for encrypted reasoning.
    reasoning: bool = True
    # The model accepts temperature/top_p (reasoning models reject them).
    sampling: bool = False
    # Key of the upstream reasoning carrier (hydra_proxy.responses.reasoning).
    signing_key: bytes = b""


def responses_request_from_messages(
    body: dict[str, Any], target: ResponsesTarget, *, stream: bool
) -> dict[str, Any]:
    """Translate an Anthropic Messages request body into a Responses request body."""
    if not isinstance(body, dict):
        raise invalid_request("request body must be a JSON object")
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise bad("max_tokens", "must be an integer of at least 1")
    if target.max_tokens_limit is not None and target.max_tokens_limit >= 1:
        max_tokens = min(max_tokens, target.max_tokens_limit)
    writer = _Writer(target)
    writer.system(body.get("system"))
    writer.messages(body.get("messages"))
    chat_tools = write_tools(body.get("tools"))
    choice, parallel = write_tool_choice(body.get("tool_choice"), chat_tools)

    out: dict[str, Any] = {"model": target.model}
    if writer.system_texts:
        out["instructions"] = SYSTEM_SEPARATOR.join(writer.system_texts)
    out["input"] = writer.finish()
    out["max_output_tokens"] = max_tokens
    if chat_tools:
        out["tools"] = [_function_tool(tool["function"]) for tool in chat_tools]
        if choice is not None:
            out["tool_choice"] = (
                {"type": "function", "name": choice["function"]["name"]}
                if isinstance(choice, dict)
                else choice
            )
        if parallel is not None:
            out["parallel_tool_calls"] = parallel
    if body.get("stop_sequences"):
        log.debug("stop_sequences dropped: the Responses API has no stop parameter")
    for name in ("temperature", "top_p"):
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad(name, "must be a number")
        if target.sampling:
            out[name] = value
    if target.reasoning:
        effort = reasoning_effort(body)
        reasoning: dict[str, Any] = {"summary": "auto"}
        if effort is not None:
            reasoning["effort"] = effort
        out["reasoning"] = reasoning
        out["include"] = [ENCRYPTED_REASONING]
    response_format = write_response_format(body)
    if response_format is not None:
        out["text"] = {
            "format": {
                "type": "json_schema",
                "name": "output",
                "schema": response_format["json_schema"]["schema"],
                "strict": False,
            }
        }
    metadata = body.get("metadata")
    if isinstance(metadata, dict):
        user_id = metadata.get("user_id")
        if isinstance(user_id, str) and user_id:
            out["safety_identifier"] = user_field(user_id)
    out["store"] = False
    out["stream"] = stream
    return out


def _function_tool(function: dict[str, Any]) -> dict[str, Any]:
    tool: dict[str, Any] = {"type": "function", "name": function["name"]}
    if "description" in function:
        tool["description"] = function["description"]
    tool["parameters"] = function["parameters"]
    tool["strict"] = False
    return tool


def _input_part(part: Part) -> Part:
    """A Chat content part (from the Chat writer's readers) as a Responses input part."""
    if part["type"] == "image_url":
        return {"type": "input_image", "image_url": part["image_url"]["url"], "detail": "auto"}
    if part["type"] == "file":
        return {"type": "input_file", **part["file"]}
    return {"type": "input_text", "text": part["text"]}


class _Writer:
    def __init__(self, target: ResponsesTarget) -> None:
        self.target = target
        self.system_texts: list[str] = []
        self.items: list[Item] = []
        self.pending: list[str] = []  # calls of the latest assistant turn without output
        self.texts: list[str] = []  # assistant text not yet written as a message item

    def system(self, system: Any, path: str = "system") -> None:
        if system is None:
            return
        if isinstance(system, str):
            self._system_text(system)
            return
        if not isinstance(system, list):
            raise bad(path, "must be a string or a list of text blocks")
        for j, block in enumerate(system):
            bpath = f"{path}.{j}"
            btype = block_type(block, bpath)
            text = text_of(block, bpath) if btype == "text" else fallback_text(block, btype, bpath)
            if text is not None:
                self._system_text(text)

    def _system_text(self, text: str) -> None:
        if text.strip() and not text.lstrip().startswith(BILLING_HEADER_PREFIX):
            self.system_texts.append(text)

    def messages(self, messages: Any) -> None:
        if not isinstance(messages, list) or not messages:
            raise bad("messages", "required: a non-empty list of messages")
        for i, message in enumerate(messages):
            path = f"messages.{i}"
            if not isinstance(message, dict):
                raise bad(path, "message must be an object")
            role = message.get("role")
            blocks = content_blocks(message.get("content"), f"{path}.content")
            if role == "assistant":
                self._assistant(blocks, f"{path}.content")
            elif role == "user":
                self._user(blocks, f"{path}.content")
            elif role == "system":  # Claude Code sends some mid-conversation
                self.system(blocks, f"{path}.content")
            else:
                raise bad(
                    f"{path}.role", f"role must be one of user, assistant, system (got {role!r})"
                )

    def finish(self) -> list[Item]:
        self._flush_text()
        self._answer_pending({})
        if not self.items:
            raise bad("messages", "no message has any non-empty content")
        first = self.items[0]
        if first.get("role") != "user" and first.get("type") != "function_call_output":
            self.items.insert(0, _message("user", LEADING_USER_PLACEHOLDER))
        return self.items

    def _flush_text(self) -> None:
        if self.texts:
            self.items.append(_message("assistant", TEXT_SEPARATOR.join(self.texts)))
            self.texts = []

    def _answer_pending(self, outputs: dict[str, Any]) -> None:
        for call_id in self.pending:
            output = outputs.get(call_id, MISSING_TOOL_RESULT)
            self.items.append(
                {"type": "function_call_output", "call_id": call_id, "output": output}
            )
        self.pending = []

    def _assistant(self, blocks: list[Any], path: str) -> None:
        self._answer_pending({})
        calls: list[str] = []
        for j, block in enumerate(blocks):
            bpath = f"{path}.{j}"
            btype = block_type(block, bpath)
            if btype == "text":
                text = text_of(block, bpath)
                if text.strip():
                    self.texts.append(text)
            elif btype == "tool_use":
                call_id, name = block.get("id"), block.get("name")
                if not isinstance(call_id, str) or not call_id:
                    raise bad(f"{bpath}.id", "tool_use block needs an id")
                if not isinstance(name, str) or not name:
                    raise bad(f"{bpath}.name", "tool_use block needs a name")
                self._flush_text()
                self.items.append(
                    {
                        "type": "function_call",
                        "call_id": call_id,
                        "name": name,
                        "arguments": tool_arguments(block.get("input")),
                    }
                )
                calls.append(call_id)
            elif btype == "thinking":
                thinking = block.get("thinking")
                thinking = thinking if isinstance(thinking, str) else ""
                item = verify_upstream_item(
                    thinking, block.get("signature"), self.target.signing_key
                )
                if item is None:
                    continue  # not replayable to OpenAI: another model's reasoning
                self._flush_text()
                summary = [{"type": "summary_text", "text": thinking}] if thinking else []
                self.items.append(
                    {
                        "type": "reasoning",
                        "id": item["id"],
                        "summary": summary,
                        "encrypted_content": item["encrypted_content"],
                    }
                )
            elif btype == "redacted_thinking":
                continue
            else:
                extra = fallback_text(block, btype, bpath)
                if extra is not None:
                    self.texts.append(extra)
        self._flush_text()
        self.pending = calls

    def _user(self, blocks: list[Any], path: str) -> None:
        self._flush_text()
        parts: list[Part] = []
        answered: dict[str, Any] = {}
        orphans: list[Part] = []
        for j, block in enumerate(blocks):
            bpath = f"{path}.{j}"
            btype = block_type(block, bpath)
            if btype == "tool_result":
                call_id = block.get("tool_use_id")
                if not isinstance(call_id, str) or not call_id:
                    raise bad(f"{bpath}.tool_use_id", "tool_result block needs a tool_use_id")
                text, media = tool_result_content(block, bpath)
                output: Any = text
                if media:
                    output = [{"type": "input_text", "text": text}] if text else []
                    output.extend(_input_part(part) for part in media)
                if call_id in self.pending and call_id not in answered:
                    answered[call_id] = output
                else:
                    orphans.append(
                        {"type": "input_text", "text": f"Result of tool call {call_id}:\n{text}"}
                    )
                    orphans.extend(_input_part(part) for part in media)
            elif btype == "text":
                text = text_of(block, bpath)
                if text.strip():
                    parts.append({"type": "input_text", "text": text})
            elif btype == "image":
                parts.append(_input_part(image_part(block, bpath)))
            elif btype == "document":
                parts.extend(_input_part(part) for part in document_parts(block, bpath))
            elif btype in ("thinking", "redacted_thinking", "tool_use"):
                log.debug("dropped %s block in a user turn at %s", btype, bpath)
            else:
                extra = fallback_text(block, btype, bpath)
                if extra is not None:
                    parts.append({"type": "input_text", "text": extra})
        self._answer_pending(answered)
        parts = orphans + parts
        if parts:
            self.items.append({"type": "message", "role": "user", "content": parts})


def _message(role: str, text: str) -> Item:
    # The "easy" input message form: accepted for every role, no item id needed.
    return {"type": "message", "role": role, "content": text}
