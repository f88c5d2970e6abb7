"""POST /v1/messages: Anthropic Messages clients, on any upstream kind or passed through."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import orjson

from ... import ids
from ...config import Attempt, request_traits
from ...errors import invalid_request
from ...tokens import estimate_input_tokens
from ...transducers import StreamTransducer
from ..asgi import Scope, header
from ..dialects import DIALECTS
from ..plan import Plan
from ..upstreams import Target, strip_proxy_signatures
from . import Context, Routed, decide, parse_request
from .translated import Factory, translated


def plan(ctx: Context, scope: Scope, body: bytes) -> Routed:
    request = parse_request(body, ctx.settings.max_json_depth)
    if not isinstance(request.get("stream", False), bool):
        # Read as `is True` below: "yes" would silently become a non-streamed request.
        raise invalid_request("stream: must be a boolean", "stream")
    # Counted at most once: by a long_context rule, else by the stream's message_start.
    estimate = functools.cache(lambda: estimate_input_tokens(request))
    traits = request_traits(
        request, client="anthropic", headers=scope["headers"], estimate=estimate
    )
    decision = decide(ctx.settings, traits)

    def build(attempt: Attempt) -> Plan:
        return plan_attempt(ctx, scope, body, request, attempt, decision.reported_model, estimate)

    return Routed(decision, build, stream=request.get("stream") is True)


def plan_attempt(
    ctx: Context,
    scope: Scope,
    body: bytes,
    request: dict[str, Any],
    attempt: Attempt,
    reported_model: str,
    estimate: Callable[[], int],
) -> Plan:
    """The Plan of one attempt: passthrough to an Anthropic upstream, else translated."""
    provider = attempt.provider
    model: str = request["model"]
    if provider.kind == "anthropic":
        return passthrough(scope, body, request, attempt)
    signing_key = ctx.signing_key
    max_event_bytes = ctx.settings.max_event_bytes

    def build(factory: Factory) -> StreamTransducer:
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

    # The canonical request is the client's own: the Messages reader is the identity.
    return translated(
        ctx,
        request,
        Target.of(attempt, signing_key),
        client="anthropic",
        stream=request.get("stream") is True,
        reported_model=reported_model,
        write_reply=lambda message: message,
        build=build,
        log={"model": model},
    )


def passthrough(scope: Scope, body: bytes, request: dict[str, Any], attempt: Attempt) -> Plan:
    """An Anthropic client on an Anthropic upstream: bytes in and out (re-encoded only when
    the attempt renames the model or the proxy's own signatures must go)."""
    provider = attempt.provider
    dialect = DIALECTS[provider.kind]
    if attempt.model != request["model"]:
        request = {**request, "model": attempt.model}  # the request stays shared by attempts
        body = orjson.dumps(request)
    if dialect.strips_proxy_signatures and b"hydra1." in body:
        body = orjson.dumps(strip_proxy_signatures(orjson.loads(body)))
    headers = dialect.headers(provider, accept=None)
    for name in dialect.passthrough_headers:
        value = header(scope, name)
        if value is not None:
            headers[name.decode()] = value.decode("latin-1")
    return Plan(
        url=dialect.url(provider, scope.get("query_string", b"")),
        headers=headers,
        body=body,
        client="anthropic",
        kind="forward",
        log={"model": request["model"]},
    )
