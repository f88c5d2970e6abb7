"""The reply model: a scripted "turn", independent of any wire format.

A turn is a JSON object, e.g.::

    {"reasoning": "Let me look.", "text": "Calling the tool.",
     "tool_calls": [{"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}],
     "finish_reason": "tool_calls",
     "usage": {"prompt_tokens": 120, "completion_tokens": 30, "cached_tokens": 100}}

Fields (all optional):

- ``reasoning`` / ``text``: streamed as reasoning (``reasoning_content`` / a ``thinking``
  block) and text; present-but-empty still opens the block.
- ``tool_calls``: ``[{"id"?, "name", "arguments": object | JSON string}]``; a string is sent
  verbatim (so invalid JSON can be scripted).
- ``finish_reason``: OpenAI vocabulary (``stop``, ``length``, ``tool_calls``,
  ``content_filter``), Anthropic's (``end_turn``...) is accepted too; default ``stop``, or
  ``tool_calls`` when there are tool calls. Unknown values go out verbatim.
- ``usage``: ``{"prompt_tokens", "completion_tokens", "cached_tokens"}``; DeepSeek's
  ``prompt_cache_hit_tokens`` instead of ``cached_tokens`` makes the Chat wire report the
  cache DeepSeek's way (``prompt_cache_hit_tokens`` / ``prompt_cache_miss_tokens``).
- ``error``: ``{"status", "type"?, "message"?, "retry_after"?, "code"?}``: answer with that
  HTTP error in the endpoint's own error format.
- ``stream_error``: ``{"type", "message"}``: a 200 stream whose content is followed by an
  in-stream error instead of the normal ending (non-streaming requests get the HTTP error).
- ``cut``: ``true`` (end the stream after the content, without finish chunk /
  ``message_delta`` / ``message_stop`` / ``[DONE]``) or an integer N (send only the first N
  events). Non-streaming requests get a truncated JSON body.
- ``abort``: ``true``: after the (possibly cut) body, reset the connection instead of
  ending the HTTP response properly.
- ``redacted_thinking`` (list of data strings) and ``signature``: the thinking block's
  signature (Anthropic), the reasoning item's ``encrypted_content`` (Responses; each
  redacted entry one more reasoning item), the ``thoughtSignature`` (Gemini).
- ``partial_args``: ``true``: Gemini streams the tool calls' arguments in pieces
  (``partialArgs``, as Vertex does); other wires ignore it.
- ``web_search``: ``{"query", "results": [{"url", "title"?}]}``: the provider runs one web
  search before the text, in its wire's own form (a Responses ``web_search_call`` item with
  the pages as its ``action.sources``, then ``url_citation`` annotations spanning the text;
  an Anthropic ``server_tool_use`` + ``web_search_tool_result``, then the text with one
  ``web_search_result_location`` citation per page). Other wires ignore it.
- ``replay``: a fixture path or name (see :mod:`hydra_proxy.mock.replay`); all other
  content fields are then ignored.
- ``raw``: a string sent verbatim as a 200 ``text/event-stream`` body (garbage injection).
- Pacing overrides for this turn only: ``chunk_size``, ``delay_ms``, ``jitter_ms``,
  ``ttfb_ms``, ``split_bytes``.
- ``match``: which requests may consume this turn, for clients that send requests of
  their own between the ones a test scripts (Claude Code's background/title/warmup
  calls)::

      {"match": {"model": "claude-*", "has_tools": true, "contains": "hydra-e2e-42"}}

  ``model`` is a glob (:func:`fnmatch.fnmatchcase`) on the request's ``model``;
  ``has_tools`` whether the request has a non-empty ``tools`` list; ``contains`` a string
  (or a list of strings, all required) that must occur in the request body serialized as
  compact JSON (UTF-8, no ASCII escaping, so a JSON string's ``"`` appears as ``\\"``).
  All given conditions must hold. Only the OLDEST queued turn is ever considered: when the
  request does not match it, the request gets the default reply (canned text or
  ``--replay``) and the turn stays queued, so the script keeps its order and unrelated
  requests consume nothing. A turn without ``match`` matches every request.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

DEFAULT_PROMPT_TOKENS = 10
_CANNED_TEXT = (
    "Hello from the hydra-proxy mock upstream. This is the canned streaming reply that "
    "the demo, the tests and the benchmarks use; every delta carries a few characters. "
)

# OpenAI finish_reason <-> Anthropic stop_reason.
_TO_ANTHROPIC = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}
_TO_OPENAI = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


class TurnError(ValueError):
    """A scripted turn that cannot be understood; the message says which field and why."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: str
    """The arguments as JSON text (verbatim when scripted as a string)."""
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int = 0
    # Reported as DeepSeek's prompt_cache_hit_tokens (the Chat wire).
    cache_hit_field: bool = False


@dataclass(frozen=True, slots=True)
class ErrorSpec:
    status: int
    type: str
    message: str
    retry_after: str | None = None
    code: str | None = None


@dataclass(frozen=True, slots=True)
class StreamError:
    type: str
    message: str


@dataclass(frozen=True, slots=True)
class WebSearch:
    """One web search the provider runs: its query and the pages it found (url, title)."""

    query: str
    results: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Pacing:
    """Per-turn overrides of the pacing knobs (None: use the header / CLI value)."""

    chunk_size: int | None = None
    delay_ms: float | None = None
    jitter_ms: float | None = None
    ttfb_ms: float | None = None
    split_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class Match:
    """The condition under which a scripted turn may answer a request (see the module doc)."""

    model: str | None = None
    has_tools: bool | None = None
    contains: tuple[str, ...] = ()

    def accepts(self, body: Mapping[str, Any]) -> bool:
        if self.model is not None:
            model = body.get("model")
            if not isinstance(model, str) or not fnmatch.fnmatchcase(model, self.model):
                return False
        if self.has_tools is not None:
            tools = body.get("tools")
            if (isinstance(tools, list) and len(tools) > 0) is not self.has_tools:
                return False
        if self.contains:
            text = orjson.dumps(body).decode()
            if not all(needle in text for needle in self.contains):
                return False
        return True


@dataclass(frozen=True, slots=True)
class Turn:
    reasoning: str | None = None
    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    usage: Usage | None = None
    error: ErrorSpec | None = None
    stream_error: StreamError | None = None
    cut: bool | int = False
    abort: bool = False
    redacted_thinking: tuple[str, ...] = ()
    signature: str | None = None
    replay: str | None = None
    raw: str | None = None
    pacing: Pacing = field(default_factory=Pacing)
    match: Match | None = None
    partial_args: bool = False
    web_search: WebSearch | None = None

    def accepts(self, body: Mapping[str, Any]) -> bool:
        """Whether this turn may answer a request with this (parsed JSON) body."""
        return self.match is None or self.match.accepts(body)

    def openai_finish_reason(self) -> str:
        if self.finish_reason is None:
            return "tool_calls" if self.tool_calls else "stop"
        return _TO_OPENAI.get(self.finish_reason, self.finish_reason)

    def anthropic_stop_reason(self) -> str:
        if self.finish_reason is None:
            return "tool_use" if self.tool_calls else "end_turn"
        return _TO_ANTHROPIC.get(self.finish_reason, self.finish_reason)


@dataclass(frozen=True, slots=True)
class ResolvedUsage:
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    reasoning_tokens: int
    cache_hit_field: bool = False


def resolve_usage(turn: Turn) -> ResolvedUsage:
    """The turn's usage, with estimates (about 4 characters a token) for what it leaves out."""
    reasoning_tokens = math.ceil(len(turn.reasoning) / 4) if turn.reasoning else 0
    generated = len(turn.text or "") + sum(len(c.name) + len(c.arguments) for c in turn.tool_calls)
    estimate = max(1, reasoning_tokens + math.ceil(generated / 4))
    usage = turn.usage or Usage()
    prompt = DEFAULT_PROMPT_TOKENS if usage.prompt_tokens is None else usage.prompt_tokens
    completion = estimate if usage.completion_tokens is None else usage.completion_tokens
    return ResolvedUsage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_tokens=usage.cached_tokens,
        reasoning_tokens=min(reasoning_tokens, completion),
        cache_hit_field=usage.cache_hit_field,
    )


def split_text(text: str, size: int) -> list[str]:
    """``text`` in pieces of ``size`` characters (code points, never inside one)."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def canned_turn(chunks: int, chunk_size: int) -> Turn:
    """The default reply: a text of exactly ``chunks`` deltas of ``chunk_size`` characters."""
    length = chunks * chunk_size
    repeats = length // len(_CANNED_TEXT) + 1
    return Turn(text=(_CANNED_TEXT * repeats)[:length])


# -- parsing -------------------------------------------------------------------------------

_TURN_KEYS = frozenset(
    {
        "reasoning",
        "text",
        "tool_calls",
        "finish_reason",
        "usage",
        "error",
        "stream_error",
        "cut",
        "abort",
        "redacted_thinking",
        "signature",
        "replay",
        "raw",
        "chunk_size",
        "delay_ms",
        "jitter_ms",
        "ttfb_ms",
        "split_bytes",
        "match",
        "partial_args",
        "web_search",
    }
)
_MATCH_KEYS = frozenset({"model", "has_tools", "contains"})


def _opt_str(obj: Mapping[str, Any], key: str, where: str) -> str | None:
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    raise TurnError(f"{where}.{key} must be a string")


def _opt_int(obj: Mapping[str, Any], key: str, where: str, minimum: int = 0) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise TurnError(f"{where}.{key} must be an integer >= {minimum}")
    return value


def _opt_ms(obj: Mapping[str, Any], key: str, where: str) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 600_000:
        raise TurnError(f"{where}.{key} must be a number of milliseconds in [0, 600000]")
    return float(value)


def _parse_tool_call(obj: object, where: str) -> ToolCall:
    if not isinstance(obj, dict):
        raise TurnError(f"{where} must be an object")
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        raise TurnError(f"{where}.name must be a non-empty string")
    args = obj.get("arguments", {})
    if isinstance(args, str):
        arguments = args
    elif isinstance(args, dict):
        arguments = orjson.dumps(args).decode()
    else:
        raise TurnError(f"{where}.arguments must be an object or a JSON string")
    return ToolCall(name=name, arguments=arguments, id=_opt_str(obj, "id", where))


def _parse_error(obj: object, where: str) -> ErrorSpec:
    if not isinstance(obj, dict):
        raise TurnError(f"{where} must be an object")
    status = obj.get("status")
    if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
        raise TurnError(f"{where}.status must be an HTTP error status (400-599)")
    kind = _opt_str(obj, "type", where) or default_error_type(status)
    retry_after = obj.get("retry_after")
    if isinstance(retry_after, (int, float)) and not isinstance(retry_after, bool):
        retry_after = str(retry_after)
    elif retry_after is not None and not isinstance(retry_after, str):
        raise TurnError(f"{where}.retry_after must be a string or a number")
    return ErrorSpec(
        status=status,
        type=kind,
        message=_opt_str(obj, "message", where) or f"mock {kind}",
        retry_after=retry_after,
        code=_opt_str(obj, "code", where),
    )


def _parse_web_search(obj: object, where: str) -> WebSearch:
    if not isinstance(obj, dict):
        raise TurnError(f"{where} must be an object")
    query = obj.get("query")
    if not isinstance(query, str) or not query:
        raise TurnError(f"{where}.query must be a non-empty string")
    raw = obj.get("results", [])
    if not isinstance(raw, list):
        raise TurnError(f"{where}.results must be a list")
    results = []
    for i, result in enumerate(raw):
        w = f"{where}.results[{i}]"
        if not isinstance(result, dict) or not isinstance(result.get("url"), str):
            raise TurnError(f"{w} must be an object with a url")
        results.append((result["url"], _opt_str(result, "title", w) or ""))
    return WebSearch(query, tuple(results))


def _parse_match(obj: object, where: str) -> Match:
    if not isinstance(obj, dict):
        raise TurnError(f"{where} must be an object")
    unknown = set(obj) - _MATCH_KEYS
    if unknown:
        raise TurnError(f"{where} has unknown field(s): {', '.join(sorted(unknown))}")
    has_tools = obj.get("has_tools")
    if has_tools is not None and not isinstance(has_tools, bool):
        raise TurnError(f"{where}.has_tools must be true or false")
    contains = obj.get("contains", [])
    if isinstance(contains, str):
        contains = [contains]
    if not isinstance(contains, list) or not all(isinstance(c, str) and c for c in contains):
        raise TurnError(f"{where}.contains must be a non-empty string or a list of them")
    return Match(model=_opt_str(obj, "model", where), has_tools=has_tools, contains=tuple(contains))


def parse_turn(obj: object, where: str = "turn") -> Turn:
    """Validate one scripted turn (parsed JSON) into a :class:`Turn`."""
    if not isinstance(obj, dict):
        raise TurnError(f"{where} must be a JSON object")
    unknown = set(obj) - _TURN_KEYS
    if unknown:
        raise TurnError(f"{where} has unknown field(s): {', '.join(sorted(unknown))}")

    raw_calls = obj.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise TurnError(f"{where}.tool_calls must be a list")
    calls = tuple(_parse_tool_call(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(raw_calls))

    usage = None
    raw_usage = obj.get("usage")
    if raw_usage is not None:
        if not isinstance(raw_usage, dict):
            raise TurnError(f"{where}.usage must be an object")
        w = f"{where}.usage"
        usage = Usage(
            prompt_tokens=_opt_int(raw_usage, "prompt_tokens", w),
            completion_tokens=_opt_int(raw_usage, "completion_tokens", w),
            cached_tokens=_opt_int(raw_usage, "cached_tokens", w)
            or _opt_int(raw_usage, "prompt_cache_hit_tokens", w)
            or 0,
            cache_hit_field="prompt_cache_hit_tokens" in raw_usage,
        )

    error = None if obj.get("error") is None else _parse_error(obj["error"], f"{where}.error")

    stream_error = None
    raw_se = obj.get("stream_error")
    if raw_se is not None:
        if not isinstance(raw_se, dict):
            raise TurnError(f"{where}.stream_error must be an object")
        w = f"{where}.stream_error"
        stream_error = StreamError(
            type=_opt_str(raw_se, "type", w) or "overloaded_error",
            message=_opt_str(raw_se, "message", w) or "Overloaded",
        )

    cut = obj.get("cut", False)
    if not isinstance(cut, (bool, int)) or (not isinstance(cut, bool) and cut < 0):
        raise TurnError(f"{where}.cut must be true/false or a number of events >= 0")
    abort = obj.get("abort", False)
    if not isinstance(abort, bool):
        raise TurnError(f"{where}.abort must be true or false")

    partial_args = obj.get("partial_args", False)
    if not isinstance(partial_args, bool):
        raise TurnError(f"{where}.partial_args must be true or false")

    redacted = obj.get("redacted_thinking") or []
    if not isinstance(redacted, list) or not all(isinstance(r, str) for r in redacted):
        raise TurnError(f"{where}.redacted_thinking must be a list of strings")

    return Turn(
        reasoning=_opt_str(obj, "reasoning", where),
        text=_opt_str(obj, "text", where),
        tool_calls=calls,
        finish_reason=_opt_str(obj, "finish_reason", where),
        usage=usage,
        error=error,
        stream_error=stream_error,
        cut=cut,
        abort=abort,
        redacted_thinking=tuple(redacted),
        signature=_opt_str(obj, "signature", where),
        replay=_opt_str(obj, "replay", where),
        raw=_opt_str(obj, "raw", where),
        pacing=Pacing(
            chunk_size=_opt_int(obj, "chunk_size", where, minimum=1),
            delay_ms=_opt_ms(obj, "delay_ms", where),
            jitter_ms=_opt_ms(obj, "jitter_ms", where),
            ttfb_ms=_opt_ms(obj, "ttfb_ms", where),
            split_bytes=_opt_int(obj, "split_bytes", where),
        ),
        match=None if obj.get("match") is None else _parse_match(obj["match"], f"{where}.match"),
        partial_args=partial_args,
        web_search=None
        if obj.get("web_search") is None
        else _parse_web_search(obj["web_search"], f"{where}.web_search"),
    )


def parse_script(obj: object) -> list[Turn]:
    """A ``POST /_mock/script`` body: a list of turns (a single turn object is accepted too)."""
    if isinstance(obj, dict):
        obj = [obj]
    if not isinstance(obj, list):
        raise TurnError("the script must be a JSON list of turn objects")
    return [parse_turn(t, f"turns[{i}]") for i, t in enumerate(obj)]


# -- errors --------------------------------------------------------------------------------

_ERROR_TYPE_BY_STATUS = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_STATUS_BY_ERROR_TYPE = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


def default_error_type(status: int) -> str:
    if status in _ERROR_TYPE_BY_STATUS:
        return _ERROR_TYPE_BY_STATUS[status]
    return "api_error" if status >= 500 else "invalid_request_error"


def error_status(kind: str) -> int:
    """The HTTP status of an (Anthropic-vocabulary) error type; 500 for unknown types."""
    return _STATUS_BY_ERROR_TYPE.get(kind, 500)
