"""Anthropic Messages request -> OpenAI Chat Completions request (SPEC section 3).

Pure translation, no I/O. `chat_request_from_messages` either returns the Chat request body
or raises `ProxyError` (400 invalid_request_error) whose message starts with the offending
field path, e.g. ``messages.3.content.1.source: ...`` (the same path is in `param`). The
input is never modified; the output shares sub-objects with it (tool schemas, response
format schema), so copy before mutating those.

Decisions where the Anthropic and OpenAI protocols leave room (all covered by tests):

System text
  `system` (string or text blocks) and every ``role: "system"`` message in `messages[]`
  become ONE leading ``system`` message: the pieces, in request order, joined with a blank
  line. Whitespace-only pieces are dropped. The ``x-anthropic-billing-header: ...`` block
  Claude Code puts first is Anthropic billing metadata, not an instruction, and it changes
  per conversation (which defeats upstream prefix caching), so it is removed.

User turns
  text -> text; image (base64 -> ``data:`` URL, url -> URL) -> ``image_url`` part; PDF
  document (base64) -> ``file`` part with ``file_data`` + ``filename`` (title, else
  ``document.pdf``); text/content documents -> text. Document sources ``url``/``file`` and
  image sources other than base64/url cannot be sent to a Chat upstream: 400 naming
  ``...source``. A user turn whose content is only text becomes a string (text pieces
  joined with a blank line; the most widely accepted shape), otherwise a list of parts.
  Whitespace-only text is dropped; a user turn left empty (e.g. only ``cache_control``)
  is dropped.

Tool results
  Each ``tool_result`` answering a ``tool_use`` of the immediately preceding assistant turn
  becomes a ``role: "tool"`` message placed right after that assistant message, in the
  order of its ``tool_calls``, before any other content of the same user turn. Content:
  the string, or the text of its blocks joined with a newline (never a JSON dump of the
  blocks). ``is_error: true`` prefixes the content with ``"Error: "``. Images and PDFs in a
  tool result go into the user message that follows the tool messages (labelled with the
  tool call id; the tool message says so), since tool messages cannot carry them.
  A call left without a result gets a synthetic tool message
  (``MISSING_TOOL_RESULT``): OpenAI rejects an assistant ``tool_calls`` message that is not
  answered, and deleting the call would lose history. A ``tool_result`` that answers no
  call of the preceding assistant turn (orphan) becomes user text
  ``"Result of tool call <id>:\\n..."`` rather than an invalid tool message.

Assistant turns
  Text (joined with a blank line) -> ``content`` (``null`` when there is none); ``tool_use``
  -> ``tool_calls`` (ids verbatim, ``input`` -> compact JSON, missing/``{}`` -> ``"{}"``).
  ``thinking`` whose signature is this proxy's signature of exactly that text, sent to a
  ``replay_reasoning`` target -> ``reasoning_content``; any other thinking and all
  ``redacted_thinking`` are dropped, never turned into text. A ``replay_reasoning`` target
  gets ``reasoning_content`` on every assistant message (``""`` when no verified reasoning
  exists) because DeepSeek-style APIs reject a tool turn without the field. An assistant
  turn with neither text nor tool calls is dropped.

Sequence
  Consecutive user messages and consecutive assistant messages are merged (strict chat
  templates require alternation; OpenAI does not mind). When the first non-system
  message would be an assistant turn, a user message ``LEADING_USER_PLACEHOLDER`` is put
  before it (LiteLLM #42432: ``[assistant, tool]`` without a user turn is a 400 upstream).
  A request with no non-empty message left is a 400 (Anthropic rejects it too).

Unknown content blocks
  Tolerated, never a 4xx: a block of an unknown type with a string ``text`` field keeps
  that text; any other is dropped (debug log). ``search_result`` and ``tool_reference``
  blocks are rendered as text. Thinking/tool_use blocks in a user turn are dropped.

Tools
  Custom tools -> ``{"type": "function", "function": {name, description, parameters}}``
  with the JSON schema as given (``$schema``, ``additionalProperties`` kept);
  ``cache_control``, ``strict``, ``input_examples`` dropped. ``defer_loading`` tools are
  sent like any other tool: a Chat upstream has no tool search, and they stay callable.
  A tool with a ``type`` other than ``custom`` and no ``input_schema`` is an Anthropic
  server tool (web search, code execution, bash, text editor, computer, MCP toolset...):
  400 naming it, as is a non-empty ``mcp_servers`` (the MCP connector is server-side too).
  ``tool_choice`` auto/any/tool/none -> "auto"/"required"/named function/"none";
  ``disable_parallel_tool_use`` -> ``parallel_tool_calls: false``; both only when tools
  are sent (OpenAI rejects ``tool_choice`` without tools).

Parameters
  ``max_tokens`` (required, integer >= 1) -> ``target.max_tokens_field``, clamped to
  ``target.max_tokens_limit``. ``stop_sequences`` -> ``stop``: empty strings dropped, only
  the first ``MAX_STOP_SEQUENCES`` kept (OpenAI rejects more; a 400 would make the proxy
  unusable for such clients). ``temperature``/``top_p`` passed unless the target has
  ``sampling=False`` (o-series/GPT-5 reasoning models reject non-default values);
  ``top_k`` dropped. ``metadata.user_id`` (string) -> ``user``: verbatim when it is 6-64
  characters of ``[A-Za-z0-9_-]``, else its SHA-256 hex digest (Claude Code sends a
  ~150-character JSON string; OpenRouter rejects ``user`` over 128 characters, Zhipu
  outside 6-128, OpenAI caps ``safety_identifier`` at 64). Reasoning effort (only
  for ``target.reasoning``): ``thinking.type == "disabled"`` -> none; else
  ``output_config.effort`` (low/medium/high; xhigh/max -> high) wins; else
  ``thinking.budget_tokens`` (<=4096 low, <=16384 medium, above high); adaptive thinking
  without an effort sends nothing (upstream default). ``output_config.format`` (or the
  older top-level ``output_format``) of type json_schema -> ``response_format``
  json_schema named ``output`` without ``strict`` (OpenAI strict mode requires a schema
  subset Anthropic does not). ``cache_control``, ``context_management``, ``service_tier``,
  ``container`` and unknown fields are dropped.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import orjson

from ..errors import ProxyError, invalid_request
from ..signature import verify_thinking

__all__ = [
    "LEADING_USER_PLACEHOLDER",
    "MAX_STOP_SEQUENCES",
    "MISSING_TOOL_RESULT",
    "ChatTarget",
    "chat_request_from_messages",
]

log = logging.getLogger(__name__)

MAX_STOP_SEQUENCES = 4
BILLING_HEADER_PREFIX = "x-anthropic-billing-header:"
LEADING_USER_PLACEHOLDER = "(continued)"
MISSING_TOOL_RESULT = "Error: no result was provided for this tool call."
TOOL_ERROR_PREFIX = "Error: "
MEDIA_MOVED_NOTE = (
    "[The image/document output of this tool call is attached in the next user message.]"
)
SYSTEM_SEPARATOR = "\n\n"
TEXT_SEPARATOR = "\n\n"
TOOL_TEXT_SEPARATOR = "\n"

_EFFORTS = {"low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}
_ROLES = ("user", "assistant", "system")
# OpenAI safety_identifier: <= 64 chars; OpenRouter/Zhipu `user`: 6-128 chars; some
# upstreams also require this character set.
_SAFE_USER = re.compile(r"[A-Za-z0-9_-]{6,64}")

Part = dict[str, Any]


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
    max_tokens = _max_tokens(body, target)
    translator = _Translator(target)
    translator.system(body.get("system"))
    translator.messages(body.get("messages"))
    tools = _tools(body.get("tools"))
    _refuse_mcp_servers(body.get("mcp_servers"))

    out: dict[str, Any] = {"model": target.model, "messages": translator.finish()}
    out[target.max_tokens_field] = max_tokens

    stop = _stop(body.get("stop_sequences"))
    if stop:
        out["stop"] = stop
    for name in ("temperature", "top_p"):
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _bad(name, "must be a number")
        if target.sampling:
            out[name] = value

    choice, parallel = _tool_choice(body.get("tool_choice"), tools)
    if tools:
        out["tools"] = tools
        if choice is not None:
            out["tool_choice"] = choice
        if parallel is not None:
            out["parallel_tool_calls"] = parallel

    if target.reasoning:
        effort = _reasoning_effort(body)
        if effort is not None:
            out["reasoning_effort"] = effort

    response_format = _response_format(body)
    if response_format is not None:
        out["response_format"] = response_format

    metadata = body.get("metadata")
    if isinstance(metadata, dict):
        user_id = metadata.get("user_id")
        if isinstance(user_id, str) and user_id:
            out["user"] = _user_field(user_id)

    if stream:
        out["stream"] = True
        if target.include_usage:
            out["stream_options"] = {"include_usage": True}
    return out


# ---------------------------------------------------------------------------- helpers


def _bad(path: str, problem: str) -> ProxyError:
    return invalid_request(f"{path}: {problem}", path)


def _compact_json(value: Any) -> str:
    if value is None:
        return "{}"
    try:
        return orjson.dumps(value).decode("utf-8")
    except TypeError:  # orjson refuses integers beyond 64 bits
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _block_type(block: Any, path: str) -> str:
    if not isinstance(block, dict):
        raise _bad(path, "content block must be an object")
    btype = block.get("type")
    if not isinstance(btype, str) or not btype:
        raise _bad(f"{path}.type", "content block type is required")
    return btype


def _blocks(content: Any, path: str) -> list[Any]:
    """A message's content as a list of blocks (a string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return content
    if content is None:
        raise _bad(path, "field required (a string or a list of content blocks)")
    raise _bad(path, "must be a string or a list of content blocks")


def _text_of(block: dict[str, Any], path: str) -> str:
    text = block.get("text")
    if not isinstance(text, str):
        raise _bad(f"{path}.text", "must be a string")
    return text


def _fallback_text(block: dict[str, Any], btype: str, path: str) -> str | None:
    """Text for block types that are not core content (None: nothing to keep)."""
    if btype == "search_result":
        pieces = [p for p in (block.get("title"), block.get("source")) if isinstance(p, str) and p]
        inner = block.get("content")
        if isinstance(inner, list):
            pieces += [
                b["text"]
                for b in inner
                if isinstance(b, dict)
                and b.get("type") == "text"
                and isinstance(b.get("text"), str)
            ]
        return "\n".join(pieces) if pieces else None
    if btype == "tool_reference":
        name = block.get("tool_name")
        return f"Tool {name} is available." if isinstance(name, str) and name else None
    text = block.get("text")
    if isinstance(text, str) and text.strip():
        return text
    log.debug("dropped content block of type %r at %s", btype, path)
    return None


def _image_part(block: dict[str, Any], path: str) -> Part:
    source = block.get("source")
    spath = f"{path}.source"
    if not isinstance(source, dict):
        raise _bad(spath, "image source must be an object of type base64 or url")
    stype = source.get("type")
    if stype == "base64":
        media_type = source.get("media_type")
        data = source.get("data")
        if not isinstance(media_type, str) or not media_type:
            raise _bad(f"{spath}.media_type", "base64 image source needs a media_type")
        if not isinstance(data, str) or not data:
            raise _bad(f"{spath}.data", "base64 image source needs data")
        return {"type": "image_url", "image_url": {"url": f"data:{media_type};base64,{data}"}}
    if stype == "url":
        url = source.get("url")
        if not isinstance(url, str) or not url:
            raise _bad(f"{spath}.url", "url image source needs a url")
        return {"type": "image_url", "image_url": {"url": url}}
    raise _bad(
        spath,
        f"image source type {stype!r} cannot be sent to this model; use base64 or url",
    )


def _document_parts(block: dict[str, Any], path: str) -> list[Part]:
    source = block.get("source")
    spath = f"{path}.source"
    if not isinstance(source, dict):
        raise _bad(spath, "document source must be an object")
    stype = source.get("type")
    title = block.get("title") if isinstance(block.get("title"), str) else None
    if stype == "base64":
        data = source.get("data")
        if not isinstance(data, str) or not data:
            raise _bad(f"{spath}.data", "base64 document source needs data")
        media_type = source.get("media_type")
        if not isinstance(media_type, str) or not media_type:
            media_type = "application/pdf"
        filename = title or "document.pdf"
        if media_type == "application/pdf" and not filename.lower().endswith(".pdf"):
            filename += ".pdf"
        return [
            {
                "type": "file",
                "file": {"filename": filename, "file_data": f"data:{media_type};base64,{data}"},
            }
        ]
    if stype == "text":
        data = source.get("data")
        if not isinstance(data, str):
            raise _bad(f"{spath}.data", "text document source needs data")
        text = f"{title}\n\n{data}" if title else data
        return [{"type": "text", "text": text}] if text.strip() else []
    if stype == "content":
        inner = source.get("content")
        cpath = f"{spath}.content"
        parts: list[Part] = [{"type": "text", "text": title}] if title else []
        for k, item in enumerate(_blocks(inner, cpath)):
            ipath = f"{cpath}.{k}"
            itype = _block_type(item, ipath)
            if itype == "text":
                text = _text_of(item, ipath)
                if text.strip():
                    parts.append({"type": "text", "text": text})
            elif itype == "image":
                parts.append(_image_part(item, ipath))
        return parts
    raise _bad(
        spath,
        f"document source type {stype!r} cannot be sent to this model; "
        "send the document as base64 (PDF) or text",
    )


def _tool_input_args(block: dict[str, Any]) -> str:
    return _compact_json(block.get("input"))


# ------------------------------------------------------------------ message translation


@dataclass
class _User:
    parts: list[Part] = field(default_factory=list)


@dataclass
class _Assistant:
    texts: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)


@dataclass
class _Tool:
    tool_call_id: str
    content: str


_Message: TypeAlias = "_User | _Assistant | _Tool"


class _Translator:
    def __init__(self, target: ChatTarget) -> None:
        self.target = target
        self.system_texts: list[str] = []
        self.out: list[_Message] = []
        # Tool call ids of the latest assistant turn that still wait for their results.
        self.pending: list[str] = []

    # -- system

    def system(self, system: Any) -> None:
        if system is None:
            return
        if isinstance(system, str):
            self._add_system_text(system)
            return
        if not isinstance(system, list):
            raise _bad("system", "must be a string or a list of text blocks")
        self._system_blocks(system, "system")

    def _system_blocks(self, blocks: list[Any], path: str) -> None:
        for j, block in enumerate(blocks):
            bpath = f"{path}.{j}"
            btype = _block_type(block, bpath)
            if btype == "text":
                self._add_system_text(_text_of(block, bpath))
            else:
                text = _fallback_text(block, btype, bpath)
                if text is not None:
                    self._add_system_text(text)

    def _add_system_text(self, text: str) -> None:
        if not text.strip() or text.lstrip().startswith(BILLING_HEADER_PREFIX):
            return
        self.system_texts.append(text)

    # -- messages

    def messages(self, messages: Any) -> None:
        if messages is None:
            raise _bad("messages", "field required")
        if not isinstance(messages, list):
            raise _bad("messages", "must be a list of messages")
        if not messages:
            raise _bad("messages", "at least one message is required")
        for i, message in enumerate(messages):
            path = f"messages.{i}"
            if not isinstance(message, dict):
                raise _bad(path, "message must be an object")
            role = message.get("role")
            if role not in _ROLES:
                raise _bad(
                    f"{path}.role", f"role must be one of user, assistant, system (got {role!r})"
                )
            cpath = f"{path}.content"
            content = message.get("content")
            if role == "system":
                if isinstance(content, str):
                    self._add_system_text(content)
                else:
                    self._system_blocks(_blocks(content, cpath), cpath)
            elif role == "assistant":
                self._assistant(_blocks(content, cpath), cpath)
            else:
                self._user(_blocks(content, cpath), cpath)

    def _answer_pending(self, results: dict[str, str]) -> None:
        for call_id in self.pending:
            self.out.append(_Tool(call_id, results.get(call_id, MISSING_TOOL_RESULT)))
        self.pending = []

    def _assistant(self, blocks: list[Any], path: str) -> None:
        self._answer_pending({})
        turn = _Assistant()
        for j, block in enumerate(blocks):
            bpath = f"{path}.{j}"
            btype = _block_type(block, bpath)
            if btype == "text":
                text = _text_of(block, bpath)
                if text.strip():
                    turn.texts.append(text)
            elif btype == "tool_use":
                call_id = block.get("id")
                name = block.get("name")
                if not isinstance(call_id, str) or not call_id:
                    raise _bad(f"{bpath}.id", "tool_use block needs an id")
                if not isinstance(name, str) or not name:
                    raise _bad(f"{bpath}.name", "tool_use block needs a name")
                turn.tool_calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": _tool_input_args(block)},
                    }
                )
            elif btype == "thinking":
                thinking = block.get("thinking")
                signature = block.get("signature")
                if (
                    self.target.replay_reasoning
                    and isinstance(thinking, str)
                    and isinstance(signature, str)
                    and verify_thinking(thinking, signature, self.target.signing_key)
                ):
                    turn.reasoning.append(thinking)
            elif btype == "redacted_thinking":
                continue
            else:
                extra = _fallback_text(block, btype, bpath)
                if extra is not None:
                    turn.texts.append(extra)
        if not turn.texts and not turn.tool_calls:
            return
        self.out.append(turn)
        self.pending = [call["id"] for call in turn.tool_calls]

    def _user(self, blocks: list[Any], path: str) -> None:
        parts: list[Part] = []
        results: list[tuple[str, dict[str, Any], str]] = []
        for j, block in enumerate(blocks):
            bpath = f"{path}.{j}"
            btype = _block_type(block, bpath)
            if btype == "tool_result":
                call_id = block.get("tool_use_id")
                if not isinstance(call_id, str) or not call_id:
                    raise _bad(f"{bpath}.tool_use_id", "tool_result block needs a tool_use_id")
                results.append((call_id, block, bpath))
            else:
                parts.extend(self._user_parts(block, btype, bpath))

        answered: dict[str, str] = {}
        lead: list[Part] = []  # media from answered results, then orphan results
        orphans: list[Part] = []
        for call_id, block, bpath in results:
            text, media = _tool_result_content(block, bpath)
            if call_id in self.pending and call_id not in answered:
                if media:
                    text = f"{text}\n\n{MEDIA_MOVED_NOTE}" if text else MEDIA_MOVED_NOTE
                    lead.append({"type": "text", "text": f"Output of tool call {call_id}:"})
                    lead.extend(media)
                answered[call_id] = text
            else:
                orphans.append({"type": "text", "text": f"Result of tool call {call_id}:\n{text}"})
                orphans.extend(media)
        self._answer_pending(answered)
        parts = lead + orphans + parts
        if parts:
            self.out.append(_User(parts))

    def _user_parts(self, block: dict[str, Any], btype: str, path: str) -> list[Part]:
        if btype == "text":
            text = _text_of(block, path)
            return [{"type": "text", "text": text}] if text.strip() else []
        if btype == "image":
            return [_image_part(block, path)]
        if btype == "document":
            return _document_parts(block, path)
        if btype in ("thinking", "redacted_thinking", "tool_use"):
            log.debug("dropped %s block in a user turn at %s", btype, path)
            return []
        extra = _fallback_text(block, btype, path)
        return [{"type": "text", "text": extra}] if extra is not None else []

    # -- output

    def finish(self) -> list[dict[str, Any]]:
        self._answer_pending({})
        merged: list[_Message] = []
        for message in self.out:
            last = merged[-1] if merged else None
            if isinstance(message, _User) and isinstance(last, _User):
                last.parts.extend(message.parts)
            elif isinstance(message, _Assistant) and isinstance(last, _Assistant):
                last.texts.extend(message.texts)
                last.tool_calls.extend(message.tool_calls)
                last.reasoning.extend(message.reasoning)
            else:
                merged.append(message)
        if not merged:
            raise _bad("messages", "no message has any non-empty content")
        if isinstance(merged[0], _Assistant):
            merged.insert(0, _User([{"type": "text", "text": LEADING_USER_PLACEHOLDER}]))

        out: list[dict[str, Any]] = []
        if self.system_texts:
            out.append({"role": "system", "content": SYSTEM_SEPARATOR.join(self.system_texts)})
        for message in merged:
            out.append(self._render(message))
        return out

    def _render(self, message: _Message) -> dict[str, Any]:
        if isinstance(message, _Tool):
            return {
                "role": "tool",
                "tool_call_id": message.tool_call_id,
                "content": message.content,
            }
        if isinstance(message, _User):
            if all(part["type"] == "text" for part in message.parts):
                content: Any = TEXT_SEPARATOR.join(part["text"] for part in message.parts)
            else:
                content = message.parts
            return {"role": "user", "content": content}
        rendered: dict[str, Any] = {
            "role": "assistant",
            "content": TEXT_SEPARATOR.join(message.texts) if message.texts else None,
        }
        if message.tool_calls:
            rendered["tool_calls"] = message.tool_calls
        if self.target.replay_reasoning:
            rendered["reasoning_content"] = "".join(message.reasoning)
        return rendered


def _tool_result_content(block: dict[str, Any], path: str) -> tuple[str, list[Part]]:
    """The text of a tool_result and the media (images, PDFs) it carries."""
    content = block.get("content")
    cpath = f"{path}.content"
    texts: list[str] = []
    media: list[Part] = []
    if content is None:
        pass
    elif isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        for k, item in enumerate(content):
            ipath = f"{cpath}.{k}"
            itype = _block_type(item, ipath)
            if itype == "text":
                texts.append(_text_of(item, ipath))
            elif itype == "image":
                media.append(_image_part(item, ipath))
            elif itype == "document":
                for part in _document_parts(item, ipath):
                    if part["type"] == "text":
                        texts.append(part["text"])
                    else:
                        media.append(part)
            else:
                text = _fallback_text(item, itype, ipath)
                if text is not None:
                    texts.append(text)
    else:
        raise _bad(cpath, "must be a string or a list of content blocks")
    text = TOOL_TEXT_SEPARATOR.join(texts)
    if block.get("is_error") is True:
        text = f"{TOOL_ERROR_PREFIX}{text}" if text else TOOL_ERROR_PREFIX.rstrip(": ")
    return text, media


# ------------------------------------------------------------------------- parameters


def _max_tokens(body: dict[str, Any], target: ChatTarget) -> int:
    value = body.get("max_tokens")
    if value is None:
        raise _bad("max_tokens", "field required")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _bad("max_tokens", "must be an integer of at least 1")
    limit = target.max_tokens_limit
    if limit is not None and limit >= 1:
        return min(value, limit)
    return value


def _user_field(user_id: str) -> str:
    """`metadata.user_id` as an OpenAI `user` every known upstream accepts."""
    if _SAFE_USER.fullmatch(user_id):
        return user_id
    return hashlib.sha256(user_id.encode("utf-8", "surrogatepass")).hexdigest()


def _stop(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _bad("stop_sequences", "must be a list of strings")
    stops: list[str] = []
    for k, item in enumerate(value):
        if not isinstance(item, str):
            raise _bad(f"stop_sequences.{k}", "must be a string")
        if item:
            stops.append(item)
    if len(stops) > MAX_STOP_SEQUENCES:
        log.debug("kept %d of %d stop sequences", MAX_STOP_SEQUENCES, len(stops))
    return stops[:MAX_STOP_SEQUENCES]


def _tools(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _bad("tools", "must be a list of tools")
    tools: list[dict[str, Any]] = []
    for i, tool in enumerate(value):
        path = f"tools.{i}"
        if not isinstance(tool, dict):
            raise _bad(path, "tool must be an object")
        ttype = tool.get("type")
        name = tool.get("name")
        schema = tool.get("input_schema")
        if ttype not in (None, "custom") and schema is None:
            raise _bad(
                path,
                f"tool {name!r} is an Anthropic server tool (type {ttype!r}); the target "
                "model cannot run server tools. Remove it, or route this model to Anthropic.",
            )
        if not isinstance(name, str) or not name:
            raise _bad(f"{path}.name", "tool needs a name")
        if not isinstance(schema, dict):
            raise _bad(f"{path}.input_schema", f"tool {name!r} needs an input_schema object")
        function: dict[str, Any] = {"name": name}
        description = tool.get("description")
        if isinstance(description, str):
            function["description"] = description
        function["parameters"] = schema
        tools.append({"type": "function", "function": function})
    return tools


def _refuse_mcp_servers(value: Any) -> None:
    if isinstance(value, list) and value:
        raise _bad(
            "mcp_servers",
            "the target model cannot connect to MCP servers (a server-side Anthropic "
            "feature); define the MCP tools on the client instead",
        )


def _tool_choice(value: Any, tools: list[dict[str, Any]]) -> tuple[Any, bool | None]:
    if value is None:
        return None, None
    if not isinstance(value, dict):
        raise _bad("tool_choice", "must be an object")
    parallel = False if value.get("disable_parallel_tool_use") is True else None
    ctype = value.get("type")
    if ctype == "auto":
        return "auto", parallel
    if ctype == "any":
        return "required", parallel
    if ctype == "none":
        return "none", parallel
    if ctype == "tool":
        name = value.get("name")
        if not isinstance(name, str) or not name:
            raise _bad("tool_choice.name", "tool_choice of type tool needs a name")
        if tools and name not in {tool["function"]["name"] for tool in tools}:
            raise _bad("tool_choice.name", f"no tool named {name!r} in tools")
        return {"type": "function", "function": {"name": name}}, parallel
    log.debug("ignored tool_choice of type %r", ctype)
    return None, parallel


def _reasoning_effort(body: dict[str, Any]) -> str | None:
    thinking = body.get("thinking")
    thinking_type = thinking.get("type") if isinstance(thinking, dict) else None
    if thinking_type == "disabled":
        return None
    output_config = body.get("output_config")
    effort = output_config.get("effort") if isinstance(output_config, dict) else None
    if isinstance(effort, str) and effort in _EFFORTS:
        return _EFFORTS[effort]
    if thinking_type == "enabled" and isinstance(thinking, dict):
        budget = thinking.get("budget_tokens")
        if isinstance(budget, int) and not isinstance(budget, bool):
            if budget <= 4096:
                return "low"
            if budget <= 16384:
                return "medium"
            return "high"
    return None


def _response_format(body: dict[str, Any]) -> dict[str, Any] | None:
    output_config = body.get("output_config")
    fmt = output_config.get("format") if isinstance(output_config, dict) else None
    if fmt is None:
        fmt = body.get("output_format")
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return None
    schema = fmt.get("schema")
    if not isinstance(schema, dict):
        return None
    return {"type": "json_schema", "json_schema": {"name": "output", "schema": schema}}
