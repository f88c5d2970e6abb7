"""POST /v1/messages: Anthropic Messages clients, on any upstream kind or passed through."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from ... import ids
from ...anthropic.request.reader import messages_request_from_anthropic
from ...anthropic.request.writer import strip_proxy_signatures
from ...anthropic.response.writer import anthropic_message_from_message
from ...canonical.effort import anthropic_thinking, asked_effort
from ...canonical.text_only import without_images
from ...config.routes import Attempt, RouteDecision, counted_once, request_traits
from ...tokens import estimate_input_tokens
from ...transducers import StreamTransducer
from ..pipeline import upstream_kinds as kinds
from ..pipeline.exchange import ClientRequest, Exchange
from ..pipeline.sessions import session_cache_key


def read(exchange: Exchange, request: dict[str, Any], body: bytes) -> ClientRequest:
    request = messages_request_from_anthropic(request)
    # Counted at most once: by a long_context rule, else by the stream's message_start.
    memo = exchange.kept.memo if exchange.kept is not None else None
    estimate = counted_once(lambda: estimate_input_tokens(request, memo))
    headers = exchange.scope["headers"]
    traits = request_traits(
        request, client="anthropic", headers=headers, estimate=estimate, memo=memo
    )

    def plan(decision: RouteDecision, attempt: Attempt) -> kinds.Plan:
        if attempt.provider.kind == "anthropic":
            return _passthrough(exchange, body, request, attempt)
        return _translated(exchange, request, attempt, decision.reported_model, estimate, memo)

    return ClientRequest(traits, request.get("stream") is True, plan)


def _translated(
    exchange: Exchange,
    request: dict[str, Any],
    attempt: Attempt,
    reported_model: str,
    estimate: Callable[[], int],
    memo: dict[Any, Any] | None,
) -> kinds.Plan:
    worker = exchange.worker
    signing_key = exchange.caller.signing_key
    max_event_bytes = worker.settings.max_event_bytes

    def build(factory: kinds.Factory) -> StreamTransducer:
        # The estimate is only needed for message_start: it runs once the upstream request
        # is on its way.
        return factory(
            ids.message_id(),
            reported_model,
            estimate(),
            # Always signed: Claude Code keeps only signed thinking, and a conversation may
            # move to a route whose upstream needs its reasoning back.
            signing_key=signing_key,
            max_event_bytes=max_event_bytes,
        )

    def session_key() -> str | None:
        return session_cache_key(None, exchange.header)

    stream = request.get("stream") is True
    reply = kinds.ClientReply(
        "anthropic", stream, reported_model, anthropic_message_from_message, build, request["model"]
    )
    return kinds.translated(
        exchange, request, attempt, reply, kinds.SessionHints(session_key, memo)
    )


def _passthrough(
    exchange: Exchange, body: bytes, request: dict[str, Any], attempt: Attempt
) -> kinds.Plan:
    """An Anthropic upstream: bytes in and out (re-encoded only when the attempt renames the
    model, its route sets the effort, a text-only upstream gets placeholders for images, or
    the proxy's own signatures must go)."""
    model: str = request["model"]
    effort = kinds.route_effort(attempt, lambda: asked_effort(request))
    left_out = 0
    if not attempt.vision:
        request, left_out = without_images(request)
    if attempt.model != model or effort is not None or left_out:
        request = {**request, "model": attempt.model}  # the request stays shared by attempts
        if effort is not None:
            request = anthropic_thinking(request, effort, attempt.max_tokens_limit)
        body = orjson.dumps(request)
    if kinds.DIALECTS[attempt.provider.kind].strips_proxy_signatures and b"hydra1." in body:
        body = orjson.dumps(strip_proxy_signatures(orjson.loads(body)))
    plan = kinds.passthrough(
        attempt,
        body,
        model=model,
        client_header=exchange.header,
        query=exchange.scope.get("query_string", b""),
    )
    if left_out:
        plan.log["images_left_out"] = left_out
    return plan
