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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson

from ..chat.mapping import FINISH_REASONS, STOP_REASONS
from ..errors import status_class

DEFAULT_PROMPT_TOKENS = 10
_Parsed = TypeVar("_Parsed")
_CANNED_TEXT = (
    "Hello from the hydra-proxy mock upstream. This is the canned streaming reply that "
    "the demo, the tests and the benchmarks use; every delta carries a few characters. "
)


class ScriptError(ValueError):
    """A scripted turn that cannot be understood; the message says which field and why."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: str
    """The arguments as JSON text (verbatim when scripted as a string)."""
    id: str | None = None


@dataclass(frozen=True, slots=True)
class ScriptedUsage:
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
class ScriptedWebSearch:
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
class ScriptedReply:
    """One reply of a mock's script (a "turn" of the script's JSON): what the mock answers
    the next request it accepts with, in the wire of the endpoint asked."""

    reasoning: str | None = None
    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    usage: ScriptedUsage | None = None
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
    web_search: ScriptedWebSearch | None = None

    def accepts(self, body: Mapping[str, Any]) -> bool:
        """Whether this turn may answer a request with this (parsed JSON) body."""
        return self.match is None or self.match.accepts(body)

    def chat_finish_reason(self) -> str:
        if self.finish_reason is None:
            return "tool_calls" if self.tool_calls else "stop"
        return FINISH_REASONS.get(self.finish_reason, self.finish_reason)

    def anthropic_stop_reason(self) -> str:
        if self.finish_reason is None:
            return "tool_use" if self.tool_calls else "end_turn"
        return STOP_REASONS.get(self.finish_reason, self.finish_reason)


@dataclass(frozen=True, slots=True)
class ResolvedUsage:
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    reasoning_tokens: int
    cache_hit_field: bool = False


def resolve_usage(turn: ScriptedReply) -> ResolvedUsage:
    """The turn's usage, with estimates (about 4 characters a token) for what it leaves out."""
    reasoning_tokens = math.ceil(len(turn.reasoning) / 4) if turn.reasoning else 0
    generated = len(turn.text or "") + sum(len(c.name) + len(c.arguments) for c in turn.tool_calls)
    estimate = max(1, reasoning_tokens + math.ceil(generated / 4))
    usage = turn.usage or ScriptedUsage()
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


def canned_reply(chunks: int, chunk_size: int) -> ScriptedReply:
    """The default reply: a text of exactly ``chunks`` deltas of ``chunk_size`` characters."""
    length = chunks * chunk_size
    repeats = length // len(_CANNED_TEXT) + 1
    return ScriptedReply(text=(_CANNED_TEXT * repeats)[:length])


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


def _object(obj: object, where: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise ScriptError(f"{where} must be an object")
    return obj


def _name(obj: Mapping[str, Any], key: str, where: str) -> str:
    """A required, non-empty string field."""
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        raise ScriptError(f"{where}.{key} must be a non-empty string")
    return value


def _opt_str(obj: Mapping[str, Any], key: str, where: str) -> str | None:
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    raise ScriptError(f"{where}.{key} must be a string")


def _opt_int(obj: Mapping[str, Any], key: str, where: str, minimum: int = 0) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ScriptError(f"{where}.{key} must be an integer >= {minimum}")
    return value


def _flag(obj: Mapping[str, Any], key: str, where: str) -> bool:
    value = obj.get(key, False)
    if not isinstance(value, bool):
        raise ScriptError(f"{where}.{key} must be true or false")
    return value


def _opt_parsed(
    obj: Mapping[str, Any], key: str, where: str, parse: Callable[[object, str], _Parsed]
) -> _Parsed | None:
    """``parse`` of the field at ``key`` (where ``where.key``), None when absent or null."""
    value = obj.get(key)
    return None if value is None else parse(value, f"{where}.{key}")


def _opt_ms(obj: Mapping[str, Any], key: str, where: str) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 600_000:
        raise ScriptError(f"{where}.{key} must be a number of milliseconds in [0, 600000]")
    return float(value)


def _parse_tool_call(value: object, where: str) -> ToolCall:
    obj = _object(value, where)
    name = _name(obj, "name", where)
    args = obj.get("arguments", {})
    if isinstance(args, str):
        arguments = args
    elif isinstance(args, dict):
        arguments = orjson.dumps(args).decode()
    else:
        raise ScriptError(f"{where}.arguments must be an object or a JSON string")
    return ToolCall(name=name, arguments=arguments, id=_opt_str(obj, "id", where))


def _parse_usage(value: object, where: str) -> ScriptedUsage:
    obj = _object(value, where)
    return ScriptedUsage(
        prompt_tokens=_opt_int(obj, "prompt_tokens", where),
        completion_tokens=_opt_int(obj, "completion_tokens", where),
        cached_tokens=_opt_int(obj, "cached_tokens", where)
        or _opt_int(obj, "prompt_cache_hit_tokens", where)
        or 0,
        cache_hit_field="prompt_cache_hit_tokens" in obj,
    )


def _parse_stream_error(value: object, where: str) -> StreamError:
    obj = _object(value, where)
    return StreamError(
        type=_opt_str(obj, "type", where) or "overloaded_error",
        message=_opt_str(obj, "message", where) or "Overloaded",
    )


def _parse_error(value: object, where: str) -> ErrorSpec:
    obj = _object(value, where)
    status = obj.get("status")
    if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
        raise ScriptError(f"{where}.status must be an HTTP error status (400-599)")
    kind = _opt_str(obj, "type", where) or default_error_type(status)
    retry_after = obj.get("retry_after")
    if isinstance(retry_after, (int, float)) and not isinstance(retry_after, bool):
        retry_after = str(retry_after)
    elif retry_after is not None and not isinstance(retry_after, str):
        raise ScriptError(f"{where}.retry_after must be a string or a number")
    return ErrorSpec(
        status=status,
        type=kind,
        message=_opt_str(obj, "message", where) or f"mock {kind}",
        retry_after=retry_after,
        code=_opt_str(obj, "code", where),
    )


def _parse_web_search(value: object, where: str) -> ScriptedWebSearch:
    obj = _object(value, where)
    query = _name(obj, "query", where)
    raw = obj.get("results", [])
    if not isinstance(raw, list):
        raise ScriptError(f"{where}.results must be a list")
    results = []
    for i, result in enumerate(raw):
        w = f"{where}.results[{i}]"
        if not isinstance(result, dict) or not isinstance(result.get("url"), str):
            raise ScriptError(f"{w} must be an object with a url")
        results.append((result["url"], _opt_str(result, "title", w) or ""))
    return ScriptedWebSearch(query, tuple(results))


def _parse_match(value: object, where: str) -> Match:
    obj = _object(value, where)
    unknown = set(obj) - _MATCH_KEYS
    if unknown:
        raise ScriptError(f"{where} has unknown field(s): {', '.join(sorted(unknown))}")
    has_tools = obj.get("has_tools")
    if has_tools is not None and not isinstance(has_tools, bool):
        raise ScriptError(f"{where}.has_tools must be true or false")
    contains = obj.get("contains", [])
    if isinstance(contains, str):
        contains = [contains]
    if not isinstance(contains, list) or not all(isinstance(c, str) and c for c in contains):
        raise ScriptError(f"{where}.contains must be a non-empty string or a list of them")
    return Match(model=_opt_str(obj, "model", where), has_tools=has_tools, contains=tuple(contains))


def parse_reply(obj: object, where: str = "turn") -> ScriptedReply:
    """Validate one scripted turn (parsed JSON) into a :class:`ScriptedReply`."""
    if not isinstance(obj, dict):
        raise ScriptError(f"{where} must be a JSON object")
    unknown = set(obj) - _TURN_KEYS
    if unknown:
        raise ScriptError(f"{where} has unknown field(s): {', '.join(sorted(unknown))}")

    raw_calls = obj.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise ScriptError(f"{where}.tool_calls must be a list")
    calls = tuple(_parse_tool_call(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(raw_calls))

    cut = obj.get("cut", False)
    if not isinstance(cut, (bool, int)) or (not isinstance(cut, bool) and cut < 0):
        raise ScriptError(f"{where}.cut must be true/false or a number of events >= 0")

    redacted = obj.get("redacted_thinking") or []
    if not isinstance(redacted, list) or not all(isinstance(r, str) for r in redacted):
        raise ScriptError(f"{where}.redacted_thinking must be a list of strings")

    return ScriptedReply(
        reasoning=_opt_str(obj, "reasoning", where),
        text=_opt_str(obj, "text", where),
        tool_calls=calls,
        finish_reason=_opt_str(obj, "finish_reason", where),
        usage=_opt_parsed(obj, "usage", where, _parse_usage),
        error=_opt_parsed(obj, "error", where, _parse_error),
        stream_error=_opt_parsed(obj, "stream_error", where, _parse_stream_error),
        cut=cut,
        abort=_flag(obj, "abort", where),
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
        match=_opt_parsed(obj, "match", where, _parse_match),
        partial_args=_flag(obj, "partial_args", where),
        web_search=_opt_parsed(obj, "web_search", where, _parse_web_search),
    )


def parse_script(obj: object) -> list[ScriptedReply]:
    """A ``POST /_mock/script`` body: a list of turns (a single turn object is accepted too)."""
    if isinstance(obj, dict):
        obj = [obj]
    if not isinstance(obj, list):
        raise ScriptError("the script must be a JSON list of turn objects")
    return [parse_reply(t, f"turns[{i}]") for i, t in enumerate(obj)]


# -- errors --------------------------------------------------------------------------------


def default_error_type(status: int) -> str:
    """The error type of a scripted status that names none: the proxy's class of that
    status, except that a 408 stays a plain client error, as the mock has always sent it."""
    return "invalid_request_error" if status == 408 else status_class(status)
