"""POST /v1/messages: Anthropic Messages clients, on any upstream kind or passed through."""

from __future__ import annotations

from typing import Any

import orjson

from ... import ids
from ...config import Provider, Route
from ...tokens import estimate_input_tokens
from ...transducers import StreamTransducer
from ..asgi import Scope, header
from ..dialects import DIALECTS
from ..plan import Plan
from ..upstreams import Target, strip_proxy_signatures
from . import Context, parse_request, resolve
from .translated import Factory, translated


def plan(ctx: Context, scope: Scope, body: bytes) -> Plan:
    request = parse_request(body)
    model: str = request["model"]
    provider, route = resolve(ctx.settings, model)
    if provider.kind == "anthropic":
        return passthrough(scope, body, request, provider, route)
    reported_model = route.spoof_model or model
    signing_key = ctx.signing_key
    max_event_bytes = ctx.settings.max_event_bytes

    def build(factory: Factory) -> StreamTransducer:
        # The estimate is only needed for message_start: it runs once the upstream request
        # is on its way.
        return factory(
            ids.message_id(),
            reported_model,
            estimate_input_tokens(request),
            # Always signed: Claude Code keeps only signed thinking, and a conversation may
            # move to a route whose upstream needs its reasoning back.
            signing_key=signing_key,
            max_event_bytes=max_event_bytes,
        )

    # The canonical request is the client's own: the Messages reader is the identity.
    return translated(
        ctx,
        request,
        Target(provider, route, route.model or model, signing_key),
        client="anthropic",
        stream=request.get("stream") is True,
        reported_model=reported_model,
        write_reply=lambda message: message,
        build=build,
        log={"model": model, "provider": provider.name},
    )


def passthrough(
    scope: Scope, body: bytes, request: dict[str, Any], provider: Provider, route: Route
) -> Plan:
    """An Anthropic client on an Anthropic upstream: bytes in and out (re-encoded only when
    the route renames the model or the proxy's own signatures must go)."""
    dialect = DIALECTS[provider.kind]
    reencode = route.model is not None and route.model != request["model"]
    if reencode:
        request["model"] = route.model
    if dialect.strips_proxy_signatures and b"hydra1." in body:
        strip_proxy_signatures(request)
        reencode = True
    if reencode:
        body = orjson.dumps(request)
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
    )
