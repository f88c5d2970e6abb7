"""OpenAI Responses request -> Anthropic Messages request (the canonical request).

Pure translation, no I/O. `messages_request_from_responses` returns a `Translation` (the
Anthropic body, the `ResponsesContext` the reply needs, and what the server logs) or
raises `ProxyError` (400 ``invalid_request_error``) whose `param` is the offending field in
OpenAI's notation, e.g. ``input[3].call_id``; the message starts with the same path. The
input is never modified; the output shares sub-objects with it (tool schemas, the text
format schema), so copy before mutating those. The pieces shared with the Chat reader
(content parts, tool call arguments, thinking budgets, the tool-loop rules) are that
reader's own functions, so both clients get the same translation.

Decisions (each covered by a test):

State
  The proxy keeps no conversation state: ``store: true``, ``previous_response_id``,
  ``conversation``, ``background: true``, a stored ``prompt`` and ``item_reference`` input
  items are refused with a 400 naming the field (send ``store: false`` and the whole
  conversation in ``input``, as Codex does). ``include`` must be an array of strings; every
  value is accepted, only ``reasoning.encrypted_content`` changes the reply.

System text
  ``instructions``, then every ``system`` / ``developer`` message wherever it sits, joined
  with a blank line, into the top-level ``system`` (whitespace-only pieces dropped).

Input
  A string -> one user text block. Items: ``message`` (also without ``type``: the "easy"
  form ``{role, content}``), content a string or parts. User parts: ``input_text`` ->
  text (whitespace-only dropped), ``input_image`` with ``image_url`` (``data:`` or http(s)
  URL) -> image, ``input_file`` with ``file_data`` -> document/image as the Chat reader
  does, with ``file_url`` -> a URL document; ``file_id`` (OpenAI's Files API) is a 400.
  Assistant parts: ``output_text`` / ``input_text`` -> text, ``refusal`` -> its text.
  ``function_call`` -> a ``tool_use`` block on the assistant turn (``call_id`` kept
  verbatim as the id when it matches ``[A-Za-z0-9_-]+``, else hashed as in the Chat
  reader; ``arguments`` a JSON object string; ``namespace`` + ``name`` -> the flattened
  name), ``custom_tool_call`` -> ``tool_use`` with ``{"input": <input>}``.
  ``function_call_output`` / ``custom_tool_call_output`` -> ``tool_result`` blocks
  (``output`` a string or ``input_text``/``input_image``/``input_file`` parts): consecutive
  outputs form one user turn right after the calling assistant turn, ahead of any user
  text in that turn. An output must answer a call of the latest assistant turn, once, and
  every call must be answered before the next assistant turn and by the end of the input:
  else a 400 naming ``input[i].call_id``. Items of OpenAI-hosted tools (``web_search_call``,
  ``file_search_call``, ``computer_call``, ``image_generation_call``, ``code_interpreter_call``,
  ``local_shell_call``, ``mcp_*``, ``compaction``...) ran at OpenAI and cannot be replayed
  anywhere else: skipped and reported in `Translation.dropped_items`.

Reasoning replay
  A ``reasoning`` item whose ``encrypted_content`` is this proxy's carrier and verifies
  (`reasoning.decode_carrier`) restores its thinking/redacted_thinking blocks, in order, on
  the assistant turn. Any other reasoning item (OpenAI's own encrypted content, a carrier
  that does not verify, no encrypted_content) is skipped, counted in
  `Translation.skipped_reasoning` and traced on ``hydra_proxy.continuation``; never turned
  into text or forged. When that leaves a thinking tool loop without its leading thinking
  block, thinking is turned off for the request (`Translation.thinking_disabled`), as the
  Chat reader does; the rest of the sequence rules (placeholder first user turn, no
  trailing thinking or whitespace in a final assistant turn, merged same-role turns) are
  the Chat reader's.

Tools
  See `hydra_proxy.responses.tools`: function tools, flattened namespace tools, custom
  tools as one-string functions, server tools dropped and reported in
  `Translation.dropped_tools`; ``tool_choice`` and ``parallel_tool_calls``.

Parameters
  ``max_output_tokens`` -> ``max_tokens`` (default `MessagesTarget.default_max_tokens`,
  clamped to `MessagesTarget.max_tokens_limit`). ``temperature`` 0-2 (values above 1 ->
  1) and ``top_p`` 0-1, with the Chat reader's rule when both are given. ``top_logprobs``
  above 0 is a 400 (Claude returns no log probabilities). ``reasoning.effort`` maps like the
  Chat reader's ``reasoning_effort`` (none/minimal -> disabled; low..xhigh -> a budget),
  with the same budget/max_tokens fitting; no effort -> no thinking (the Anthropic
  default). ``reasoning.summary`` (auto/concise/detailed) asks for summary text on the
  reply's reasoning items. ``text.format``: ``text`` -> nothing, ``json_schema`` ->
  ``output_config.format``, ``json_object`` -> `JSON_OBJECT_INSTRUCTION` in the system
  text. ``user`` (else ``safety_identifier``) -> ``metadata.user_id`` as in the Chat reader.
  ``prompt_cache_key`` (the client wants its prefix cached across turns; Codex sends one
  per session) -> Anthropic's top-level ``cache_control: {"type": "ephemeral"}``
  (automatic caching: the breakpoint goes on the last cacheable block), since Anthropic,
  unlike OpenAI, caches nothing unasked; the Chat writer drops it. ``metadata``,
  ``prompt_cache_key`` and the other echoed fields are kept for the reply (Anthropic takes
  no cache key and no free-form metadata); ``text.verbosity``,
  ``truncation``, ``service_tier``, ``max_tool_calls``, ``stream_options``,
  ``client_metadata`` (Codex) and unknown fields are dropped. ``model`` is not read here:
  the route decides the upstream model.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ..chat.request.reader import (
    DEFAULT_THINKING_BUDGETS,
    JSON_OBJECT_INSTRUCTION,
    LEADING_USER_PLACEHOLDER,
    MessagesTarget,
)
from ..chat.request.reader.content import file_block, image_block_from_url
from ..chat.request.reader.messages import Turn, finish_turns, strip_final_whitespace
from ..chat.request.reader.params import read_number, read_user_id
from ..chat.request.reader.thinking import (
    effort_budget,
    fit_budget,
    loop_starts_with_thinking,
    read_native_thinking,
    strip_final_thinking,
)
from ..chat.request.reader.tools import hashed_id, read_arguments, tool_id
from ..chat.request.reader.validation import type_name
from ..errors import ProxyError, invalid_request
from .context import ENCRYPTED_REASONING, ResponsesContext
from .reasoning import decode_carrier, is_carrier
from .tools import CUSTOM_INPUT_KEY, ToolNames, read_tool_choice, read_tools

__all__ = [
    "SYSTEM_SEPARATOR",
    "Translation",
    "messages_request_from_responses",
]

log = logging.getLogger(__name__)
trace = logging.getLogger("hydra_proxy.continuation")

SYSTEM_SEPARATOR = "\n\n"
_EFFORTS_OFF = ("none", "minimal")
_SUMMARIES = ("auto", "concise", "detailed")
_THINKING_TYPES = ("thinking", "redacted_thinking")
_CALLS = {"function_call": False, "custom_tool_call": True}  # type -> custom
_OUTPUTS = ("function_call_output", "custom_tool_call_output")
MAX_FORGED = 64  # reasoning carriers per request that may fail their MAC check

Block = dict[str, Any]


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


def messages_request_from_responses(body: Any, target: MessagesTarget) -> Translation:
    """Translate a Responses request body into an Anthropic Messages request.

    `target.continuation_key` is the proxy's signing key: reasoning carriers are trusted
    only when they verify with it (None: none is trusted).
    """
    if not isinstance(body, dict):
        raise invalid_request("request body must be a JSON object")
    _refuse_state(body)
    stream = _bool(body, "stream") or False
    include = _include(body.get("include"))
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise _bad("instructions", f"must be a string, got {type_name(instructions)}")
    requested_max = _max_output_tokens(body.get("max_output_tokens"))
    temperature = read_number(body, "temperature", 0.0, 2.0)
    top_p = read_number(body, "top_p", 0.0, 1.0)
    top_logprobs = body.get("top_logprobs")
    if top_logprobs is not None and top_logprobs != 0:
        raise _bad("top_logprobs", "Claude does not return log probabilities; omit it or send 0")
    toolset = read_tools(body.get("tools"))
    tools, tool_choice = read_tool_choice(
        body.get("tool_choice"), toolset, body.get("parallel_tool_calls")
    )
    reasoning = _reasoning(body.get("reasoning"))
    thinking, effort = _thinking_request(body, reasoning, target)
    text = _text_config(body.get("text"))
    output_format, json_object = _text_format(text)
    metadata = _metadata(body.get("metadata"))
    user_id = read_user_id(body)
    prompt_cache_key = body.get("prompt_cache_key")
    if prompt_cache_key is not None and not isinstance(prompt_cache_key, str):
        raise _bad("prompt_cache_key", "must be a string")

    builder = _Builder(target.continuation_key, toolset.names)
    if instructions and instructions.strip():
        builder.system.append(instructions)
    builder.add_input(body.get("input"))
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
        raise _bad("input", "no user or assistant message with content is left to send")

    out: dict[str, Any] = {"model": target.model, "max_tokens": max_tokens}
    system = SYSTEM_SEPARATOR.join(builder.system)
    if system:
        out["system"] = system
    out["messages"] = messages
    if tools:
        out["tools"] = tools
        if tool_choice is not None:
            out["tool_choice"] = tool_choice
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
    if prompt_cache_key:
        out["cache_control"] = {"type": "ephemeral"}
    out["stream"] = stream

    parallel = body.get("parallel_tool_calls")
    context = ResponsesContext(
        model=body["model"] if isinstance(body.get("model"), str) else target.model,
        tool_names=toolset.names,
        include_encrypted=ENCRYPTED_REASONING in include,
        summary=reasoning.get("summary") in _SUMMARIES,
        instructions=instructions,
        tools=body.get("tools") or [],
        tool_choice=body.get("tool_choice", "auto"),
        parallel_tool_calls=parallel if isinstance(parallel, bool) else True,
        max_output_tokens=requested_max,
        temperature=body.get("temperature"),
        top_p=body.get("top_p"),
        reasoning={"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
        text=text or {"format": {"type": "text"}},
        metadata=metadata,
        prompt_cache_key=prompt_cache_key,
        safety_identifier=_opt_str(body, "safety_identifier"),
        user=_opt_str(body, "user"),
    )
    restored = sum(
        1
        for message in messages
        if message["role"] == "assistant"
        for block in message["content"]
        if block["type"] in _THINKING_TYPES
    )
    return Translation(
        body=out,
        context=context,
        stream=stream,
        dropped_tools=toolset.dropped,
        dropped_items=builder.dropped,
        restored_blocks=restored,
        skipped_reasoning=builder.skipped,
        thinking_disabled=thinking_disabled,
    )


# ---------------------------------------------------------------------------- helpers


def _bad(path: str, problem: str) -> ProxyError:
    return invalid_request(f"{path}: {problem}", path)


def _bool(body: dict[str, Any], name: str) -> bool | None:
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise _bad(name, f"must be a boolean, got {type_name(value)}")
    return value


def _opt_str(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    return value if isinstance(value, str) else None


_NO_STATE = "this proxy keeps no conversation state"


def _refuse_state(body: dict[str, Any]) -> None:
    if _bool(body, "store"):
        raise _bad(
            "store",
            f"{_NO_STATE}; send store: false and the whole conversation in input",
        )
    for name in ("previous_response_id", "conversation"):
        if body.get(name) is not None:
            raise _bad(name, f"{_NO_STATE}; send the whole conversation in input instead")
    if _bool(body, "background"):
        raise _bad("background", f"{_NO_STATE}; background responses are not supported")
    if body.get("prompt") is not None:
        raise _bad("prompt", "stored prompt templates are not available through this proxy")


def _include(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _bad("include", f"must be an array of strings, got {type_name(value)}")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise _bad(f"include[{i}]", f"must be a string, got {type_name(item)}")
    return value


def _max_output_tokens(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _bad("max_output_tokens", f"must be a positive integer, got {value!r}")
    return value


def _metadata(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _bad("metadata", f"must be an object, got {type_name(value)}")
    for key, item in value.items():
        if not isinstance(item, str):
            raise _bad(f"metadata.{key}", f"must be a string, got {type_name(item)}")
    return value


def _reasoning(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _bad("reasoning", f"must be an object, got {type_name(value)}")
    effort = value.get("effort")
    if effort is not None and effort not in (*_EFFORTS_OFF, *DEFAULT_THINKING_BUDGETS):
        raise _bad(
            "reasoning.effort", "must be one of none, minimal, low, medium, high, xhigh, max"
        )
    summary = value.get("summary", value.get("generate_summary"))
    if summary is not None and summary not in _SUMMARIES:
        raise _bad("reasoning.summary", "must be auto, concise or detailed")
    return {"effort": effort, "summary": summary}


def _thinking_request(
    body: dict[str, Any], reasoning: dict[str, Any], target: MessagesTarget
) -> tuple[dict[str, Any] | None, str | None]:
    """The requested `thinking` config (before tool-loop checks) and the effort name."""
    effort = reasoning.get("effort")
    native = body.get("thinking")  # Anthropic's own shape, as the Chat reader accepts it
    if native is not None:
        known = effort if effort in DEFAULT_THINKING_BUDGETS else None
        return read_native_thinking(native, known, target), known
    if effort is None:
        return None, None
    if effort in _EFFORTS_OFF:
        return {"type": "disabled"}, None
    return {"type": "enabled", "budget_tokens": effort_budget(effort, target)}, effort


def _text_config(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _bad("text", f"must be an object, got {type_name(value)}")
    return value


def _text_format(text: dict[str, Any] | None) -> tuple[dict[str, Any] | None, bool]:
    value = (text or {}).get("format")
    if value is None:
        return None, False
    if not isinstance(value, dict):
        raise _bad("text.format", f"must be an object, got {type_name(value)}")
    ftype = value.get("type")
    if ftype == "text":
        return None, False
    if ftype == "json_object":
        return None, True
    if ftype != "json_schema":
        raise _bad("text.format.type", "must be 'text', 'json_object' or 'json_schema'")
    name = value.get("name")
    if name is not None and not isinstance(name, str):
        raise _bad("text.format.name", "must be a string")
    schema = value.get("schema")
    if not isinstance(schema, dict):
        raise _bad("text.format.schema", "required: a JSON Schema object")
    return {"type": "json_schema", "schema": schema}, False


# ------------------------------------------------------------------------------ input


class _Builder:
    def __init__(self, key: bytes | None, names: ToolNames) -> None:
        self.key = key
        self.names = names
        self.system: list[str] = []
        self.turns: list[Turn] = []
        self.skipped = 0
        self.dropped: list[str] = []
        self.dropped_seen: set[str] = set()
        self.forged = 0  # carriers that did not verify
        # Calls of the latest assistant turn not answered yet: call_id -> (path, sent id).
        self.pending: dict[str, tuple[str, str]] = {}
        self.answered: set[str] = set()
        self.sent_ids: set[str] = set()

    def add_input(self, value: Any) -> None:
        if value is None:
            raise _bad("input", "required: a string or an array of input items")
        if isinstance(value, str):
            if value.strip():
                self._user_turn().blocks.append({"type": "text", "text": value})
            return
        if not isinstance(value, list):
            raise _bad("input", f"must be a string or an array, got {type_name(value)}")
        for i, item in enumerate(value):
            self._item(item, f"input[{i}]")
        self._check_answered()

    def finish(self) -> list[Turn]:
        turns: list[Turn] = []
        for turn in self.turns:
            if turn.role == "assistant":
                while turn.blocks and turn.blocks[-1]["type"] in _THINKING_TYPES:
                    turn.blocks.pop()
            if not turn.blocks and not turn.results:
                continue
            if turns and turns[-1].role == turn.role:
                turns[-1].blocks.extend(turn.blocks)
                turns[-1].results.extend(turn.results)
            else:
                turns.append(turn)
        if turns and turns[0].role == "assistant":
            placeholder = Turn("user", [{"type": "text", "text": LEADING_USER_PLACEHOLDER}])
            turns.insert(0, placeholder)
        return turns

    # -- items

    def _item(self, item: Any, path: str) -> None:
        if not isinstance(item, dict):
            raise _bad(path, f"must be an object, got {type_name(item)}")
        itype = item.get("type")
        if itype is None and "role" in item:
            itype = "message"
        if not isinstance(itype, str) or not itype:
            raise _bad(f"{path}.type", "required")
        if itype == "message":
            self._message(item, path)
        elif itype in _CALLS:
            self._call(item, path, _CALLS[itype])
        elif itype in _OUTPUTS:
            self._output(item, path)
        elif itype == "reasoning":
            self._reasoning(item, path)
        elif itype == "item_reference":
            raise _bad(
                f"{path}.type",
                f"{_NO_STATE}; item_reference cannot be resolved, send the item itself",
            )
        else:
            # Hosted-tool calls and their outputs, compaction items...: they ran at OpenAI.
            log.debug("%s: %s input item skipped (not replayable here)", path, itype)
            if itype not in self.dropped_seen:  # a set: distinct types by the thousand
                self.dropped_seen.add(itype)
                self.dropped.append(itype)

    def _message(self, item: dict[str, Any], path: str) -> None:
        role = item.get("role")
        content = item.get("content")
        if role in ("system", "developer"):
            texts = self._texts(content, path, ("input_text",), role)
            self.system.extend(text for text in texts if text.strip())
        elif role == "user":
            blocks = self._user_content(content, path)
            if blocks:
                self._user_turn().blocks.extend(blocks)
        elif role == "assistant":
            texts = self._texts(content, path, ("output_text", "input_text", "refusal"), role)
            blocks = [{"type": "text", "text": text} for text in texts if text.strip()]
            if blocks:
                self._assistant_turn().blocks.extend(blocks)
        elif role is None:
            raise _bad(f"{path}.role", "required")
        else:
            raise _bad(
                f"{path}.role",
                f"unknown role {role!r}; expected user, assistant, system or developer",
            )

    def _texts(self, content: Any, path: str, allowed: tuple[str, ...], role: str) -> list[str]:
        if isinstance(content, str):
            return [content]
        if not isinstance(content, list):
            raise _bad(
                f"{path}.content",
                f"must be a string or an array of content parts, got {type_name(content)}",
            )
        texts: list[str] = []
        for j, part in enumerate(content):
            part_path = f"{path}.content[{j}]"
            ptype = _part_type(part, part_path)
            if ptype not in allowed:
                raise _bad(
                    f"{part_path}.type",
                    f"{role} messages take {', '.join(allowed)} parts, not {ptype!r}",
                )
            key = "refusal" if ptype == "refusal" else "text"
            text = part.get(key)
            if not isinstance(text, str):
                raise _bad(f"{part_path}.{key}", f"must be a string, got {type_name(text)}")
            texts.append(text)
        return texts

    def _user_content(self, content: Any, path: str) -> list[Block]:
        if isinstance(content, str):
            return [{"type": "text", "text": content}] if content.strip() else []
        if not isinstance(content, list):
            raise _bad(
                f"{path}.content",
                f"must be a string or an array of content parts, got {type_name(content)}",
            )
        blocks = []
        for j, part in enumerate(content):
            block = _input_part(part, f"{path}.content[{j}]")
            if block is not None:
                blocks.append(block)
        return blocks

    def _call(self, item: dict[str, Any], path: str, custom: bool) -> None:
        call_id = item.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            raise _bad(f"{path}.call_id", "required: a non-empty string")
        if call_id in self.pending:
            raise _bad(f"{path}.call_id", f"duplicate call_id {call_id!r}")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise _bad(f"{path}.name", "required: a non-empty string")
        namespace = item.get("namespace")
        if namespace is not None and not isinstance(namespace, str):
            raise _bad(f"{path}.namespace", f"must be a string, got {type_name(namespace)}")
        tool_input: dict[str, Any]
        if custom:
            raw = item.get("input")
            if not isinstance(raw, str):
                raise _bad(f"{path}.input", f"must be a string, got {type_name(raw)}")
            tool_input = {CUSTOM_INPUT_KEY: raw}
        else:
            tool_input = read_arguments(item.get("arguments"), f"{path}.arguments")
        turn = self._assistant_turn()
        sent_id = tool_id(call_id)
        if sent_id in self.sent_ids:
            # Anthropic wants ids unique in the request: a reused id gets a new one.
            sent_id = hashed_id(f"{call_id}\x00{path}")
        self.sent_ids.add(sent_id)
        self.pending[call_id] = (f"{path}.call_id", sent_id)
        turn.blocks.append(
            {
                "type": "tool_use",
                "id": sent_id,
                "name": self.names.sent_name(name, namespace),
                "input": tool_input,
            }
        )

    def _output(self, item: dict[str, Any], path: str) -> None:
        call_id = item.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            raise _bad(f"{path}.call_id", "required: the call_id of the call it answers")
        if call_id not in self.pending:
            problem = (
                "answers this call a second time"
                if call_id in self.answered
                else "does not answer a call of the latest assistant turn"
            )
            raise _bad(f"{path}.call_id", f"{call_id!r} {problem}")
        _, sent_id = self.pending.pop(call_id)
        self.answered.add(call_id)
        result: Block = {"type": "tool_result", "tool_use_id": sent_id}
        output = item.get("output")
        if isinstance(output, str):
            if output.strip():
                result["content"] = output
        elif isinstance(output, list):
            blocks = []
            for j, part in enumerate(output):
                block = _input_part(part, f"{path}.output[{j}]")
                if block is not None:
                    blocks.append(block)
            if blocks:
                result["content"] = blocks
        else:
            raise _bad(
                f"{path}.output",
                f"must be a string or an array of content parts, got {type_name(output)}",
            )
        self._user_turn().results.append(result)

    def _reasoning(self, item: dict[str, Any], path: str) -> None:
        encrypted = item.get("encrypted_content")
        if encrypted is not None and not isinstance(encrypted, str):
            raise _bad(f"{path}.encrypted_content", f"must be a string, got {type_name(encrypted)}")
        summary = item.get("summary")
        if summary is not None and not isinstance(summary, list):
            raise _bad(f"{path}.summary", f"must be an array, got {type_name(summary)}")
        # Past MAX_FORGED carriers that did not verify, the rest are skipped unchecked:
        # each check is a MAC, and a request may hold thousands.
        verify = self.forged < MAX_FORGED
        blocks = decode_carrier(encrypted, self.key) if verify else None
        if blocks is None:
            self.skipped += 1
            self.forged += is_carrier(encrypted)
            why = (
                "no encrypted_content"
                if encrypted is None
                else "a carrier that does not verify"
                if is_carrier(encrypted)
                else "encrypted_content not made by this proxy"
            )
            trace.debug("%s: reasoning item skipped (%s)", path, why)
            return
        if blocks:
            self._assistant_turn().blocks.extend(blocks)

    # -- turns

    def _user_turn(self) -> Turn:
        if not self.turns or self.turns[-1].role != "user":
            self.turns.append(Turn("user"))
        return self.turns[-1]

    def _assistant_turn(self) -> Turn:
        if not self.turns or self.turns[-1].role != "assistant":
            self._check_answered()
            self.answered = set()
            self.turns.append(Turn("assistant"))
        return self.turns[-1]

    def _check_answered(self) -> None:
        if self.pending:
            call_id, (call_path, _) = next(iter(self.pending.items()))
            raise _bad(
                call_path,
                f"call {call_id!r} has no function_call_output answering it "
                "(each call needs its output before the next assistant turn)",
            )


def _part_type(part: Any, path: str) -> str:
    if not isinstance(part, dict):
        raise _bad(path, f"must be an object, got {type_name(part)}")
    ptype = part.get("type")
    if not isinstance(ptype, str) or not ptype:
        raise _bad(f"{path}.type", "required")
    return ptype


def _input_part(part: Any, path: str) -> Block | None:
    """A user (or tool output) content part as an Anthropic block; None for blank text."""
    ptype = _part_type(part, path)
    if ptype in ("input_text", "output_text"):
        text = part.get("text")
        if not isinstance(text, str):
            raise _bad(f"{path}.text", f"must be a string, got {type_name(text)}")
        return {"type": "text", "text": text} if text.strip() else None
    if ptype == "input_image":
        url = part.get("image_url")
        if url is None and part.get("file_id") is not None:
            raise _bad(
                f"{path}.file_id",
                "uploaded OpenAI files cannot be read through this proxy; "
                "send image_url with a data: URL instead",
            )
        if not isinstance(url, str) or not url:
            raise _bad(f"{path}.image_url", "required: a data: or https URL")
        return image_block_from_url(url, f"{path}.image_url")
    if ptype == "input_file":
        url = part.get("file_url")
        if part.get("file_data") is None and isinstance(url, str) and url:
            if url.split(":", 1)[0].lower() not in ("http", "https"):
                raise _bad(f"{path}.file_url", "must be an http(s) URL")
            return {"type": "document", "source": {"type": "url", "url": url}}
        return file_block(part, path)
    if ptype == "input_audio":
        raise _bad(f"{path}.type", "Claude does not accept audio input")
    raise _bad(f"{path}.type", f"unsupported content part type {ptype!r}")
