"""POST /v1/responses: OpenAI Responses clients (Codex CLI), on any upstream kind or passed
through to a Responses upstream.

The proxy keeps no conversation state: the reader refuses ``store: true`` and
``previous_response_id`` with a 400 (a Responses upstream, passed through, keeps its own).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from collections.abc import Callable
from typing import Any

import orjson

from ...canonical.content import without_typed
from ...canonical.effort import openai_effort
from ...canonical.target import MessagesTarget
from ...canonical.text_only import without_openai_images
from ...canonical.web_search import RESPONSES_WEB_SEARCH, WEB_SEARCH_TOOL
from ...config.routes import Attempt, RouteDecision, request_traits
from ...ids import response_id as new_response_id
from ...responses.encoder import echo_text, name_table
from ...responses.reasoning import CARRIER_PREFIX, is_carrier
from ...responses.request.reader import Translation, messages_request_from_responses
from ...responses.response.writer import response_from_message
from ...tokens import estimate_input_tokens
from ...transducers import StreamTransducer
from ..exchange import ClientRequest, Exchange
from ..sessions import session_cache_key
from ..upstream_kinds import Factory, Plan, passthrough, route_effort
from ..upstream_kinds import translated as translated_plan

log = logging.getLogger("hydra_proxy.responses")


def read(exchange: Exchange, request: dict[str, Any], body: bytes) -> ClientRequest:
    model: str = request["model"]
    signing_key = exchange.signing_key

    @functools.cache
    def translate(upstream_model: str, max_tokens_limit: int | None) -> Translation:
        return with_web_search(
            messages_request_from_responses(
                request,
                MessagesTarget(
                    model=upstream_model,
                    max_tokens_limit=max_tokens_limit,
                    continuation_key=signing_key,
                ),
            )
        )

    # Routed on the canonical request as the client asked for it (a 400 for a request the
    # reader refuses comes before any routing); each attempt reads it for its own model.
    first = translate(model, None)
    if first.dropped_tools or first.dropped_items:
        log.info(
            "left out of the upstream request: server tools %s, hosted-tool items %s",
            sorted(set(first.dropped_tools)) or "none",
            sorted(set(first.dropped_items)) or "none",
        )
    # Counted at most once: by a long_context rule, else by the stream's first event.
    estimate = functools.cache(lambda: estimate_input_tokens(first.body))
    traits = request_traits(
        first.body, client="responses", headers=exchange.scope["headers"], estimate=estimate
    )

    def plan(decision: RouteDecision, attempt: Attempt) -> Plan:
        if attempt.provider.kind == "responses":
            return _passthrough(body, request, attempt)
        translation = translate(attempt.model, attempt.max_tokens_limit)
        return _translated(exchange, translation, attempt, model, estimate)

    return ClientRequest(traits, first.stream, plan)


def with_web_search(translation: Translation) -> Translation:
    """The reader's translation with the client's web search as the canonical tool (the
    reader leaves every OpenAI-run tool out): upstreams that run it get it, the others
    refuse the request (`canonical.web_search`)."""
    if not any(t in RESPONSES_WEB_SEARCH for t in translation.dropped_tools):
        return translation
    body = dict(translation.body)
    body["tools"] = [*body.get("tools", []), dict(WEB_SEARCH_TOOL)]
    dropped = [t for t in translation.dropped_tools if t not in RESPONSES_WEB_SEARCH]
    return dataclasses.replace(translation, body=body, dropped_tools=dropped)


def _translated(
    exchange: Exchange,
    translation: Translation,
    attempt: Attempt,
    model: str,
    estimate: Callable[[], int],
) -> Plan:
    """The plan of one translated attempt (the Responses reader's output for its model)."""
    worker = exchange.worker
    signing_key = exchange.signing_key
    context = translation.context
    response_id = new_response_id()
    created_at = int(time.time())
    max_event_bytes = worker.settings.max_event_bytes

    def write_reply(message: dict[str, Any]) -> Any:
        return response_from_message(
            message, context, response_id=response_id, created_at=created_at, key=signing_key
        )

    def build(factory: Factory) -> StreamTransducer:
        return factory(
            response_id,
            model,
            created_at,
            estimate(),
            echo=echo_text(context),
            include_encrypted=context.include_encrypted,
            summary=context.summary,
            signing_key=signing_key,
            tool_names=name_table(context.tool_names),
            max_event_bytes=max_event_bytes,
        )

    def session_key() -> str | None:
        return session_cache_key(context.prompt_cache_key, exchange.header)

    body, stream = translation.body, translation.stream
    return translated_plan(
        exchange, body, attempt, "responses", stream, model, write_reply, build, session_key
    )


def _passthrough(body: bytes, request: dict[str, Any], attempt: Attempt) -> Plan:
    """A Responses upstream: the bytes go through unchanged both ways, except the model
    rename, the route's effort, placeholders for images on a text-only upstream and the
    proxy's reasoning carriers (the upstream cannot read them: they hold
    reasoning of another upstream)."""
    model: str = request["model"]
    reencode = attempt.model != model
    request = {**request, "model": attempt.model}  # the request stays shared by attempts
    reasoning = request.get("reasoning")
    asked = reasoning.get("effort") if isinstance(reasoning, dict) else None
    effort = route_effort(attempt, lambda: asked if isinstance(asked, str) else None)
    if effort is not None:
        request["reasoning"] = {
            **(reasoning if isinstance(reasoning, dict) else {}),
            "effort": openai_effort(effort),
        }
        reencode = True
    if CARRIER_PREFIX.encode() in body and isinstance(request.get("input"), list):
        request["input"] = without_typed(
            request["input"], "reasoning", "encrypted_content", is_carrier
        )
        reencode = True
    left_out = 0
    if not attempt.vision:
        request, left_out = without_openai_images(request)
        reencode = reencode or bool(left_out)
    if reencode:
        body = orjson.dumps(request)
    plan = passthrough(attempt, body, model=model)
    if left_out:
        plan.log["images_left_out"] = left_out
    return plan
