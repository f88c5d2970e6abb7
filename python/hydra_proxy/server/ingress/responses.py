"""POST /v1/responses: OpenAI Responses clients (Codex CLI), on any upstream kind or passed
through to a Responses upstream.

The proxy keeps no conversation state: the reader refuses ``store: true`` and
``previous_response_id`` with a 400 (a Responses upstream, passed through, keeps its own).

Remote compaction (`responses.compaction`): a request ending with a ``compaction_trigger``
goes to the route's model as a request for a summary, sent and answered whole (not
streamed upstream), and the client gets exactly one ``compaction`` item carrying that
summary, as a stream of events when it asked for one. ``POST /v1/responses/compact``
(`read_compact`) is the same request in the older form. A Responses upstream gets a
request with no compaction of the proxy's as it is (its own compaction happens there);
the proxy's compaction items reach it as the summaries they carry.
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
from ...config.routes import Attempt, RouteDecision, counted_once, request_traits
from ...errors import ProxyError, invalid_request
from ...ids import response_id as new_response_id
from ...responses.compaction import (
    COMPACTION_PREFIX,
    compact_history,
    compaction_item,
    compaction_stream,
    decode_compaction,
    is_compaction_carrier,
    restored_summary,
)
from ...responses.encoder import echo_text, name_table
from ...responses.reasoning import CARRIER_PREFIX, is_carrier
from ...responses.request.reader import Translation, messages_request_from_responses
from ...responses.response.writer import response_from_message
from ...tokens import estimate_input_tokens
from ...transducers import StreamTransducer
from ..pipeline import upstream_kinds as kinds
from ..pipeline.exchange import SSE, ClientRequest, Exchange
from ..pipeline.sessions import session_cache_key

log = logging.getLogger("hydra_proxy.responses")


def read(exchange: Exchange, request: dict[str, Any], body: bytes) -> ClientRequest:
    return _read(exchange, request, body, compact=False)


def read_compact(exchange: Exchange, request: dict[str, Any], body: bytes) -> ClientRequest:
    """``POST /v1/responses/compact``: the history in ``input``, answered with the new
    history (``{"output": [...]}``, never streamed), on any upstream. A Responses upstream
    gets it as a ``compaction_trigger`` request of today's form too, so every upstream
    answers through the same path."""
    items = request.get("input")
    if isinstance(items, str):  # as /v1/responses takes it: one user message
        items = [{"type": "message", "role": "user", "content": items}]
    if not isinstance(items, list):
        raise invalid_request(
            "input: the history to compact, a string or an array of items", "input"
        )
    request = {
        **{k: v for k, v in request.items() if k not in ("stream", "store")},
        "input": [*items, {"type": "compaction_trigger"}],
        "stream": False,
        "store": False,
    }
    return _read(exchange, request, orjson.dumps(request), compact=True)


def _read(
    exchange: Exchange, request: dict[str, Any], body: bytes, *, compact: bool
) -> ClientRequest:
    model: str = request["model"]
    signing_key = exchange.caller.signing_key

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
    estimate = counted_once(lambda: estimate_input_tokens(first.body))
    traits = request_traits(
        first.body, client="responses", headers=exchange.scope["headers"], estimate=estimate
    )

    def plan(decision: RouteDecision, attempt: Attempt) -> kinds.Plan:
        if attempt.provider.kind == "responses" and not compact:
            return _passthrough(body, request, attempt, signing_key)
        translation = translate(attempt.model, attempt.max_tokens_limit)
        if translation.foreign_compaction is not None:
            raise invalid_request(
                f"{translation.foreign_compaction}: this compaction item was not made by this "
                f"proxy, and provider {attempt.provider.name!r} cannot read it (only OpenAI "
                "reads its own); start a new session, or compact again through this proxy",
                f"{translation.foreign_compaction}.encrypted_content",
            )
        if translation.compaction:
            items = request["input"][:-1] if compact else None
            return _compaction(exchange, translation, attempt, model, items)
        return _translated(exchange, translation, attempt, model, estimate)

    return ClientRequest(traits, first.stream, plan)


def _summary_message(item: Any, key: bytes) -> Any:
    """A compaction item of the proxy's as the user message of its summary (any other item,
    OpenAI's compaction included, as it is)."""
    if not isinstance(item, dict) or item.get("type") != "compaction":
        return item
    encrypted = item.get("encrypted_content")
    if not is_compaction_carrier(encrypted):
        return item
    summary = decode_compaction(encrypted, key)
    if summary is None:
        raise invalid_request(
            "input: a compaction item of this proxy's did not verify (changed, or made for "
            "another key)",
            "input",
        )
    text = restored_summary(summary)
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


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
) -> kinds.Plan:
    """The plan of one translated attempt (the Responses reader's output for its model)."""
    worker = exchange.worker
    signing_key = exchange.caller.signing_key
    context = translation.context
    response_id = new_response_id()
    created_at = int(time.time())
    max_event_bytes = worker.settings.max_event_bytes

    def write_reply(message: dict[str, Any]) -> Any:
        return response_from_message(
            message, context, response_id=response_id, created_at=created_at, key=signing_key
        )

    def build(factory: kinds.Factory) -> StreamTransducer:
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
    reply = kinds.ClientReply("responses", stream, model, write_reply, build)
    return kinds.translated(exchange, body, attempt, reply, kinds.SessionHints(session_key))


def _compaction(
    exchange: Exchange,
    translation: Translation,
    attempt: Attempt,
    model: str,
    compact_input: list[Any] | None,
) -> kinds.Plan:
    """A compaction: the route's model writes the summary (asked whole, whatever the client
    asked), answered as one ``compaction`` item (`compact_input`: the history of a
    ``/v1/responses/compact`` request, answered in that endpoint's form)."""
    signing_key = exchange.caller.signing_key
    context = translation.context
    response_id = new_response_id()
    created_at = int(time.time())
    client_stream = translation.stream

    def write_reply(message: dict[str, Any]) -> Any:
        summary = "".join(
            block["text"]
            for block in message.get("content") or ()
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        ).strip()
        if not summary:
            raise ProxyError(
                502,
                f"the model of provider {attempt.provider.name!r} wrote no summary for the "
                "compaction (an empty reply)",
                error_type="api_error",
            )
        item = compaction_item(summary, signing_key, "cmp_" + response_id.removeprefix("resp_"))
        if compact_input is not None:
            return compact_history(compact_input, item)
        response = response_from_message(
            message, context, response_id=response_id, created_at=created_at, key=signing_key
        )
        # Complete even when the summary hit the output limit: what it holds is the summary.
        response.update(status="completed", incomplete_details=None, output=[item])
        return compaction_stream(response) if client_stream else response

    def unused_build(factory: kinds.Factory) -> StreamTransducer:
        raise AssertionError("a compaction is asked whole")

    def session_key() -> str | None:
        return session_cache_key(context.prompt_cache_key, exchange.header)

    reply = kinds.ClientReply("responses", False, model, write_reply, unused_build)
    plan = kinds.translated(
        exchange, translation.body, attempt, reply, kinds.SessionHints(session_key)
    )
    if client_stream:
        plan.content_type = SSE
    plan.log["compaction"] = 1
    return plan


def _passthrough(
    body: bytes, request: dict[str, Any], attempt: Attempt, signing_key: bytes
) -> kinds.Plan:
    """A Responses upstream: the bytes go through unchanged both ways, except the model
    rename, the route's effort, placeholders for images on a text-only upstream, the
    proxy's reasoning carriers (the upstream cannot read them: they hold
    reasoning of another upstream) and the proxy's compaction items (as the summaries
    they carry)."""
    model: str = request["model"]
    reencode = attempt.model != model
    request = {**request, "model": attempt.model}  # the request stays shared by attempts
    reasoning = request.get("reasoning")
    asked = reasoning.get("effort") if isinstance(reasoning, dict) else None
    effort = kinds.route_effort(attempt, lambda: asked if isinstance(asked, str) else None)
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
    if COMPACTION_PREFIX.encode() in body and isinstance(request.get("input"), list):
        request["input"] = [_summary_message(i, signing_key) for i in request["input"]]
        reencode = True
    left_out = 0
    if not attempt.vision:
        request, left_out = without_openai_images(request)
        reencode = reencode or bool(left_out)
    if reencode:
        body = orjson.dumps(request)
    plan = kinds.passthrough(attempt, body, model=model)
    if left_out:
        plan.log["images_left_out"] = left_out
    return plan
