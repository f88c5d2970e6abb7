"""POST /v1/chat/completions: OpenAI Chat clients, on any upstream kind or passed through."""

from __future__ import annotations

import functools
import logging
import time
from typing import Any

import orjson

from ... import ids
from ...canonical.effort import openai_effort
from ...canonical.target import MessagesTarget
from ...canonical.text_only import without_openai_images
from ...canonical.web_search import (
    WEB_SEARCH_TOOL,
    is_openrouter,
    openrouter_plugin,
    runs_chat_web_search,
)
from ...canonical.web_search import refusal as web_search_refusal
from ...chat.request.reader import Translation, messages_request_from_chat
from ...chat.request.reader.thinking import read_thinking
from ...chat.response.writer import chat_completion_from_message
from ...config.routes import Attempt, RequestTraits, RouteDecision, request_traits
from ...errors import ProxyError
from ...tokens import estimate_input_tokens, input_bound
from ...transducers import StreamTransducer
from ...usage.record import client_key_id
from ..checks.admission import session_of
from ..pipeline import upstream_kinds as kinds
from ..pipeline.exchange import ClientRequest, Exchange
from ..pipeline.left_out import NOTICES
from ..pipeline.sessions import session_cache_key

log = logging.getLogger("hydra_proxy.chat")

# Agents known to replay reasoning_content (and so to carry the continuation suffix), by
# their User-Agent: Zed, opencode ("opencode/1.18.33 ai-sdk/..."), Qwen Code
# ("QwenCode/0.24.4 (linux; x64)"). Each resends its whole conversation every turn.
REPLAYING_CLIENTS = (b"zed", b"opencode", b"qwencode")


def known_agent(exchange: Exchange) -> bool:
    """Whether the client is one of `REPLAYING_CLIENTS`."""
    agent = (exchange.header(b"user-agent") or b"").lower()
    return any(name in agent for name in REPLAYING_CLIENTS)


def wants_continuation(exchange: Exchange) -> bool:
    """continuation = auto: clients known to replay reasoning, or a request that opts in."""
    mode = exchange.worker.settings.continuation
    if mode != "auto":
        return mode == "always"
    opt_in = exchange.header(b"x-hydra-continuation")
    if opt_in is not None:
        return opt_in.strip().lower() in (b"1", b"true", b"yes", b"on")
    return known_agent(exchange)


def chat_traits(request: dict[str, Any], exchange: Exchange) -> RequestTraits:
    """The routing traits of a Chat request, read from the fields routing looks at (the
    full translation waits for the attempt; the token estimate translates only if a route
    asks for it)."""
    max_tokens = request.get("max_completion_tokens", request.get("max_tokens"))
    messages = request.get("messages")  # a malformed one gets its 400 from the reader
    images = any(
        isinstance(part, dict) and part.get("type") == "image_url"
        for m in (messages if isinstance(messages, list) else ())
        if isinstance(m, dict) and isinstance(m.get("content"), list)
        for part in m["content"]
    )
    tools = request.get("tools")
    if isinstance(request.get("web_search_options"), dict):
        tools = [*(tools if isinstance(tools, list) else ()), WEB_SEARCH_TOOL]
    view: dict[str, Any] = {
        "model": request["model"],
        "tools": tools,
        "max_tokens": max_tokens,
        "messages": [{"role": "user", "content": [{"type": "image"}]}] if images else [],
    }
    try:
        thinking, effort = read_thinking(request, MessagesTarget(model=request["model"]))
    except ProxyError:
        thinking, effort = None, None  # its 400 comes from the reader, in the attempt
    effort = effort or _asked_effort(request)  # "none" too: a route may match it
    if effort is not None:
        view["output_config"] = {"effort": effort}
    if thinking is not None:
        view["thinking"] = thinking

    @functools.cache
    def canonical() -> dict[str, Any]:
        translated = messages_request_from_chat(
            request, MessagesTarget(model=request["model"]), stream=False
        )
        return translated.body

    return request_traits(
        view,
        client="chat",
        headers=exchange.scope["headers"],
        estimate=lambda: estimate_input_tokens(canonical()),
        bound=lambda: input_bound(canonical()),
    )


def read(exchange: Exchange, request: dict[str, Any], body: bytes) -> ClientRequest:
    def plan(decision: RouteDecision, attempt: Attempt) -> kinds.Plan:
        if attempt.provider.kind == "chat":
            return _passthrough(body, request, attempt)
        return _translated(exchange, request, attempt)

    return ClientRequest(chat_traits(request, exchange), request.get("stream") is True, plan)


def _translated(exchange: Exchange, request: dict[str, Any], attempt: Attempt) -> kinds.Plan:
    worker = exchange.worker
    signing_key = exchange.caller.signing_key
    provider = attempt.provider
    model: str = request["model"]
    key = signing_key if wants_continuation(exchange) else None
    target = MessagesTarget(
        model=attempt.model,
        max_tokens_limit=attempt.max_tokens_limit,
        continuation_key=key,
    )
    stream = request.get("stream") is True

    def session_key() -> str | None:
        return session_cache_key(request.get("prompt_cache_key"), exchange.header)

    # An agent's session resends the same prefix every turn: worth caching.
    cache = known_agent(exchange) or session_key() is not None
    translation = messages_request_from_chat(request, target, stream=stream, cache=cache)
    if translation.skipped_reasoning or translation.thinking_disabled:
        log.debug(
            "continuation: %d restored, %d plain reasoning turns skipped, thinking disabled=%s",
            translation.restored_blocks,
            translation.skipped_reasoning,
            translation.thinking_disabled,
        )
    if translation.thinking_disabled:
        session = session_of(exchange.scope, client_key_id(exchange.caller.client_key))
        NOTICES.thinking_off(session, provider.name, _why_thinking_off(exchange, translation))
    completion_id = ids.completion_id()
    created = int(time.time())
    include_usage = asks_usage(request)
    max_event_bytes = worker.settings.max_event_bytes
    decoder_args = _decoder_args(provider.kind, signing_key)

    def write_reply(message: dict[str, Any]) -> Any:
        return chat_completion_from_message(
            message, completion_id=completion_id, model=model, created=created, continuation_key=key
        )

    def build(factory: kinds.Factory) -> StreamTransducer:
        return factory(
            completion_id,
            model,
            created,
            include_usage=include_usage,
            continuation_key=key,
            max_event_bytes=max_event_bytes,
            **decoder_args,
        )

    reply = kinds.ClientReply("chat", stream, model, write_reply, build)
    return kinds.translated(
        exchange, translation.body, attempt, reply, kinds.SessionHints(session_key)
    )


def _why_thinking_off(exchange: Exchange, translation: Translation) -> str:
    """Why a tool turn's thinking could not be restored, in words a user can act on."""
    if not wants_continuation(exchange):
        return (
            "the client is not known to replay reasoning, so its reasoning carries no "
            "signature (send the header x-hydra-continuation: 1 if it replays "
            "reasoning_content, or set continuation = always)"
        )
    if translation.skipped_reasoning:
        return (
            "the reasoning it replayed did not verify (edited, cut, or signed with "
            "another signing key)"
        )
    return "the client did not replay the reasoning of the turn that called the tool"


def _decoder_args(kind: str, signing_key: bytes) -> dict[str, Any]:
    """The upstream decoder's own constructor arguments (the Chat encoder's are the same for
    every upstream): the Anthropic decoder takes none; the Responses and Gemini decoders
    sign what a client must replay; the Gemini decoder names its tool calls."""
    if kind == "anthropic":
        return {}
    if kind == "gemini":
        return {"signing_key": signing_key, "message_id": ids.message_id()}
    return {"signing_key": signing_key}


def asks_usage(request: dict[str, Any]) -> bool:
    """Whether a Chat client asked for the usage chunk of its stream."""
    options = request.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


class WithoutUsageChunk:
    """A Chat stream without its usage chunk (the one with no choices), for a client that
    did not ask for it: the proxy asks every upstream for usage, to count it. Complete
    lines go on at once; a line cut by the chunk's end waits for its rest."""

    __slots__ = ("_drop_blank", "_partial")

    def __init__(self) -> None:
        self._partial = b""
        self._drop_blank = False  # the blank line that ended a dropped event

    def __call__(self, chunk: bytes) -> bytes:
        data = self._partial + chunk if self._partial else chunk
        end = data.rfind(b"\n") + 1
        self._partial = data[end:]
        if b'"usage":{' not in data and b'"usage": {' not in data and not self._drop_blank:
            return data[:end]
        out: list[bytes] = []
        for line in data[:end].split(b"\n")[:-1]:
            if self._drop_blank and not line.strip():
                self._drop_blank = False
                continue
            self._drop_blank = False
            if line.startswith(b"data:") and _is_usage_chunk(line[5:]):
                self._drop_blank = True
                continue
            out.append(line + b"\n")
        return b"".join(out)


def _is_usage_chunk(data: bytes) -> bool:
    if b'"usage"' not in data:
        return False
    try:
        chunk = orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return (
        isinstance(chunk, dict)
        and chunk.get("choices") == []
        and isinstance(chunk.get("usage"), dict)
    )


def _asked_effort(request: dict[str, Any]) -> str | None:
    """The effort a Chat request names (OpenRouter's ``reasoning.effort`` first)."""
    reasoning = request.get("reasoning")
    asked = reasoning.get("effort") if isinstance(reasoning, dict) else None
    if not isinstance(asked, str):
        asked = request.get("reasoning_effort")
    return asked if isinstance(asked, str) else None


def _passthrough(body: bytes, request: dict[str, Any], attempt: Attempt) -> kinds.Plan:
    """An OpenAI upstream: the bytes go through unchanged both ways (re-encoded only when the
    attempt renames the model, its route sets the effort, a text-only upstream gets
    placeholders for images, web search asked of OpenRouter turns its web plugin on, or a
    stream's usage was not asked for: the proxy asks for it, and keeps it from the client;
    an upstream without search refuses it)."""
    provider = attempt.provider
    search = isinstance(request.get("web_search_options"), dict)
    if search and not runs_chat_web_search(provider.base_url):
        raise web_search_refusal("chat", provider.name, provider.kind)
    effort = kinds.route_effort(attempt, lambda: _asked_effort(request))
    changed, left_out = (request, 0) if attempt.vision else without_openai_images(request)
    plugin = search and is_openrouter(provider.base_url) and "plugins" not in request
    count_usage = request.get("stream") is True and not asks_usage(request)
    if attempt.model != request["model"] or effort is not None or left_out or plugin or count_usage:
        changed = {**changed, "model": attempt.model}
        if count_usage:
            options = request.get("stream_options")
            options = options if isinstance(options, dict) else {}
            changed["stream_options"] = {**options, "include_usage": True}
        if effort is not None:
            changed["reasoning_effort"] = openai_effort(effort)
        if plugin:
            changed["plugins"] = [openrouter_plugin({})]
        body = orjson.dumps(changed)
    plan = kinds.passthrough(attempt, body, model=request["model"])
    if count_usage:
        plan.strip = WithoutUsageChunk()
    if left_out:
        plan.log["images_left_out"] = left_out
    return plan
