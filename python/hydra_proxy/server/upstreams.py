"""The upstream side of a translated exchange, one row per provider kind, no I/O.

WRITERS turn the canonical request (an Anthropic Messages dict) into the upstream's
request (url, headers, body) through its dialect; READERS turn the upstream's non-streamed
reply back into the canonical Message (an upstream's HTTP error body, of any kind, is read
by hydra_proxy.upstream_errors, in exchange.py). Which stream
transducer relays a reply is `transducers.Implementation.transducer`. A client ingress
reads its request into the canonical one, then picks its row here by `Provider.kind`:
no code per pair of protocols.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from ..chat.request.writer import ChatTarget, chat_request_from_messages
from ..chat.response.reader import message_from_chat_completion
from ..config import Attempt, Provider, ProviderKind
from ..errors import ProxyError, invalid_request
from ..gemini.request.writer import gemini_path, gemini_request_from_messages, gemini_target
from ..gemini.response.reader import message_from_gemini_response
from ..responses.request.writer import ResponsesTarget, responses_request_from_messages
from ..responses.response.reader import message_from_response
from ..signature import is_proxy_signature
from .dialects import DIALECTS


@dataclass(frozen=True)
class Target:
    """Where a canonical request goes: one attempt's provider and upstream model."""

    provider: Provider
    model: str
    """The upstream model name (the attempt's: the route's rename, else the client's)."""
    max_tokens_limit: int | None
    """The clamp on max_tokens: the route's, else the provider's."""
    signing_key: bytes

    @classmethod
    def of(cls, attempt: Attempt, signing_key: bytes) -> Target:
        return cls(attempt.provider, attempt.model, attempt.max_tokens_limit, signing_key)


@dataclass(frozen=True)
class UpstreamRequest:
    url: str
    headers: dict[str, str]
    body: bytes


def _chat(canonical: dict[str, Any], target: Target, stream: bool) -> tuple[str, Any]:
    provider = target.provider
    chat_target = ChatTarget(
        model=target.model,
        max_tokens_field=provider.max_tokens_field,
        max_tokens_limit=target.max_tokens_limit,
        reasoning=provider.reasoning,
        replay_reasoning=provider.replay_reasoning,
        signing_key=target.signing_key,
        sampling=provider.sampling,
    )
    return DIALECTS["openai"].path, chat_request_from_messages(
        canonical, chat_target, stream=stream
    )


def _anthropic(canonical: dict[str, Any], target: Target, stream: bool) -> tuple[str, Any]:
    # Copies down to the messages: the canonical request stays shared by a chain's attempts.
    body = dict(canonical)
    if isinstance(body.get("messages"), list):
        body["messages"] = [dict(m) if isinstance(m, dict) else m for m in body["messages"]]
    body = strip_proxy_signatures(body)
    body["model"] = target.model
    limit = target.max_tokens_limit
    if limit is not None and isinstance(body.get("max_tokens"), int):
        body["max_tokens"] = min(body["max_tokens"], limit)
    if stream:
        body["stream"] = True
    else:
        body.pop("stream", None)
    return DIALECTS["anthropic"].path, body


def _responses(canonical: dict[str, Any], target: Target, stream: bool) -> tuple[str, Any]:
    provider = target.provider
    responses_target = ResponsesTarget(
        model=target.model,
        max_tokens_limit=target.max_tokens_limit,
        reasoning=provider.reasoning,
        sampling=provider.sampling,
        signing_key=target.signing_key,
    )
    body = responses_request_from_messages(canonical, responses_target, stream=stream)
    return DIALECTS["responses"].path, body


def _gemini(canonical: dict[str, Any], target: Target, stream: bool) -> tuple[str, Any]:
    try:
        path = "/" + gemini_path(target.model, stream=stream)
    except ValueError as exc:
        raise invalid_request(f"model: {exc}", "model") from None
    options: dict[str, Any] = {"signing_key": target.signing_key}
    limit = target.max_tokens_limit or target.provider.max_output
    if limit is not None:
        options["max_output_tokens"] = limit
    return path, gemini_request_from_messages(canonical, gemini_target(target.model, **options))


Writer = Callable[[dict[str, Any], Target, bool], tuple[str, Any]]

WRITERS: dict[ProviderKind, Writer] = {
    "openai": _chat,
    "anthropic": _anthropic,
    "responses": _responses,
    "gemini": _gemini,
}


def write_request(canonical: dict[str, Any], target: Target, *, stream: bool) -> UpstreamRequest:
    """The canonical request as `target`'s provider expects it on the wire."""
    provider = target.provider
    path, body = WRITERS[provider.kind](canonical, target, stream)
    dialect = DIALECTS[provider.kind]
    return UpstreamRequest(
        url=provider.base_url.rstrip("/") + path,
        headers=dialect.headers(
            provider, accept="text/event-stream" if stream else "application/json"
        ),
        body=orjson.dumps(body),
    )


# -- non-streamed replies: upstream reply -> canonical Message ---------------------------

Reader = Callable[[Any, str, str, bytes], dict[str, Any]]
"""(reply, message_id, model, signing_key) -> an Anthropic Message."""


def _read_anthropic(reply: Any, message_id: str, model: str, key: bytes) -> dict[str, Any]:
    if not isinstance(reply, dict) or reply.get("type") != "message":
        raise ProxyError(
            502, "the upstream sent a reply that is not a Message", error_type="api_error"
        )
    message = dict(reply)
    message["model"] = model
    return message


READERS: dict[ProviderKind, Reader] = {
    "openai": lambda reply, mid, model, key: message_from_chat_completion(
        reply, message_id=mid, model=model, signing_key=key
    ),
    "anthropic": _read_anthropic,
    "responses": lambda reply, mid, model, key: message_from_response(
        reply, message_id=mid, model=model, key=key
    ),
    "gemini": lambda reply, mid, model, key: message_from_gemini_response(
        reply, message_id=mid, model=model, signing_key=key
    ),
}


def strip_proxy_signatures(request: dict[str, Any]) -> dict[str, Any]:
    """Drop thinking blocks signed by this proxy: Anthropic would reject them."""
    for message in request.get("messages") or ():
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            message["content"] = [
                block
                for block in message["content"]
                if not (
                    isinstance(block, dict)
                    and block.get("type") == "thinking"
                    and is_proxy_signature(block.get("signature"))
                )
            ]
    return request
