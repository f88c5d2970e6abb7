"""Anthropic Messages request (canonical) -> Gemini ``generateContent`` request.

Pure translation, no I/O. `gemini_request_from_messages` returns the request body (the
same body serves ``generateContent`` and ``streamGenerateContent``; `gemini_path` and
`gemini_headers` give the rest of the HTTP request as data) or raises `ProxyError` (400
invalid_request_error) whose message starts with the offending field path, like the Chat
writer (hydra_proxy.chat.request.writer), whose decisions this module shares where
the protocols allow. The input is never modified; the output shares sub-objects with it
(tool inputs as ``args``, base64 data), so copy before mutating those.

System text
  `system` (string or text blocks) and every ``role: "system"`` message, in request order,
  joined with a blank line -> ``systemInstruction: {"parts": [{"text": ...}]}``; Claude
  Code's ``x-anthropic-billing-header`` block and whitespace-only pieces are removed.

Contents
  user -> ``role: "user"``, assistant -> ``role: "model"``; consecutive contents of one
  role are merged; a conversation whose first content would be the model's starts with a
  user ``LEADING_USER_PLACEHOLDER``. No content left -> 400.

User parts
  text -> ``text``; image base64 -> ``inlineData {mimeType, data}``; image URL ->
  ``fileData {fileUri, mimeType}`` (mimeType from the URL's extension, omitted when it
  cannot be told); PDF base64 -> ``inlineData application/pdf``; PDF URL -> ``fileData
  application/pdf``; text/content documents -> text (and images). ``file`` sources (the
  Anthropic Files API) -> 400. Unknown blocks: their ``text`` is kept, else dropped;
  ``search_result`` / ``tool_reference`` rendered as text.

Tool results
  Each ``tool_use`` of an assistant turn is answered, in call order, at the start of the
  next user content by a ``functionResponse {name, response}`` part (the name looked up by
  ``tool_use_id``): ``{"output": text}``, or ``{"error": text}`` for ``is_error: true``
  (the keys Gemini documents for a result and a failure). Text blocks joined with a
  newline, never a JSON dump. Images and PDFs inside a result stay in the same user
  content, right after the function responses, labelled with the call (PITFALLS 15).
  Gemini rejects a function-call turn that is not fully answered, so a call left without
  a result gets ``{"error": MISSING_TOOL_RESULT}``; a result answering no call of the
  preceding turn becomes text. Call ids are not sent (Vertex rejects ``id``; Gemini pairs
  calls and responses by order and name).

Assistant parts
  text -> ``text``; ``tool_use`` -> ``functionCall {name, args}``. A thinking block that
  is a verified Gemini-signature carrier (hydra_proxy.gemini.thought_signature) gives its
  ``thoughtSignature``, byte-exact, to the next text/functionCall part of the turn (or to
  an empty text part when none follows), which is where Gemini put it. Every other
  thinking block (other proxy signatures, Anthropic's) and all ``redacted_thinking`` are
  dropped, never sent as text. A target with ``require_call_signatures`` (Gemini 3) gets
  Google's documented ``skip_thought_signature_validator`` on a turn's first function call
  when it has no signature (history made by another model), instead of a 400.

Tools
  Custom tools -> one ``functionDeclarations`` tool; parameters through
  hydra_proxy.gemini.schema (none when the tool takes no arguments). Anthropic server tools
  (a ``type`` other than ``custom`` and no ``input_schema``) and ``mcp_servers`` -> 400
  naming them: Gemini cannot run them, and dropping them silently would hide it.
  ``tool_choice`` auto/any/tool/none -> ``functionCallingConfig.mode`` AUTO / ANY / ANY +
  ``allowedFunctionNames`` / NONE, only when tools are sent; ``disable_parallel_tool_use``
  has no Gemini equivalent and is ignored. A tool's ``strict`` is dropped: Gemini's
  VALIDATED mode is a preview some models and Vertex reject.

Parameters (``generationConfig``)
  ``max_tokens`` (required, >= 1) -> ``maxOutputTokens`` clamped to the target's limit;
  ``stop_sequences`` -> ``stopSequences`` (empty strings dropped, at most
  `MAX_STOP_SEQUENCES`); ``temperature``, ``top_p`` -> ``topP``, ``top_k`` -> ``topK``.
  Thinking -> ``thinkingConfig`` per the target's ``thinking`` style:
  ``"budget"`` (Gemini 2.5): enabled -> ``thinkingBudget = budget_tokens``; adaptive -> ``-1``
  (dynamic); ``output_config.effort`` wins (`EFFORT_BUDGETS`); budgets clamped to
  ``max_thinking_budget``; disabled -> ``thinkingBudget = min_thinking_budget`` (0; 128 for
  2.5 Pro, which cannot stop thinking).
  ``"level"`` (Gemini 3): effort (or a budget: <= 4096 low, <= 16384 medium, else high) ->
  ``thinkingLevel``, the nearest level the target offers at or above it; adaptive -> no
  level (Gemini's dynamic default); disabled -> the target's lowest level.
  ``"none"``: no thinkingConfig. ``includeThoughts: true`` whenever thinking is enabled or
  adaptive (the summaries become the client's thinking blocks), unless the client asked
  for ``display: "omitted"`` (Claude Code does on some turns): signatures still come back.
  ``output_config.format`` (or ``output_format``) json_schema -> ``responseMimeType:
  application/json`` + ``responseSchema`` (sanitised). ``metadata``, ``cache_control``,
  ``context_management``, ``service_tier`` and unknown fields are dropped.
"""

from __future__ import annotations

import logging
import mimetypes
import re
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlparse

from ..chat.request.common import LEADING_USER_PLACEHOLDER
from ..chat.request.writer.messages import BILLING_HEADER_PREFIX, MISSING_TOOL_RESULT
from ..errors import ProxyError, invalid_request
from .schema import NodeBudget, SchemaTooLarge, function_parameters, gemini_schema
from .thought_signature import SKIP_VALIDATOR, carried_thought_signature

__all__ = [
    "EFFORT_BUDGETS",
    "MAX_STOP_SEQUENCES",
    "GeminiTarget",
    "gemini_headers",
    "gemini_path",
    "gemini_request_from_messages",
    "gemini_target",
]

log = logging.getLogger(__name__)

MAX_STOP_SEQUENCES = 5
SYSTEM_SEPARATOR = "\n\n"
TOOL_TEXT_SEPARATOR = "\n"
MEDIA_NOTE = "[The image/document output of this call follows the function responses.]"

EFFORT_BUDGETS = {"low": 1024, "medium": 8192, "high": 24576, "xhigh": 32768, "max": 32768}
_EFFORT_LEVEL = {"low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}
_LEVEL_ORDER = ("minimal", "low", "medium", "high")
_ROLES = ("user", "assistant", "system")
_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")

Part = dict[str, Any]


@dataclass(frozen=True)
class GeminiTarget:
    """What the Gemini model accepts (from the route/provider configuration)."""

    model: str
    max_output_tokens: int | None = None
    # "budget": thinkingBudget (2.5); "level": thinkingLevel (3); "none": no thinkingConfig.
    thinking: Literal["budget", "level", "none"] = "budget"
    thinking_levels: tuple[str, ...] = ("low", "high")
    max_thinking_budget: int | None = None
    min_thinking_budget: int = 0
    # Gemini 3: a function-call turn without its thoughtSignature is a 400.
    require_call_signatures: bool = False
    # Key for hydra_proxy.signature (the thoughtSignature carrier).
    signing_key: bytes = b""


def gemini_target(model: str, **options: Any) -> GeminiTarget:
    """A target with the defaults of the model's generation (gemini-3: thinkingLevel and
    required call signatures; else thinkingBudget); `options` override them."""
    name = model.rsplit("/", 1)[-1].lower()
    defaults: dict[str, Any] = {}
    if name.startswith("gemini-3"):
        defaults = {"thinking": "level", "require_call_signatures": True}
        if "flash" in name:
            defaults["thinking_levels"] = ("minimal", "low", "medium", "high")
    elif name.startswith("gemini-2.5-pro"):
        defaults = {"min_thinking_budget": 128, "max_thinking_budget": 32768}
    elif name.startswith("gemini-2.5"):
        defaults = {"max_thinking_budget": 24576}
    return GeminiTarget(model=model, **{**defaults, **options})


def gemini_path(model: str, *, stream: bool) -> str:
    """The request path below the API base (``.../v1beta/``) for `model`.

    Raises ValueError for a model name that is not a plain Gemini model id (it goes into
    the URL path).
    """
    resource = (
        model if model.startswith("tunedModels/") else f"models/{model.removeprefix('models/')}"
    )
    if not _MODEL_NAME.fullmatch(resource.split("/", 1)[1]):
        raise ValueError(f"not a Gemini model name: {model!r}")
    if stream:
        return f"{resource}:streamGenerateContent?alt=sse"
    return f"{resource}:generateContent"


def gemini_headers(api_key: str) -> list[tuple[str, str]]:
    """The request headers (the key goes in ``x-goog-api-key``, never in the URL)."""
    return [("content-type", "application/json"), ("x-goog-api-key", api_key)]


def gemini_request_from_messages(body: dict[str, Any], target: GeminiTarget) -> dict[str, Any]:
    """Translate an Anthropic Messages request body into a Gemini generateContent body."""
    if not isinstance(body, dict):
        raise invalid_request("request body must be a JSON object")
    max_tokens = _max_tokens(body, target)
    translator = _Translator(target)
    translator.system(body.get("system"))
    translator.messages(body.get("messages"))
    declarations = _function_declarations(body.get("tools"))
    _refuse_mcp_servers(body.get("mcp_servers"))

    out: dict[str, Any] = {"contents": translator.finish()}
    if translator.system_texts:
        out["systemInstruction"] = {
            "parts": [{"text": SYSTEM_SEPARATOR.join(translator.system_texts)}]
        }
    if declarations:
        out["tools"] = [{"functionDeclarations": declarations}]
        tool_config = _tool_config(body.get("tool_choice"), declarations)
        if tool_config is not None:
            out["toolConfig"] = tool_config

    config: dict[str, Any] = {"maxOutputTokens": max_tokens}
    stop = _stop(body.get("stop_sequences"))
    if stop:
        config["stopSequences"] = stop
    for name, key in (("temperature", "temperature"), ("top_p", "topP")):
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _bad(name, "must be a number")
        config[key] = value
    top_k = body.get("top_k")
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise _bad("top_k", "must be an integer of at least 1")
        config["topK"] = top_k
    thinking = _thinking_config(body, target)
    if thinking is not None:
        config["thinkingConfig"] = thinking
    schema = _response_schema(body)
    if schema is not None:
        config["responseMimeType"] = "application/json"
        config["responseSchema"] = schema
    out["generationConfig"] = config
    return out


# ---------------------------------------------------------------------------- helpers


def _bad(path: str, problem: str) -> ProxyError:
    return invalid_request(f"{path}: {problem}", path)


def _block_type(block: Any, path: str) -> str:
    if not isinstance(block, dict):
        raise _bad(path, "content block must be an object")
    btype = block.get("type")
    if not isinstance(btype, str) or not btype:
        raise _bad(f"{path}.type", "content block type is required")
    return btype


def _blocks(content: Any, path: str) -> list[Any]:
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


def _url_mime_type(url: str) -> str | None:
    guessed, _ = mimetypes.guess_type(urlparse(url).path)
    return guessed


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
        return {"inlineData": {"mimeType": media_type, "data": data}}
    if stype == "url":
        url = source.get("url")
        if not isinstance(url, str) or not url:
            raise _bad(f"{spath}.url", "url image source needs a url")
        file_data: dict[str, str] = {"fileUri": url}
        mime_type = _url_mime_type(url)
        if mime_type is not None and mime_type.startswith("image/"):
            file_data["mimeType"] = mime_type
        return {"fileData": file_data}
    raise _bad(spath, f"image source type {stype!r} cannot be sent to Gemini; use base64 or url")


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
        return [{"inlineData": {"mimeType": media_type, "data": data}}]
    if stype == "url":
        url = source.get("url")
        if not isinstance(url, str) or not url:
            raise _bad(f"{spath}.url", "url document source needs a url")
        return [{"fileData": {"mimeType": "application/pdf", "fileUri": url}}]
    if stype == "text":
        data = source.get("data")
        if not isinstance(data, str):
            raise _bad(f"{spath}.data", "text document source needs data")
        text = f"{title}\n\n{data}" if title else data
        return [{"text": text}] if text.strip() else []
    if stype == "content":
        cpath = f"{spath}.content"
        parts: list[Part] = [{"text": title}] if title else []
        for k, item in enumerate(_blocks(source.get("content"), cpath)):
            ipath = f"{cpath}.{k}"
            itype = _block_type(item, ipath)
            if itype == "text":
                text = _text_of(item, ipath)
                if text.strip():
                    parts.append({"text": text})
            elif itype == "image":
                parts.append(_image_part(item, ipath))
        return parts
    raise _bad(
        spath,
        f"document source type {stype!r} cannot be sent to Gemini; send the document as "
        "base64, a URL or text",
    )


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
                    if "text" in part:
                        texts.append(part["text"])
                    else:
                        media.append(part)
            else:
                text = _fallback_text(item, itype, ipath)
                if text is not None:
                    texts.append(text)
    else:
        raise _bad(cpath, "must be a string or a list of content blocks")
    return TOOL_TEXT_SEPARATOR.join(texts), media


# ------------------------------------------------------------------ message translation


@dataclass
class _Content:
    role: Literal["user", "model"]
    parts: list[Part] = field(default_factory=list)


@dataclass(frozen=True)
class _Call:
    call_id: str
    name: str


class _Translator:
    def __init__(self, target: GeminiTarget) -> None:
        self.target = target
        self.system_texts: list[str] = []
        self.out: list[_Content] = []
        # Calls of the latest model turn that still wait for their function responses.
        self.pending: list[_Call] = []

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
            text = (
                _text_of(block, bpath) if btype == "text" else _fallback_text(block, btype, bpath)
            )
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

    @staticmethod
    def _function_response(name: str, text: str, *, error: bool) -> Part:
        return {
            "functionResponse": {"name": name, "response": {"error" if error else "output": text}}
        }

    def _answer_pending(self) -> None:
        """Synthetic responses for calls the conversation never answered."""
        if self.pending:
            parts = [
                self._function_response(call.name, MISSING_TOOL_RESULT, error=True)
                for call in self.pending
            ]
            self.out.append(_Content("user", parts))
        self.pending = []

    def _assistant(self, blocks: list[Any], path: str) -> None:
        self._answer_pending()
        parts: list[Part] = []
        calls: list[_Call] = []
        signature: str | None = None  # a carried thoughtSignature waiting for its part

        def add(part: Part) -> None:
            nonlocal signature
            if signature is not None:
                part["thoughtSignature"] = signature
                signature = None
            parts.append(part)

        for j, block in enumerate(blocks):
            bpath = f"{path}.{j}"
            btype = _block_type(block, bpath)
            if btype == "text":
                text = _text_of(block, bpath)
                if text.strip() or signature is not None:
                    add({"text": text})
            elif btype == "tool_use":
                call_id = block.get("id")
                name = block.get("name")
                if not isinstance(call_id, str) or not call_id:
                    raise _bad(f"{bpath}.id", "tool_use block needs an id")
                if not isinstance(name, str) or not name:
                    raise _bad(f"{bpath}.name", "tool_use block needs a name")
                args = block.get("input")
                if args is None:
                    args = {}
                if not isinstance(args, dict):
                    raise _bad(f"{bpath}.input", "tool_use input must be an object")
                add({"functionCall": {"name": name, "args": args}})
                calls.append(_Call(call_id, name))
            elif btype == "thinking":
                carried = carried_thought_signature(block, self.target.signing_key)
                if carried is not None:
                    if signature is not None:
                        add({"text": ""})  # two carriers in a row: the first stood alone
                    signature = carried
            elif btype == "redacted_thinking":
                continue
            else:
                extra = _fallback_text(block, btype, bpath)
                if extra is not None:
                    add({"text": extra})
        if signature is not None:
            add({"text": ""})
        if self.target.require_call_signatures:
            first_call = next((p for p in parts if "functionCall" in p), None)
            if first_call is not None and "thoughtSignature" not in first_call:
                first_call["thoughtSignature"] = SKIP_VALIDATOR
        if not parts:
            return
        self.out.append(_Content("model", parts))
        self.pending = calls

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

        by_id = {call.call_id: call for call in self.pending}
        answered: dict[str, Part] = {}
        media_parts: list[Part] = []
        orphans: list[Part] = []
        for call_id, block, bpath in results:
            text, media = _tool_result_content(block, bpath)
            call = by_id.get(call_id)
            if call is not None and call_id not in answered:
                if media:
                    text = f"{text}\n\n{MEDIA_NOTE}" if text else MEDIA_NOTE
                    media_parts.append({"text": f"Output of tool call {call.name} ({call_id}):"})
                    media_parts.extend(media)
                answered[call_id] = self._function_response(
                    call.name, text, error=block.get("is_error") is True
                )
            else:
                if block.get("is_error") is True:
                    text = f"Error: {text}" if text else "Error"
                orphans.append({"text": f"Result of tool call {call_id}:\n{text}"})
                orphans.extend(media)
        responses = [
            answered.get(call.call_id)
            or self._function_response(call.name, MISSING_TOOL_RESULT, error=True)
            for call in self.pending
        ]
        self.pending = []
        parts = responses + media_parts + orphans + parts
        if parts:
            self.out.append(_Content("user", parts))

    def _user_parts(self, block: dict[str, Any], btype: str, path: str) -> list[Part]:
        if btype == "text":
            text = _text_of(block, path)
            return [{"text": text}] if text.strip() else []
        if btype == "image":
            return [_image_part(block, path)]
        if btype == "document":
            return _document_parts(block, path)
        if btype in ("thinking", "redacted_thinking", "tool_use"):
            log.debug("dropped %s block in a user turn at %s", btype, path)
            return []
        extra = _fallback_text(block, btype, path)
        return [{"text": extra}] if extra is not None else []

    # -- output

    def finish(self) -> list[dict[str, Any]]:
        self._answer_pending()
        merged: list[_Content] = []
        for content in self.out:
            if merged and merged[-1].role == content.role:
                merged[-1].parts.extend(content.parts)
            else:
                merged.append(content)
        if not merged:
            raise _bad("messages", "no message has any non-empty content")
        if merged[0].role == "model":
            merged.insert(0, _Content("user", [{"text": LEADING_USER_PLACEHOLDER}]))
        return [{"role": c.role, "parts": c.parts} for c in merged]


# ------------------------------------------------------------------------- parameters


def _max_tokens(body: dict[str, Any], target: GeminiTarget) -> int:
    value = body.get("max_tokens")
    if value is None:
        raise _bad("max_tokens", "field required")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _bad("max_tokens", "must be an integer of at least 1")
    limit = target.max_output_tokens
    if limit is not None and limit >= 1:
        return min(value, limit)
    return value


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


def _function_declarations(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _bad("tools", "must be a list of tools")
    declarations: list[dict[str, Any]] = []
    budget = NodeBudget()  # one for every tool: a bomb in each costs no more than one
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
                f"tool {name!r} is an Anthropic server tool (type {ttype!r}); Gemini cannot "
                "run server tools. Remove it, or route this model to Anthropic.",
            )
        if not isinstance(name, str) or not name:
            raise _bad(f"{path}.name", "tool needs a name")
        if not isinstance(schema, dict):
            raise _bad(f"{path}.input_schema", f"tool {name!r} needs an input_schema object")
        declaration: dict[str, Any] = {"name": name}
        description = tool.get("description")
        if isinstance(description, str) and description:
            declaration["description"] = description
        try:
            parameters = function_parameters(schema, budget)
        except SchemaTooLarge as exc:
            raise _bad(f"{path}.input_schema", f"tool {name!r}: {exc}") from exc
        if parameters is not None:
            declaration["parameters"] = parameters
        declarations.append(declaration)
    return declarations


def _refuse_mcp_servers(value: Any) -> None:
    if isinstance(value, list) and value:
        raise _bad(
            "mcp_servers",
            "Gemini cannot connect to MCP servers (a server-side Anthropic feature); define "
            "the MCP tools on the client instead",
        )


def _tool_config(value: Any, declarations: list[dict[str, Any]]) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _bad("tool_choice", "must be an object")
    ctype = value.get("type")
    config: dict[str, Any]
    if ctype == "auto":
        config = {"mode": "AUTO"}
    elif ctype == "any":
        config = {"mode": "ANY"}
    elif ctype == "none":
        config = {"mode": "NONE"}
    elif ctype == "tool":
        name = value.get("name")
        if not isinstance(name, str) or not name:
            raise _bad("tool_choice.name", "tool_choice of type tool needs a name")
        if name not in {d["name"] for d in declarations}:
            raise _bad("tool_choice.name", f"no tool named {name!r} in tools")
        config = {"mode": "ANY", "allowedFunctionNames": [name]}
    else:
        log.debug("ignored tool_choice of type %r", ctype)
        return None
    return {"functionCallingConfig": config}


def _effort(body: dict[str, Any]) -> str | None:
    output_config = body.get("output_config")
    effort = output_config.get("effort") if isinstance(output_config, dict) else None
    return effort if isinstance(effort, str) and effort in EFFORT_BUDGETS else None


def _budget_effort(budget: int) -> str:
    if budget <= 4096:
        return "low"
    if budget <= 16384:
        return "medium"
    return "high"


def _level(wanted: str, offered: tuple[str, ...]) -> str:
    """The lowest offered level at or above `wanted` (else the highest offered)."""
    rank = _LEVEL_ORDER.index(wanted)
    available = sorted(_LEVEL_ORDER.index(x) for x in offered if x in _LEVEL_ORDER)
    for candidate in available:
        if candidate >= rank:
            return _LEVEL_ORDER[candidate]
    return _LEVEL_ORDER[available[-1]] if available else wanted


def _thinking_config(body: dict[str, Any], target: GeminiTarget) -> dict[str, Any] | None:
    if target.thinking == "none":
        return None
    thinking = body.get("thinking")
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    budget = thinking.get("budget_tokens") if isinstance(thinking, dict) else None
    if isinstance(budget, bool) or not isinstance(budget, int):
        budget = None
    effort = _effort(body)
    config: dict[str, Any] = {}

    if target.thinking == "level":
        levels = target.thinking_levels or ("low", "high")
        if kind == "disabled":
            return {"thinkingLevel": _level("minimal", levels)}
        wanted = _EFFORT_LEVEL[effort] if effort else None
        if wanted is None and kind == "enabled" and budget is not None:
            wanted = _budget_effort(budget)
        if wanted is not None:
            config["thinkingLevel"] = _level(wanted, levels)
    else:
        if kind == "disabled":
            return {"thinkingBudget": target.min_thinking_budget}
        value: int | None = None
        if effort is not None:
            value = EFFORT_BUDGETS[effort]
        elif kind == "enabled" and budget is not None:
            value = budget
        elif kind == "adaptive":
            value = -1
        if value is not None and value >= 0:
            if target.max_thinking_budget is not None:
                value = min(value, target.max_thinking_budget)
            value = max(value, target.min_thinking_budget)
        if value is not None:
            config["thinkingBudget"] = value
    display = thinking.get("display") if isinstance(thinking, dict) else None
    if kind in ("enabled", "adaptive") and display != "omitted":
        config["includeThoughts"] = True
    return config or None


def _response_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    output_config = body.get("output_config")
    fmt = output_config.get("format") if isinstance(output_config, dict) else None
    if fmt is None:
        fmt = body.get("output_format")
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return None
    schema = fmt.get("schema")
    if not isinstance(schema, dict):
        return None
    try:
        return gemini_schema(schema)
    except SchemaTooLarge as exc:
        raise _bad("output_config.format.schema", str(exc)) from exc
