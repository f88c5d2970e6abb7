"""POST /v1beta/models/{model}:generateContent and :streamGenerateContent: Gemini API
clients (Gemini CLI, the google-genai SDKs), on any upstream kind or passed through to a
Gemini upstream.

The model is the URL's and the stream the endpoint's (a Gemini body names neither): the
pipeline (server/app.py `model_request`) puts the path's model into the request before it
is read here.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import orjson

from ... import ids
from ...canonical.target import MessagesTarget
from ...config.routes import Attempt, RouteDecision, counted_once, request_traits
from ...errors import ProxyError, invalid_request
from ...gemini.carrier import without_carriers
from ...gemini.json_array import JsonArrayStream
from ...gemini.request.reader import Translation, messages_request_from_gemini
from ...gemini.request.writer import gemini_path
from ...gemini.response.writer import gemini_response_from_message
from ...tokens import estimate_input_tokens
from ...transducers import StreamTransducer
from ..pipeline import upstream_kinds as kinds
from ..pipeline.exchange import ClientRequest, Exchange

log = logging.getLogger("hydra_proxy.gemini")

MODEL_KEY = "model"  # where the handler puts the URL's model into the request


def translate(
    request: dict[str, Any], model: str, key: bytes, limit: int | None, *, stream: bool
) -> Translation:
    body = {k: v for k, v in request.items() if k != MODEL_KEY}
    target = MessagesTarget(model=model, max_tokens_limit=limit, continuation_key=key)
    return messages_request_from_gemini(body, target, stream=stream)


def reader(stream: bool) -> Callable[[Exchange, dict[str, Any], bytes], ClientRequest]:
    """The ingress of one Gemini endpoint (streamed or not; a stream as server-sent events
    when the query says ``alt=sse``, else as one JSON array)."""

    def read(exchange: Exchange, request: dict[str, Any], body: bytes) -> ClientRequest:
        model: str = request[MODEL_KEY]
        sse = b"alt=sse" in exchange.scope.get("query_string", b"").split(b"&")
        signing_key = exchange.caller.signing_key

        @functools.cache
        def translation(upstream_model: str, limit: int | None) -> Translation:
            return translate(request, upstream_model, signing_key, limit, stream=stream)

        # Routed on the canonical request; one the reader refuses (Google's server tools)
        # is still routed, by its model: a Gemini upstream, passed through, can run it.
        refused: ProxyError | None = None
        try:
            first = translation(model, None)
            view = first.body
        except ProxyError as exc:
            refused, view = exc, {"model": model, "messages": []}
        else:
            if first.skipped_signatures:
                log.debug("%d thought signatures not made by this proxy", first.skipped_signatures)
        estimate = counted_once(lambda: estimate_input_tokens(view))
        traits = request_traits(
            view, client="gemini", headers=exchange.scope["headers"], estimate=estimate
        )

        def plan(decision: RouteDecision, attempt: Attempt) -> kinds.Plan:
            if attempt.provider.kind == "gemini":
                return _passthrough(request, attempt, stream, sse)
            if refused is not None:
                raise refused
            found = translation(attempt.model, attempt.max_tokens_limit)
            return _translated(exchange, found, attempt, model, stream, sse)

        return ClientRequest(traits, stream, plan)

    return read


def _translated(
    exchange: Exchange,
    translation: Translation,
    attempt: Attempt,
    model: str,
    stream: bool,
    sse: bool,
) -> kinds.Plan:
    worker = exchange.worker
    signing_key = exchange.caller.signing_key
    response_id = ids.message_id().removeprefix("msg_")
    include_thoughts = translation.include_thoughts
    max_event_bytes = worker.settings.max_event_bytes

    def write_reply(message: dict[str, Any]) -> Any:
        return gemini_response_from_message(
            message,
            response_id=response_id,
            model=model,
            include_thoughts=include_thoughts,
            signing_key=signing_key,
        )

    def build(factory: kinds.Factory) -> StreamTransducer:
        return factory(
            response_id,
            model,
            include_thoughts=include_thoughts,
            signing_key=signing_key,
            max_event_bytes=max_event_bytes,
        )

    reply = kinds.ClientReply("gemini", stream, model, write_reply, build)
    plan = kinds.translated(exchange, translation.body, attempt, reply)
    if stream and not sse and plan.transducer is not None:
        make = plan.transducer
        plan.transducer = lambda: JsonArrayStream(make())
        plan.stream_headers = [(b"content-type", b"application/json")]
    return plan


def _passthrough(request: dict[str, Any], attempt: Attempt, stream: bool, sse: bool) -> kinds.Plan:
    """A Gemini upstream: the body goes through as the client sent it (the model is the
    URL's: the attempt's), but for the proxy's own thoughtSignature carriers: they hold
    another upstream's reasoning, which Gemini would reject as a corrupt signature."""
    body = {k: v for k, v in request.items() if k != MODEL_KEY}
    if isinstance(body.get("contents"), list):
        body["contents"] = without_carriers(body["contents"])
    plan = kinds.passthrough(attempt, orjson.dumps(body), model=request[MODEL_KEY])
    try:
        path = gemini_path(attempt.model, stream=stream)
    except ValueError as exc:
        raise invalid_request(f"model: {exc}", "model") from None
    if stream and not sse:
        path = path.removesuffix("?alt=sse")
    plan.url = attempt.provider.base_url.rstrip("/") + "/" + path
    return plan
