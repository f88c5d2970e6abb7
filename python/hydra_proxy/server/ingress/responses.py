"""POST /v1/responses: OpenAI Responses clients (Codex CLI), on any upstream kind or passed
through to a Responses upstream.

The proxy keeps no conversation state: the reader refuses ``store: true`` and
``previous_response_id`` with a 400 (a Responses upstream, passed through, keeps its own).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import orjson

from ...chat.request.reader import MessagesTarget
from ...config import Provider, Route
from ...responses.encoder import echo_text, name_table
from ...responses.reasoning import CARRIER_PREFIX, is_carrier
from ...responses.request_reader import messages_request_from_responses
from ...responses.response import new_response_id, response_from_message
from ...tokens import estimate_input_tokens
from ...transducers import StreamTransducer
from ..asgi import Scope
from ..dialects import DIALECTS
from ..plan import Plan
from ..upstreams import Target
from . import Context, parse_request, resolve
from .translated import Factory, translated

log = logging.getLogger("hydra_proxy.responses")


def plan(ctx: Context, scope: Scope, body: bytes) -> Plan:
    request = parse_request(body)
    model: str = request["model"]
    provider, route = resolve(ctx.settings, model, param="model")
    if provider.kind == "responses":
        return passthrough(body, request, provider, route)
    signing_key = ctx.signing_key
    translation = messages_request_from_responses(
        request,
        MessagesTarget(
            model=route.model or model,
            max_tokens_limit=route.max_tokens_limit or provider.max_tokens_limit,
            continuation_key=signing_key,
        ),
    )
    if translation.dropped_tools or translation.dropped_items:
        # Codex always sends web_search: the upstream cannot run it, Codex works without it.
        log.info(
            "left out of the upstream request: server tools %s, hosted-tool items %s",
            sorted(set(translation.dropped_tools)) or "none",
            sorted(set(translation.dropped_items)) or "none",
        )
    context = translation.context
    canonical = translation.body
    response_id = new_response_id()
    created_at = int(time.time())
    max_event_bytes = ctx.settings.max_event_bytes

    def write_reply(message: dict[str, Any]) -> Any:
        return response_from_message(
            message, context, response_id=response_id, created_at=created_at, key=signing_key
        )

    def build(factory: Factory) -> StreamTransducer:
        return factory(
            response_id,
            model,
            created_at,
            estimate_input_tokens(canonical),
            echo=echo_text(context),
            include_encrypted=context.include_encrypted,
            summary=context.summary,
            signing_key=signing_key,
            tool_names=name_table(context.tool_names),
            max_event_bytes=max_event_bytes,
        )

    return translated(
        ctx,
        canonical,
        Target(provider, route, route.model or model, signing_key),
        client="responses",
        stream=translation.stream,
        reported_model=model,
        write_reply=write_reply,
        build=build,
        log={"model": model, "provider": provider.name},
    )


def passthrough(body: bytes, request: dict[str, Any], provider: Provider, route: Route) -> Plan:
    """A Responses client on a Responses upstream: the bytes go through unchanged both ways,
    except the model rename and the proxy's reasoning carriers (the upstream cannot read
    them: they hold reasoning of another upstream)."""
    reencode = route.model is not None and route.model != request["model"]
    if reencode:
        request["model"] = route.model
    if CARRIER_PREFIX.encode() in body and isinstance(request.get("input"), list):
        request["input"] = [
            item
            for item in request["input"]
            if not (
                isinstance(item, dict)
                and item.get("type") == "reasoning"
                and is_carrier(item.get("encrypted_content"))
            )
        ]
        reencode = True
    if reencode:
        body = orjson.dumps(request)
    dialect = DIALECTS[provider.kind]
    return Plan(
        url=dialect.url(provider),
        headers=dialect.headers(provider, accept=None),
        body=body,
        client="responses",
        kind="forward",
    )
