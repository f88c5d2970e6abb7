"""OpenAI Chat Completions request -> Anthropic Messages request (SPEC section 4).

Pure translation, no I/O. `messages_request_from_chat` returns a `Translation` (the
Anthropic body plus what the server traces) or raises `ProxyError` (400
``invalid_request_error``) whose `param` is the offending field in OpenAI's notation, e.g.
``messages[2].content[0].image_url.url``; the message starts with the same path. The input
is never modified; the output shares sub-objects with it (tool schemas, the response
format schema), so copy before mutating those.

Decisions where the specification leaves room (each covered by a test):

Validation
  The request is validated as OpenAI would (types, ranges, roles, tool call linkage), and
  everything Claude cannot do is refused with a 400 naming the field: ``n`` other than 1,
  ``logprobs: true``, ``top_logprobs`` > 0, ``audio`` output, ``modalities`` containing
  ``"audio"``, ``input_audio`` parts, ``file_id`` references (the proxy has no access to
  OpenAI's Files API), non-zero ``presence_penalty``/``frequency_penalty``, a non-empty
  ``logit_bias``, ``web_search_options`` (Claude's web search is an Anthropic server tool
  this translation does not turn on), ``custom`` (free-form) tools and tool calls,
  ``allowed_tools`` entries naming unknown tools, and the deprecated
  ``functions``/``function_call`` request fields, ``function_call`` on assistant
  messages and ``role: "function"`` messages (use ``tools``/``tool_calls``).
  Accepted and dropped (harmless OpenAI-only knobs): ``seed``, ``store``, ``metadata``,
  ``service_tier``, ``prompt_cache_key``, ``prompt_cache_retention``, ``verbosity``,
  ``prediction`` (a latency hint; the answer is the same without it),
  ``stream_options.include_obfuscation``, the neutral values of the refused knobs above
  (``n: 1``, ``logprobs: false``, ``top_logprobs: 0``, penalties ``0``, ``logit_bias: {}``,
  ``modalities: ["text"]``), message ``name`` (as Anthropic's own compatibility layer
  does), image ``detail``, tool ``strict``, and unknown top-level fields (debug log).
  ``model`` is not read: the route decides the upstream model (`MessagesTarget.model`).

System text
  Every ``system`` and ``developer`` message, wherever it sits, goes into the top-level
  ``system`` string: the messages' texts (a string, or text parts joined with ``"\\n"``)
  joined with ``"\\n"``, in order, as Anthropic's compatibility layer does.
  Whitespace-only pieces are dropped; no system text is ever sent as a user turn.

User content
  A string -> one text block; parts: ``text`` -> text; ``image_url`` (an object with
  ``url``; a bare string is accepted too) with a ``data:`` URL -> base64 image (jpeg,
  png, gif, webp; ``image/jpg`` is read as jpeg, and when the bytes' magic number names
  another of the four types that one is used, since Anthropic rejects a mismatch); with
  an ``http(s)`` URL -> a URL image source; ``file`` with ``file_data`` (a ``data:`` URL,
  or bare base64 of a PDF) -> a PDF document (base64), a ``text/plain`` document (decoded
  UTF-8 text) or an image; ``filename`` -> the document ``title``. Whitespace-only text
  parts are dropped (Anthropic rejects whitespace-only text blocks) and a user message
  left empty is dropped (Zed drops whitespace-only user messages too).

Assistant content
  ``content`` (string, or ``text``/``refusal`` parts) -> text blocks, then the message's
  ``refusal`` string -> a text block, then ``tool_calls`` -> ``tool_use`` blocks (ids
  verbatim when they match Anthropic's ``[A-Za-z0-9_-]+``; any other id is replaced by
  ``call_`` + 24 hex digits of its SHA-256, the same for the call and its tool message;
  an id that an earlier message already used (clients that number calls per turn) gets
  such a hashed id too, since Anthropic wants ids unique in the request; the same id
  twice in one message is a 400; ``arguments`` a JSON object string, ``""``/whitespace
  -> ``{}``, an object given directly is accepted). An assistant message left with no
  content is dropped.

Reasoning replay (the continuation suffix, `hydra_proxy.continuation`)
  ``reasoning_content`` (else the ``reasoning`` alias) and the text of ``content`` are
  searched for suffixes. Every suffix that verifies with `MessagesTarget.continuation_key`
  restores its ``thinking`` / ``redacted_thinking`` blocks, in order, FIRST in the
  assistant content (those from ``reasoning_content`` before those from ``content``;
  the same blocks replayed in both places are restored once); the reasoning text it covers and the suffix itself are removed, and in ``content`` the
  whitespace that joined them to the visible text is trimmed (text left on both sides of
  a removed span is joined with a blank line). Anything that does not verify is never
  turned into a thinking block: plain reasoning in ``reasoning_content``
  is dropped (never forwarded as text); a suffix marker that does not verify (tampered,
  another key, edited reasoning, or any marker when no key is configured) is cut out
  (just the marker: the reasoning text before it cannot be told apart reliably from the
  visible text, so in ``content`` it stays). Either case counts the assistant message in
  `Translation.skipped_reasoning` and logs at debug level on ``hydra_proxy.continuation``
  (lengths only, never the text). Plain reasoning that Zed replays as ``content`` without
  any suffix cannot be recognised at all and is forwarded as the assistant's text.

Sequence
  Consecutive ``tool`` messages -> one user turn of ``tool_result`` blocks (content: the
  string, or text/image/file parts as blocks; empty content omitted); user messages
  that follow are merged into the same turn after the results (Anthropic requires the
  ``tool_result`` blocks first, so results that arrive after such user text still go
  before it); consecutive same-role turns are merged. A ``tool`` message must answer a
  call of the latest assistant message, once, and every call must be answered before the
  next assistant message (OpenAI enforces both; Anthropic rejects the
  translation otherwise): 400 naming ``tool_call_id`` / the unanswered call's ``id``.
  A conversation that starts with an assistant turn gets a user turn
  ``LEADING_USER_PLACEHOLDER`` before it (Anthropic: "first message must use the user
  role"). Trailing whitespace is removed from a final assistant turn (prefill; Anthropic
  rejects it) and thinking blocks at the end of any assistant turn are removed
  ("The final block in an assistant message cannot be thinking").

Tools
  ``{"type": "function", "function": {name, description, parameters, strict}}`` ->
  ``{name, description, input_schema}``: missing/empty ``parameters`` ->
  ``{"type": "object", "properties": {}}``, a schema without ``type`` gets
  ``"type": "object"``, another ``type`` is a 400; an empty description is omitted;
  duplicate names and names outside Anthropic's ``[A-Za-z0-9_-]{1,128}`` are a 400 (a
  renamed tool could not be mapped back in the response). ``tool_choice``: ``"none"`` -> ``{"type": "none"}``, ``"auto"``
  -> auto, ``"required"`` -> any, a named function -> tool, ``allowed_tools`` -> only
  those tools are sent, with auto/any for its mode; ``none``/``auto`` without tools are
  dropped, ``required``/named without tools are a 400. ``parallel_tool_calls: false`` ->
  ``disable_parallel_tool_use: true`` (on an auto tool choice when none was given; not
  with ``none``).

Parameters
  ``max_completion_tokens`` (preferred) or ``max_tokens`` -> ``max_tokens``, default
  `MessagesTarget.default_max_tokens`, clamped to `MessagesTarget.max_tokens_limit`.
  ``stop`` (string or up to 4 strings) -> ``stop_sequences``; an empty or whitespace-only
  sequence is a 400 (Anthropic rejects it). ``temperature`` 0-2, values above 1 -> 1.
  ``top_p`` 0-1 passed. Claude 4.5+ models reject ``temperature`` together with
  ``top_p``: when both are given, a temperature of exactly 1 (Anthropic's default) is
  dropped, otherwise ``top_p`` is dropped. ``top_k`` (a non-OpenAI extension some
  clients send) is passed when a positive integer. ``user`` (else
  ``safety_identifier``) -> ``metadata.user_id``, verbatim up to 256 characters, else its
  SHA-256 hex digest.

Thinking
  ``reasoning_effort``: ``none``/``minimal`` -> ``{"type": "disabled"}``; ``low``,
  ``medium``, ``high``, ``xhigh``, ``max`` -> ``{"type": "enabled", "budget_tokens": N}``
  with N from `DEFAULT_THINKING_BUDGETS` (2048, 8192, 16384, 32000, 32000) unless
  `MessagesTarget.thinking_budget` names the effort (values below 1024 are raised to
  Anthropic's minimum 1024). An Anthropic-native ``thinking`` object (sent through the
  SDKs' ``extra_body``, as Anthropic's own compatibility layer documents) wins over
  ``reasoning_effort``: ``enabled`` + ``budget_tokens`` and ``disabled`` are used as
  given (``display`` passed), ``adaptive`` is passed on with ``reasoning_effort``
  (low..max) as ``output_config.effort``; ``enabled`` without ``budget_tokens`` (Z.AI's
  shape) takes the budget of ``reasoning_effort``, else of ``medium``. When the budget is
  not below ``max_tokens`` (Anthropic requires ``max_tokens > budget_tokens``),
  ``max_tokens`` becomes budget + the requested (or default) ``max_tokens``, so the
  visible answer keeps its room (OpenAI counts reasoning inside ``max_completion_tokens``;
  Anthropic's budget is what the spec maps effort to, so the answer gets the rest); if the limit clamp
  leaves no room the budget is halved to fit, and thinking is turned off when that is
  below 1024. While thinking is on, ``temperature`` and ``top_k`` are dropped and
  ``top_p`` is raised to at least 0.95 (Anthropic's rules). A forced tool choice
  (``required`` or a named function) turns thinking off (Anthropic rejects both together).
  When thinking is on and the current tool loop (the assistant turns after the last user
  turn without tool results) does not start with a restored thinking block, thinking is
  turned off for this request (``{"type": "disabled"}``, `Translation.thinking_disabled`)
  rather than sending a request Anthropic rejects; a user turn that holds tool results
  and text counts as part of the loop (the safe reading). Thinking the client asked for
  and the proxy turned off is sent as ``{"type": "disabled"}``; with no request for it,
  no ``thinking`` is sent. Whenever thinking is off, thinking blocks are removed from a
  final assistant turn; earlier turns keep theirs (Anthropic accepts and ignores them).

Response format
  ``text`` -> nothing; ``json_schema`` -> ``output_config.format`` ``{type: json_schema,
  schema}`` (``name``/``strict``/``description`` dropped; ``schema`` required);
  ``json_object`` -> Anthropic has no "any JSON object" mode, so
  `JSON_OBJECT_INSTRUCTION` is appended to the system text.

Streaming
  ``body["stream"]`` is set from the ``stream`` argument; `Translation.include_usage` is
  ``stream_options.include_usage`` for streaming requests (``stream_options`` on a
  non-streaming request is ignored).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import math
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from .. import continuation
from ..errors import ProxyError, invalid_request

__all__ = [
    "DEFAULT_THINKING_BUDGETS",
    "JSON_OBJECT_INSTRUCTION",
    "LEADING_USER_PLACEHOLDER",
    "MAX_STOP_SEQUENCES",
    "MIN_THINKING_BUDGET",
    "MessagesTarget",
    "Translation",
    "messages_request_from_chat",
]

log = logging.getLogger(__name__)
trace = logging.getLogger("hydra_proxy.continuation")

MAX_STOP_SEQUENCES = 4
MIN_THINKING_BUDGET = 1024
MAX_USER_ID_CHARS = 256
LEADING_USER_PLACEHOLDER = "(continued)"
JSON_OBJECT_INSTRUCTION = (
    "Respond with a single valid JSON object and nothing else: no prose, no Markdown code fence."
)
DEFAULT_THINKING_BUDGETS: dict[str, int] = {
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 32000,
    "max": 32000,
}
_EFFORTS_OFF = ("none", "minimal")
_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
_MEDIA_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg"}
_BASE64 = re.compile(r"[A-Za-z0-9+/]+")
_WHITESPACE = re.compile(r"\s+")
_TOOL_ID = re.compile(r"[A-Za-z0-9_-]+")
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}")
_MARKER = re.compile(re.escape(continuation.PREFIX) + r"[A-Za-z0-9_.\-]*(?:\]\])?")
_THINKING_TYPES = ("thinking", "redacted_thinking")
_DROPPED_FIELDS = frozenset(
    {
        "model",
        "messages",
        "stream",
        "stream_options",
        "seed",
        "store",
        "metadata",
        "service_tier",
        "prompt_cache_key",
        "prompt_cache_retention",
        "verbosity",
        "prediction",
        "user",
        "safety_identifier",
    }
)

Block = dict[str, Any]


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
    _refuse_unsupported(body)
    include_usage = _include_usage(body, stream)
    requested_max = _max_tokens(body)
    stop = _stop(body.get("stop"))
    temperature = _number(body, "temperature", 0.0, 2.0)
    top_p = _number(body, "top_p", 0.0, 1.0)
    top_k = _top_k(body.get("top_k"))
    tools = _tools(body.get("tools"))
    tools, tool_choice = _tool_choice(body.get("tool_choice"), tools, body)
    thinking, effort = _thinking_request(body, target)
    output_format, json_object = _response_format(body.get("response_format"))
    user_id = _user_id(body)

    builder = _Builder(target.continuation_key)
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
    elif thinking_asked and not _loop_starts_with_thinking(turns):
        trace.debug("thinking turned off: the current tool loop has no restorable thinking")
        thinking = {"type": "disabled"}
        thinking_disabled = True

    max_tokens = requested_max if requested_max is not None else target.default_max_tokens
    if thinking is not None and thinking["type"] == "enabled":
        max_tokens, budget = _fit_budget(thinking["budget_tokens"], max_tokens, target)
        if budget is None:
            log.debug("thinking turned off: max_tokens_limit leaves no room for a budget")
            thinking = {"type": "disabled"}
        else:
            thinking = {**thinking, "budget_tokens": budget}
    if target.max_tokens_limit is not None:
        max_tokens = min(max_tokens, target.max_tokens_limit)

    thinking_on = thinking is not None and thinking["type"] != "disabled"
    if not thinking_on:
        _strip_final_thinking(turns)
    _strip_final_whitespace(turns)
    messages = _finish_turns(turns)
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
        if block["type"] in _THINKING_TYPES
    )
    return Translation(
        body=out,
        restored_blocks=restored,
        skipped_reasoning=builder.skipped,
        thinking_disabled=thinking_disabled,
        include_usage=include_usage,
    )


# ---------------------------------------------------------------------------- helpers


def _bad(path: str, problem: str) -> ProxyError:
    return invalid_request(f"{path}: {problem}", path)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value)


def _refuse_unsupported(body: dict[str, Any]) -> None:
    n = body.get("n")
    if n is not None and (not _is_int(n) or n != 1):
        raise _bad("n", "Claude returns one choice; n must be 1")
    logprobs = body.get("logprobs")
    if logprobs is not None and not isinstance(logprobs, bool):
        raise _bad("logprobs", f"must be a boolean, got {_type_name(logprobs)}")
    if logprobs:
        raise _bad("logprobs", "Claude does not return log probabilities; omit it or send false")
    top_logprobs = body.get("top_logprobs")
    if top_logprobs is not None and (not _is_int(top_logprobs) or top_logprobs != 0):
        raise _bad("top_logprobs", "Claude does not return log probabilities; omit it")
    if body.get("audio") is not None:
        raise _bad("audio", "Claude cannot produce audio output")
    modalities = body.get("modalities")
    if modalities is not None:
        if not isinstance(modalities, list) or not all(isinstance(m, str) for m in modalities):
            raise _bad("modalities", "must be an array of strings")
        for i, modality in enumerate(modalities):
            if modality != "text":
                raise _bad(f"modalities[{i}]", f"Claude can only produce text, not {modality!r}")
    for name in ("presence_penalty", "frequency_penalty"):
        value = body.get(name)
        if value is None:
            continue
        if not _is_number(value) or not -2 <= value <= 2:
            raise _bad(name, "must be a number between -2 and 2")
        if value != 0:
            raise _bad(name, f"Claude has no {name}; omit it or send 0")
    logit_bias = body.get("logit_bias")
    if logit_bias is not None:
        if not isinstance(logit_bias, dict):
            raise _bad("logit_bias", f"must be an object, got {_type_name(logit_bias)}")
        if logit_bias:
            raise _bad("logit_bias", "Claude does not support logit_bias; omit it")
    if body.get("web_search_options") is not None:
        raise _bad(
            "web_search_options",
            "web search is not available through this endpoint; omit web_search_options",
        )
    for name in ("functions", "function_call"):
        if body.get(name) is not None:
            raise _bad(
                name, "deprecated function calling is not supported; use tools and tool_choice"
            )
    for name in ("stream",):
        value = body.get(name)
        if value is not None and not isinstance(value, bool):
            raise _bad(name, f"must be a boolean, got {_type_name(value)}")
    known = _DROPPED_FIELDS | {
        "n",
        "logprobs",
        "top_logprobs",
        "audio",
        "modalities",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "web_search_options",
        "functions",
        "function_call",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "temperature",
        "top_p",
        "top_k",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning_effort",
        "thinking",
        "response_format",
    }
    unknown = [name for name in body if name not in known]
    if unknown:
        log.debug("dropped unknown request fields: %s", ", ".join(sorted(unknown)))


def _include_usage(body: dict[str, Any], stream: bool) -> bool:
    options = body.get("stream_options")
    if options is None:
        return False
    if not isinstance(options, dict):
        raise _bad("stream_options", f"must be an object, got {_type_name(options)}")
    include = options.get("include_usage")
    if include is not None and not isinstance(include, bool):
        raise _bad("stream_options.include_usage", f"must be a boolean, got {_type_name(include)}")
    return stream and include is True


def _max_tokens(body: dict[str, Any]) -> int | None:
    chosen: int | None = None
    for name in ("max_completion_tokens", "max_tokens"):
        value = body.get(name)
        if value is None:
            continue
        if not _is_int(value) or value < 1:
            raise _bad(name, f"must be a positive integer, got {value!r}")
        if chosen is None:
            chosen = value
    return chosen


def _stop(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        items: list[Any] = [value]
        paths = ["stop"]
    elif isinstance(value, list):
        if len(value) > MAX_STOP_SEQUENCES:
            raise _bad("stop", f"at most {MAX_STOP_SEQUENCES} stop sequences, got {len(value)}")
        items = value
        paths = [f"stop[{i}]" for i in range(len(value))]
    else:
        raise _bad("stop", f"must be a string or an array of strings, got {_type_name(value)}")
    out: list[str] = []
    for item, path in zip(items, paths, strict=True):
        if not isinstance(item, str):
            raise _bad(path, f"must be a string, got {_type_name(item)}")
        if not item.strip():
            raise _bad(path, "Claude does not accept empty or whitespace-only stop sequences")
        out.append(item)
    return out


def _number(body: dict[str, Any], name: str, low: float, high: float) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if not _is_number(value):
        raise _bad(name, f"must be a number, got {_type_name(value)}")
    if not low <= value <= high:
        raise _bad(name, f"must be between {low:g} and {high:g}, got {value!r}")
    return value  # type: ignore[no-any-return]


def _top_k(value: Any) -> int | None:
    if value is None:
        return None
    if not _is_int(value) or value < 1:
        raise _bad("top_k", f"must be a positive integer, got {value!r}")
    return value  # type: ignore[no-any-return]


def _user_id(body: dict[str, Any]) -> str | None:
    for name in ("user", "safety_identifier"):
        value = body.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise _bad(name, f"must be a string, got {_type_name(value)}")
        if not value:
            continue
        if len(value) > MAX_USER_ID_CHARS:
            return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
        return value
    return None


# ------------------------------------------------------------------------------- tools


def _tools(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _bad("tools", f"must be an array, got {_type_name(value)}")
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, tool in enumerate(value):
        path = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise _bad(path, f"must be an object, got {_type_name(tool)}")
        ttype = tool.get("type", "function")
        if ttype != "function":
            raise _bad(
                f"{path}.type",
                f"only function tools are supported, not {ttype!r}"
                + (" (Claude has no free-form custom tools)" if ttype == "custom" else ""),
            )
        function = tool.get("function")
        if not isinstance(function, dict):
            raise _bad(f"{path}.function", "required: an object with name and parameters")
        name = function.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
            raise _bad(
                f"{path}.function.name",
                "must be 1-128 characters of letters, digits, '_' and '-'",
            )
        if name in seen:
            raise _bad(f"{path}.function.name", f"duplicate tool name {name!r}")
        seen.add(name)
        converted: dict[str, Any] = {"name": name}
        description = function.get("description")
        if description is not None and not isinstance(description, str):
            raise _bad(f"{path}.function.description", "must be a string")
        if description:
            converted["description"] = description
        converted["input_schema"] = _input_schema(function.get("parameters"), path)
        out.append(converted)
    return out


def _input_schema(parameters: Any, path: str) -> dict[str, Any]:
    if parameters is None or parameters == {}:
        return {"type": "object", "properties": {}}
    if not isinstance(parameters, dict):
        raise _bad(f"{path}.function.parameters", "must be a JSON Schema object")
    schema_type = parameters.get("type")
    if schema_type is None:
        return {"type": "object", **parameters}
    if schema_type != "object":
        raise _bad(
            f"{path}.function.parameters.type",
            f"the parameters schema must be of type 'object', not {schema_type!r}",
        )
    return parameters


def _tool_choice(
    value: Any, tools: list[dict[str, Any]], body: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    parallel = body.get("parallel_tool_calls")
    if parallel is not None and not isinstance(parallel, bool):
        raise _bad("parallel_tool_calls", f"must be a boolean, got {_type_name(parallel)}")
    names = {tool["name"] for tool in tools}
    choice: dict[str, Any] | None
    if value is None:
        choice = None
    elif value in ("none", "auto"):
        choice = {"type": value}
    elif value == "required":
        choice = {"type": "any"}
    elif isinstance(value, str):
        raise _bad("tool_choice", "must be 'none', 'auto', 'required' or a named function")
    elif isinstance(value, dict):
        ctype = value.get("type")
        if ctype == "function":
            function = value.get("function")
            name = function.get("name") if isinstance(function, dict) else None
            if not isinstance(name, str):
                raise _bad("tool_choice.function.name", "required: the name of a function tool")
            if name not in names:
                raise _bad("tool_choice.function.name", f"no tool named {name!r} in tools")
            choice = {"type": "tool", "name": name}
        elif ctype == "allowed_tools":
            tools, choice = _allowed_tools(value.get("allowed_tools"), tools)
        else:
            raise _bad("tool_choice.type", f"unsupported tool choice type {ctype!r}")
    else:
        raise _bad("tool_choice", f"must be a string or an object, got {_type_name(value)}")
    if not tools:
        if choice is not None and choice["type"] in ("any", "tool"):
            raise _bad("tool_choice", "requires tools")
        return tools, None
    if parallel is False and (choice is None or choice["type"] != "none"):
        choice = {"type": "auto"} if choice is None else dict(choice)
        choice["disable_parallel_tool_use"] = True
    return tools, choice


def _allowed_tools(
    value: Any, tools: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    path = "tool_choice.allowed_tools"
    if not isinstance(value, dict):
        raise _bad(path, "required: an object with mode and tools")
    mode = value.get("mode")
    if mode not in ("auto", "required"):
        raise _bad(f"{path}.mode", "must be 'auto' or 'required'")
    allowed = value.get("tools")
    if not isinstance(allowed, list):
        raise _bad(f"{path}.tools", "must be an array")
    by_name = {tool["name"]: tool for tool in tools}
    keep: list[str] = []
    for i, entry in enumerate(allowed):
        function = entry.get("function") if isinstance(entry, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str):
            raise _bad(f"{path}.tools[{i}].function.name", "required")
        if name not in by_name:
            raise _bad(f"{path}.tools[{i}].function.name", f"no tool named {name!r} in tools")
        if name not in keep:
            keep.append(name)
    kept = [tool for tool in tools if tool["name"] in keep]
    return kept, {"type": "auto" if mode == "auto" else "any"}


# ---------------------------------------------------------------------------- thinking


def _thinking_request(
    body: dict[str, Any], target: MessagesTarget
) -> tuple[dict[str, Any] | None, str | None]:
    """The requested `thinking` config (before tool-loop checks) and the effort name."""
    effort = body.get("reasoning_effort")
    if effort is not None and effort not in (*_EFFORTS_OFF, *DEFAULT_THINKING_BUDGETS):
        raise _bad(
            "reasoning_effort", "must be one of none, minimal, low, medium, high, xhigh, max"
        )
    native = body.get("thinking")
    if native is not None:
        known = effort if effort in DEFAULT_THINKING_BUDGETS else None
        return _native_thinking(native, known, target), known
    if effort is None:
        return None, None
    if effort in _EFFORTS_OFF:
        return {"type": "disabled"}, None
    return {"type": "enabled", "budget_tokens": _budget(effort, target)}, effort


def _native_thinking(value: Any, effort: str | None, target: MessagesTarget) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _bad("thinking", f"must be an object, got {_type_name(value)}")
    ttype = value.get("type")
    display = value.get("display")
    if display is not None and display not in ("summarized", "omitted"):
        raise _bad("thinking.display", "must be 'summarized' or 'omitted'")
    out: dict[str, Any]
    if ttype == "enabled":
        budget = value.get("budget_tokens")
        if budget is None:
            budget = _budget(effort if effort in DEFAULT_THINKING_BUDGETS else "medium", target)
        if not isinstance(budget, int) or isinstance(budget, bool) or budget < MIN_THINKING_BUDGET:
            raise _bad("thinking.budget_tokens", f"must be an integer >= {MIN_THINKING_BUDGET}")
        out = {"type": "enabled", "budget_tokens": budget}
    elif ttype == "adaptive":
        out = {"type": "adaptive"}
    elif ttype == "disabled":
        return {"type": "disabled"}
    else:
        raise _bad("thinking.type", "must be 'enabled', 'adaptive' or 'disabled'")
    if display is not None:
        out["display"] = display
    return out


def _budget(effort: str, target: MessagesTarget) -> int:
    budgets = target.thinking_budget or {}
    return max(budgets.get(effort, DEFAULT_THINKING_BUDGETS[effort]), MIN_THINKING_BUDGET)


def _fit_budget(budget: int, max_tokens: int, target: MessagesTarget) -> tuple[int, int | None]:
    """max_tokens and budget_tokens with max_tokens > budget_tokens (None: no room)."""
    if budget >= max_tokens:
        max_tokens = budget + max_tokens
    limit = target.max_tokens_limit
    if limit is not None and max_tokens > limit:
        max_tokens = limit
        if budget >= max_tokens:
            budget = max_tokens // 2
    if budget < MIN_THINKING_BUDGET:
        return max_tokens, None
    return max_tokens, budget


def _loop_starts_with_thinking(turns: list[_Turn]) -> bool:
    """Whether the current tool loop (if any) starts with a thinking block."""
    last_user = -1
    for i, turn in enumerate(turns):
        if turn.role == "user" and not turn.results:
            last_user = i
    loop = [turn for turn in turns[last_user + 1 :] if turn.role == "assistant" and turn.blocks]
    if not loop:
        return True
    return loop[0].blocks[0]["type"] in _THINKING_TYPES


def _strip_final_thinking(turns: list[_Turn]) -> None:
    final = next((t for t in reversed(turns) if t.blocks or t.results), None)
    if final is not None and final.role == "assistant":
        final.blocks = [b for b in final.blocks if b["type"] not in _THINKING_TYPES]


def _strip_final_whitespace(turns: list[_Turn]) -> None:
    final = next((t for t in reversed(turns) if t.blocks or t.results), None)
    if final is None or final.role != "assistant":
        return
    while final.blocks and final.blocks[-1]["type"] == "text":
        text = final.blocks[-1]["text"].rstrip()
        if text:
            final.blocks[-1] = {**final.blocks[-1], "text": text}
            return
        final.blocks.pop()


# ------------------------------------------------------------------------ response format


def _response_format(value: Any) -> tuple[dict[str, Any] | None, bool]:
    if value is None:
        return None, False
    if not isinstance(value, dict):
        raise _bad("response_format", f"must be an object, got {_type_name(value)}")
    rtype = value.get("type")
    if rtype == "text":
        return None, False
    if rtype == "json_object":
        return None, True
    if rtype != "json_schema":
        raise _bad("response_format.type", "must be 'text', 'json_object' or 'json_schema'")
    spec = value.get("json_schema")
    if not isinstance(spec, dict):
        raise _bad("response_format.json_schema", "required: an object with name and schema")
    name = spec.get("name")
    if name is not None and not isinstance(name, str):
        raise _bad("response_format.json_schema.name", "must be a string")
    schema = spec.get("schema")
    if not isinstance(schema, dict):
        raise _bad("response_format.json_schema.schema", "required: a JSON Schema object")
    return {"type": "json_schema", "schema": schema}, False


# ---------------------------------------------------------------------------- messages


@dataclass
class _Turn:
    role: str  # "user" or "assistant"
    blocks: list[Block] = field(default_factory=list)
    results: list[Block] = field(default_factory=list)  # tool_result blocks (user turns)

    def content(self) -> list[Block]:
        return self.results + self.blocks


@dataclass
class _Scan:
    blocks: list[continuation.Block] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)
    broken: int = 0


class _Builder:
    def __init__(self, key: bytes | None) -> None:
        self.key = key
        self.system: list[str] = []
        self.turns: list[_Turn] = []
        self.skipped = 0
        # Calls of the last assistant message not answered yet: id -> (path, sent id).
        self.pending: dict[str, tuple[str, str]] = {}
        self.answered: set[str] = set()
        self.sent_ids: set[str] = set()

    # -- entry points

    def add_messages(self, messages: Any) -> None:
        if messages is None:
            raise _bad("messages", "required: a non-empty array of messages")
        if not isinstance(messages, list):
            raise _bad("messages", f"must be an array, got {_type_name(messages)}")
        if not messages:
            raise _bad("messages", "must contain at least one message")
        for i, message in enumerate(messages):
            path = f"messages[{i}]"
            if not isinstance(message, dict):
                raise _bad(path, f"must be an object, got {_type_name(message)}")
            role = message.get("role")
            if role in ("system", "developer"):
                self._system(message, path)
            elif role == "user":
                self._user(message, path)
            elif role == "assistant":
                self._assistant(message, path)
            elif role == "tool":
                self._tool(message, path)
            elif role == "function":
                raise _bad(
                    f"{path}.role",
                    "role 'function' (deprecated function calling) is not supported; "
                    "use tool messages",
                )
            elif role is None:
                raise _bad(f"{path}.role", "required")
            else:
                raise _bad(
                    f"{path}.role",
                    f"unknown role {role!r}; expected system, developer, user, assistant or tool",
                )
        self._check_answered()

    def finish(self) -> list[_Turn]:
        turns: list[_Turn] = []
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
            placeholder = _Turn("user", [{"type": "text", "text": LEADING_USER_PLACEHOLDER}])
            turns.insert(0, placeholder)
        return turns

    # -- roles

    def _system(self, message: dict[str, Any], path: str) -> None:
        content = message.get("content")
        if isinstance(content, str):
            texts = [content]
        elif isinstance(content, list):
            texts = []
            for j, part in enumerate(content):
                part_path = f"{path}.content[{j}]"
                ptype = _part_type(part, part_path)
                if ptype != "text":
                    raise _bad(
                        f"{part_path}.type",
                        f"{message['role']} messages take only text parts, not {ptype!r}",
                    )
                texts.append(_part_text(part, part_path, "text"))
            texts = ["\n".join(texts)] if texts else []
        else:
            raise _bad(
                f"{path}.content",
                f"must be a string or an array of text parts, got {_type_name(content)}",
            )
        self.system.extend(text for text in texts if text.strip())

    def _user(self, message: dict[str, Any], path: str) -> None:
        content = message.get("content")
        blocks: list[Block]
        if isinstance(content, str):
            blocks = [{"type": "text", "text": content}] if content.strip() else []
        elif isinstance(content, list):
            blocks = []
            for j, part in enumerate(content):
                block = _user_part(part, f"{path}.content[{j}]")
                if block is not None:
                    blocks.append(block)
        else:
            raise _bad(
                f"{path}.content",
                f"must be a string or an array of content parts, got {_type_name(content)}",
            )
        if blocks:
            self._user_turn().blocks.extend(blocks)

    def _tool(self, message: dict[str, Any], path: str) -> None:
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise _bad(f"{path}.tool_call_id", "required: the id of the tool call it answers")
        if call_id not in self.pending:
            problem = (
                "answers this tool call a second time"
                if call_id in self.answered
                else "does not answer a tool call of the preceding assistant message"
            )
            raise _bad(f"{path}.tool_call_id", f"{call_id!r} {problem}")
        _, sent_id = self.pending.pop(call_id)
        self.answered.add(call_id)
        result: Block = {"type": "tool_result", "tool_use_id": sent_id}
        content = message.get("content")
        if isinstance(content, str):
            if content.strip():
                result["content"] = content
        elif isinstance(content, list):
            blocks = []
            for j, part in enumerate(content):
                block = _user_part(part, f"{path}.content[{j}]")
                if block is not None:
                    blocks.append(block)
            if blocks:
                result["content"] = blocks
        elif content is not None:
            raise _bad(
                f"{path}.content",
                f"must be a string or an array of content parts, got {_type_name(content)}",
            )
        self._user_turn().results.append(result)

    def _assistant(self, message: dict[str, Any], path: str) -> None:
        self._check_answered()
        self.answered = set()
        if message.get("function_call") is not None:
            raise _bad(
                f"{path}.function_call",
                "deprecated function calling is not supported; use tool_calls",
            )
        if message.get("audio") is not None:
            raise _bad(f"{path}.audio", "Claude cannot take audio; omit it")
        restored: list[Block] = []
        skipped = False

        reasoning, reasoning_field = None, "reasoning_content"
        for name in ("reasoning_content", "reasoning"):
            value = message.get(name)
            if value is None:
                continue
            if not isinstance(value, str):
                raise _bad(f"{path}.{name}", f"must be a string, got {_type_name(value)}")
            if value and reasoning is None:
                reasoning, reasoning_field = value, name
        if reasoning is not None:
            scan = self._scan(reasoning)
            restored.extend(_anthropic_blocks(scan.blocks))
            rest = "".join(reasoning[a:b] for a, b in _gaps(scan.spans, len(reasoning)))
            if scan.broken or rest.strip():
                skipped = True
                trace.debug(
                    "%s.%s: %d characters of reasoning without a valid continuation "
                    "suffix (%d broken suffix(es)) dropped",
                    path,
                    reasoning_field,
                    len(rest),
                    scan.broken,
                )

        texts = self._assistant_texts(message.get("content"), path)
        if texts:
            joined = "".join(text for text, _ in texts)
            if continuation.PREFIX in joined:
                scan = self._scan(joined)
                # The same blocks replayed both ways (reasoning_content and content) count once.
                from_content = _anthropic_blocks(scan.blocks)
                if from_content != restored:
                    restored.extend(from_content)
                if scan.broken:
                    skipped = True
                    trace.debug(
                        "%s.content: %d continuation suffix(es) that do not verify removed",
                        path,
                        scan.broken,
                    )
                texts = _cut(texts, scan.spans)
        blocks: list[Block] = list(restored)
        blocks.extend({"type": "text", "text": text} for text, _ in texts if text.strip())

        refusal = message.get("refusal")
        if refusal is not None and not isinstance(refusal, str):
            raise _bad(f"{path}.refusal", f"must be a string, got {_type_name(refusal)}")
        if refusal and refusal.strip():
            blocks.append({"type": "text", "text": refusal})

        self.pending = {}
        blocks.extend(self._tool_calls(message.get("tool_calls"), path))
        if skipped:
            self.skipped += 1
        if blocks:
            self.turns.append(_Turn("assistant", blocks))

    # -- pieces

    def _assistant_texts(self, content: Any, path: str) -> list[tuple[str, str]]:
        """(text, path) pieces of an assistant message's content."""
        if content is None:
            return []
        if isinstance(content, str):
            return [(content, f"{path}.content")]
        if not isinstance(content, list):
            raise _bad(
                f"{path}.content",
                f"must be a string, an array of text parts or null, got {_type_name(content)}",
            )
        texts = []
        for j, part in enumerate(content):
            part_path = f"{path}.content[{j}]"
            ptype = _part_type(part, part_path)
            if ptype not in ("text", "refusal"):
                raise _bad(
                    f"{part_path}.type",
                    f"assistant messages take only text and refusal parts, not {ptype!r}",
                )
            texts.append((_part_text(part, part_path, ptype), part_path))
        return texts

    def _tool_calls(self, calls: Any, path: str) -> list[Block]:
        if calls is None:
            return []
        if not isinstance(calls, list):
            raise _bad(f"{path}.tool_calls", f"must be an array, got {_type_name(calls)}")
        blocks: list[Block] = []
        for k, call in enumerate(calls):
            call_path = f"{path}.tool_calls[{k}]"
            if not isinstance(call, dict):
                raise _bad(call_path, f"must be an object, got {_type_name(call)}")
            ctype = call.get("type", "function")
            if ctype != "function":
                raise _bad(
                    f"{call_path}.type", f"only function tool calls are supported, not {ctype!r}"
                )
            call_id = call.get("id")
            if not isinstance(call_id, str) or not call_id:
                raise _bad(f"{call_path}.id", "required: a non-empty string")
            if call_id in self.pending:
                raise _bad(f"{call_path}.id", f"duplicate tool call id {call_id!r} in one message")
            function = call.get("function")
            if not isinstance(function, dict):
                raise _bad(f"{call_path}.function", "required: an object with name and arguments")
            name = function.get("name")
            if not isinstance(name, str) or not name:
                raise _bad(f"{call_path}.function.name", "required: a non-empty string")
            arguments = _arguments(function.get("arguments"), f"{call_path}.function.arguments")
            sent_id = _tool_id(call_id)
            if sent_id in self.sent_ids:
                # An id reused by a later message (some clients number calls per turn):
                # Anthropic wants unique ids, so this occurrence and its result get a new one.
                sent_id = _hashed_id(f"{call_id}\x00{call_path}")
            self.sent_ids.add(sent_id)
            self.pending[call_id] = (f"{call_path}.id", sent_id)
            blocks.append({"type": "tool_use", "id": sent_id, "name": name, "input": arguments})
        return blocks

    def _scan(self, text: str) -> _Scan:
        """Every continuation suffix in `text`: verified blocks, the spans to cut, broken ones."""
        scan = _Scan()
        pos = 0
        while True:
            at = text.find(continuation.PREFIX, pos)
            if at < 0:
                return scan
            found = continuation.find(text[pos:], self.key) if self.key is not None else False
            if isinstance(found, continuation.Found):
                scan.blocks.extend(found.blocks)
                scan.spans.append((pos + found.start, pos + found.end))
                pos += found.end
            else:
                marker = _MARKER.match(text, at)
                end = marker.end() if marker else at + len(continuation.PREFIX)
                scan.spans.append((at, end))
                scan.broken += 1
                pos = end

    def _user_turn(self) -> _Turn:
        if not self.turns or self.turns[-1].role != "user":
            self.turns.append(_Turn("user"))
        return self.turns[-1]

    def _check_answered(self) -> None:
        if self.pending:
            call_path, _ = next(iter(self.pending.values()))
            call_id = next(iter(self.pending))
            raise _bad(
                call_path,
                f"tool call {call_id!r} has no tool message answering it "
                "(each tool call needs a tool message before the next assistant message)",
            )


def _anthropic_blocks(blocks: list[continuation.Block]) -> list[Block]:
    out: list[Block] = []
    for block in blocks:
        if isinstance(block, continuation.Thinking):
            out.append({"type": "thinking", "thinking": block.text, "signature": block.signature})
        else:
            out.append({"type": "redacted_thinking", "data": block.data})
    return out


def _gaps(spans: list[tuple[int, int]], length: int) -> list[tuple[int, int]]:
    """The ranges of [0, length) outside the (sorted, disjoint) spans."""
    gaps = []
    pos = 0
    for start, end in spans:
        if start > pos:
            gaps.append((pos, start))
        pos = max(pos, end)
    if pos < length:
        gaps.append((pos, length))
    return gaps


def _cut(texts: list[tuple[str, str]], spans: list[tuple[int, int]]) -> list[tuple[str, str]]:
    """Remove the spans (offsets into the concatenated texts) from the pieces; the text right
    after a removed span loses its leading whitespace, right before one its trailing, and
    what is left on both sides of a span inside one piece is joined with a blank line."""
    if not spans:
        return texts
    starts = {start for start, _ in spans}
    ends = {end for _, end in spans}
    total = sum(len(text) for text, _ in texts)
    gaps = _gaps(spans, total)
    out: list[tuple[str, str]] = []
    offset = 0
    for text, path in texts:
        lo, hi = offset, offset + len(text)
        offset = hi
        pieces = []
        for start, end in gaps:
            a, b = max(start, lo), min(end, hi)
            if a >= b:
                continue
            piece = text[a - lo : b - lo]
            if a == start and start in ends:
                piece = piece.lstrip()
            if b == end and end in starts:
                piece = piece.rstrip()
            pieces.append(piece)
        out.append(("\n\n".join(p for p in pieces if p), path))
    return out


def _tool_id(call_id: str) -> str:
    return call_id if _TOOL_ID.fullmatch(call_id) else _hashed_id(call_id)


def _hashed_id(seed: str) -> str:
    return "call_" + hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _arguments(value: Any, path: str) -> dict[str, Any]:
    if value is None:
        raise _bad(path, "required: a JSON object as a string")
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        raise _bad(path, f"must be a string holding a JSON object, got {_type_name(value)}")
    if not value.strip():
        return {}
    try:
        parsed = orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise _bad(path, f"is not valid JSON ({exc})") from None
    if not isinstance(parsed, dict):
        raise _bad(path, f"must be a JSON object, got {_type_name(parsed)}")
    return parsed


# ----------------------------------------------------------------------- content parts


def _part_type(part: Any, path: str) -> str:
    if not isinstance(part, dict):
        raise _bad(path, f"must be an object, got {_type_name(part)}")
    ptype = part.get("type")
    if not isinstance(ptype, str) or not ptype:
        raise _bad(f"{path}.type", "required")
    return ptype


def _part_text(part: dict[str, Any], path: str, key: str) -> str:
    text = part.get(key)
    if not isinstance(text, str):
        raise _bad(f"{path}.{key}", f"must be a string, got {_type_name(text)}")
    return text


def _user_part(part: Any, path: str) -> Block | None:
    """A user (or tool) content part as an Anthropic block; None for whitespace-only text."""
    ptype = _part_type(part, path)
    if ptype == "text":
        text = _part_text(part, path, "text")
        return {"type": "text", "text": text} if text.strip() else None
    if ptype == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        url_path = f"{path}.image_url.url" if isinstance(image, dict) else f"{path}.image_url"
        if not isinstance(url, str) or not url:
            raise _bad(url_path, "required: a data: or https URL")
        return _image(url, url_path)
    if ptype == "file":
        return _file(part.get("file"), f"{path}.file")
    if ptype == "input_audio":
        raise _bad(f"{path}.type", "Claude does not accept audio input")
    raise _bad(f"{path}.type", f"unsupported content part type {ptype!r}")


def _data_url(url: str, path: str) -> tuple[str, str]:
    """(media type, base64 data) of a base64 data: URL."""
    header, comma, data = url[5:].partition(",")
    params = [p.strip().lower() for p in header.split(";")]
    if not comma or "base64" not in params[1:]:
        raise _bad(path, "a data: URL must be base64: data:<media type>;base64,<data>")
    clean = _base64(data)
    if clean is None:
        raise _bad(path, "the data: URL does not hold valid base64")
    media = params[0]
    return _MEDIA_ALIASES.get(media, media), clean


def _base64(data: str) -> str | None:
    """Standard base64 without whitespace and with its padding, or None when it is not."""
    data = _WHITESPACE.sub("", data).rstrip("=")
    if not data or not _BASE64.fullmatch(data) or len(data) % 4 == 1:
        return None
    return data + "=" * (-len(data) % 4)


def _sniff(data: str) -> str | None:
    try:
        head = base64.b64decode(data[:24] + "=" * (-len(data[:24]) % 4))
    except (binascii.Error, ValueError):
        return None
    if head.startswith(b"\x89PNG"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith(b"GIF8"):
        return "image/gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith(b"%PDF"):
        return "application/pdf"
    return None


def _image(url: str, path: str) -> Block:
    scheme = url.split(":", 1)[0].lower()
    if scheme in ("http", "https"):
        return {"type": "image", "source": {"type": "url", "url": url}}
    if scheme != "data":
        raise _bad(path, "must be a data: URL or an http(s) URL")
    media, data = _data_url(url, path)
    return _image_block(media, data, path)


def _image_block(media: str, data: str, path: str) -> Block:
    if media not in _IMAGE_TYPES:
        raise _bad(
            path, f"unsupported image type {media!r}; Claude accepts jpeg, png, gif and webp"
        )
    sniffed = _sniff(data)
    if sniffed in _IMAGE_TYPES:
        media = sniffed
    return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}


def _file(value: Any, path: str) -> Block:
    if not isinstance(value, dict):
        raise _bad(path, "required: an object with file_data")
    if value.get("file_id") is not None and value.get("file_data") is None:
        raise _bad(
            f"{path}.file_id",
            "uploaded OpenAI files cannot be read through this proxy; send file_data instead",
        )
    data_path = f"{path}.file_data"
    file_data = value.get("file_data")
    if not isinstance(file_data, str) or not file_data:
        raise _bad(data_path, "required: a data: URL (data:application/pdf;base64,...)")
    filename = value.get("filename")
    if filename is not None and not isinstance(filename, str):
        raise _bad(f"{path}.filename", "must be a string")
    if file_data[:5].lower() == "data:":
        media, data = _data_url(file_data, data_path)
    else:
        bare = _base64(file_data)
        if bare is None or _sniff(bare) != "application/pdf":
            raise _bad(data_path, "must be a data: URL (data:application/pdf;base64,...)")
        media, data = "application/pdf", bare
    block: Block
    if media == "application/pdf":
        block = {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": data},
        }
    elif media == "text/plain":
        try:
            text = base64.b64decode(data).decode("utf-8")
        except (binascii.Error, ValueError):
            raise _bad(data_path, "a text/plain file must be UTF-8") from None
        block = {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": text},
        }
    elif media in _IMAGE_TYPES:
        return _image_block(media, data, data_path)
    else:
        raise _bad(
            data_path,
            f"unsupported file type {media!r}; Claude accepts PDF, plain text and images",
        )
    if filename:
        block["title"] = filename
    return block


def _finish_turns(turns: list[_Turn]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for turn in turns:
        content = turn.content()
        if not content:
            continue
        if messages and messages[-1]["role"] == turn.role:
            messages[-1]["content"].extend(content)
        else:
            messages.append({"role": turn.role, "content": content})
    return messages
