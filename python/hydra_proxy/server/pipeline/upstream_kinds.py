"""The upstream side of an exchange, one row per provider kind, no I/O.

Each kind has a wire dialect (`DIALECTS`: path, auth header, version headers, what a
same-protocol passthrough keeps), a request WRITER (the canonical request, an Anthropic
Messages dict, as that upstream's request) and a non-streamed reply READER (its reply as
the canonical Message). A client ingress reads its request into the canonical one and
calls `translated` (or, same protocol on both sides, `passthrough`): the `Plan` says what
to send and how the reply is answered. The stream transducer comes from
`Implementation.transducer(upstream kind, client protocol)`; an upstream's HTTP error body
of any kind is read by hydra_proxy.upstream_errors. No code per pair of protocols.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import orjson

from ... import ids
from ...anthropic.request.writer import AnthropicTarget, anthropic_request_from_messages
from ...anthropic.response.reader import message_from_anthropic_message
from ...canonical.effort import asked_effort
from ...canonical.text_only import without_images
from ...canonical.tools import web_search_tool, without_web_search
from ...canonical.web_search import offered_only, runs_web_search
from ...canonical.web_search import refusal as web_search_refusal
from ...chat.request.writer import ChatTarget, chat_request_from_messages
from ...chat.response.reader import message_from_chat_completion
from ...config.protocols import ProtocolName
from ...config.providers import Provider
from ...config.routes import Attempt
from ...errors import invalid_request
from ...gemini.request.writer import gemini_path, gemini_request_from_messages, gemini_target
from ...gemini.response.reader import message_from_gemini_response
from ...responses.request.writer import ResponsesTarget, responses_request_from_messages
from ...responses.response.reader import message_from_response
from ...transducers import StreamTransducer

if TYPE_CHECKING:
    from .exchange import Exchange

# -- the wire dialects -----------------------------------------------------------------


@dataclass(frozen=True)
class Dialect:
    kind: ProtocolName
    path: str
    """Appended to the provider's base_url."""
    auth_header: str = "authorization"
    auth_prefix: str = "Bearer "
    """The key goes into `auth_header` as `auth_prefix + key`."""
    fixed_headers: tuple[tuple[str, str], ...] = ()
    """Sent with every request unless the client's own value is forwarded (passthrough)."""
    passthrough_headers: tuple[bytes, ...] = ()
    """Client headers forwarded on same-protocol passthrough (never across protocols)."""
    passthrough_query: bool = False
    """The client's query string is kept on passthrough."""
    strips_proxy_signatures: bool = False
    """Thinking blocks signed by this proxy are dropped before this upstream sees them."""

    def url(self, provider: Provider, query: bytes = b"") -> str:
        url = provider.base_url.rstrip("/") + self.path
        if query and self.passthrough_query:
            url += "?" + query.decode("latin-1")
        return url

    def headers(self, *, accept: str | None) -> dict[str, str]:
        """The request headers but the key (`with_provider_key` adds it, per attempt)."""
        headers = {"content-type": "application/json", **dict(self.fixed_headers)}
        if accept is not None:
            headers["accept"] = accept
        return headers


ANTHROPIC_VERSION = "2023-06-01"

DIALECTS: dict[ProtocolName, Dialect] = {
    "chat": Dialect(kind="chat", path="/chat/completions"),
    "anthropic": Dialect(
        kind="anthropic",
        path="/v1/messages",
        auth_header="x-api-key",
        auth_prefix="",
        fixed_headers=(("anthropic-version", ANTHROPIC_VERSION),),
        passthrough_headers=(b"anthropic-version", b"anthropic-beta"),
        passthrough_query=True,
        strips_proxy_signatures=True,
    ),
    "responses": Dialect(kind="responses", path="/responses"),
    # The path is the model's (gemini.request.writer.gemini_path): the writer supplies it.
    "gemini": Dialect(kind="gemini", path="", auth_header="x-goog-api-key", auth_prefix=""),
}


# -- the plan of one attempt -----------------------------------------------------------


@dataclass
class Plan:
    """The upstream request of one attempt, and how its reply reaches the client:

    - relay: a translated stream, through a transducer built once the request is on its
      way (its construction may cost a token estimate: that overlaps with the upstream);
    - forward: the upstream's bytes unchanged (same protocol on both sides);
    - json: a non-streamed reply, parsed and converted.
    """

    url: str
    headers: dict[str, str]
    body: bytes
    reply: Literal["relay", "forward", "json"]
    transducer: Callable[[], StreamTransducer] | None = None
    """relay: builds the transducer (called after the upstream request was sent)."""
    convert: Callable[[Any], Any] | None = None
    """json: the upstream's parsed reply -> the client's reply (a JSON-able object, or the
    bytes of `content_type`)."""
    content_type: bytes | None = None
    """json: the client reply's type when it is not JSON (a compaction's events, sent at
    once to a client that asked for a stream)."""
    stream_headers: list[tuple[bytes, bytes]] | None = None
    """relay: the client response's headers, when not server-sent events'."""
    strip: Callable[[bytes], bytes] | None = None
    """forward: what of the upstream's bytes the client does not get (a filter over the
    stream's chunks: the usage the proxy asked for and the client did not)."""
    log: dict[str, object] = field(default_factory=dict)
    """Details for the access-log line."""


# A member list longer than this is written an element at a time.
_PIECES = 4096


def _has_long_list(body: dict[str, Any]) -> bool:
    # A loop, not any() over a generator: it runs for every request.
    for value in body.values():  # noqa: SIM110
        if type(value) is list and len(value) > _PIECES:
            return True
    return False


def dumps(body: Any) -> bytes:
    """``orjson.dumps(body)``, byte for byte, but with each long list of a body object
    written an element at a time: one orjson call holds the GIL for all it writes, and a
    big body's plan is made in a thread beside the event loop (server/app.py)."""
    if not isinstance(body, dict) or not _has_long_list(body):
        return orjson.dumps(body)
    members = []
    for key, value in body.items():
        if isinstance(value, list) and len(value) > _PIECES:
            text = b"[" + b",".join([orjson.dumps(item) for item in value]) + b"]"
        else:
            text = orjson.dumps(value)
        members.append(orjson.dumps(key) + b":" + text)
    return b"{" + b",".join(members) + b"}"


def with_provider_key(plan: Plan, kind: ProtocolName, key: str | None) -> Plan:
    """`plan` with the attempt's key (a pool's, or the client's own in key-passthrough mode)
    in the header its provider kind takes: the one place a key goes upstream."""
    if key:
        dialect = DIALECTS[kind]
        plan.headers[dialect.auth_header] = dialect.auth_prefix + key
    return plan


def passthrough(
    attempt: Attempt,
    body: bytes,
    *,
    model: str,
    client_header: Callable[[bytes], bytes | None] | None = None,
    query: bytes = b"",
) -> Plan:
    """A client on an upstream of its own protocol: its bytes go through both ways (the
    ingress re-encodes `body` only for what it must change, such as a renamed model). The
    dialect's passthrough headers and query are the client's, when it sent them."""
    dialect = DIALECTS[attempt.provider.kind]
    headers = dialect.headers(accept=None)
    if client_header is not None:
        for name in dialect.passthrough_headers:
            value = client_header(name)
            if value is not None:
                headers[name.decode()] = value.decode("latin-1")
    return Plan(
        url=dialect.url(attempt.provider, query),
        headers=headers,
        body=body,
        reply="forward",
        log={"model": model},
    )


Factory = Callable[..., StreamTransducer]


@dataclass(frozen=True)
class ClientReply:
    """How a translated attempt's canonical reply reaches its client (its ingress says)."""

    protocol: ProtocolName
    stream: bool
    model: str
    """The model the reply reports."""
    write: Callable[[dict[str, Any]], Any]
    """A Message -> the client's JSON reply."""
    build: Callable[[Factory], StreamTransducer]
    """The stream transducer, from its factory, with the client's constructor arguments."""
    log_model: str | None = None
    """The model the log names when it is not the reported one."""


@dataclass(frozen=True)
class SessionHints:
    """What the client's session lends an upstream request."""

    cache_key: Callable[[], str | None] | None = None
    """The session as a prompt-cache key (server.pipeline.sessions), read for upstreams whose
    `cache_hints` take one."""
    memo: dict[Any, Any] | None = None
    """What the session's previous request left for the writers
    (server/previous_turn.KeptRequest.memo)."""


NO_SESSION = SessionHints()


def translated(
    exchange: Exchange,
    canonical: dict[str, Any],
    attempt: Attempt,
    reply: ClientReply,
    session: SessionHints = NO_SESSION,
) -> Plan:
    """The plan of a translated attempt, the same for every client protocol and upstream
    kind. A text-only attempt (`Attempt.vision`) gets a placeholder for each image
    (canonical.text_only; counted in the log as ``images_left_out``)."""
    signing_key = exchange.caller.signing_key
    impl = exchange.worker.impl
    client, stream, reported_model = reply.protocol, reply.stream, reply.model
    log: dict[str, object] = {"model": reply.log_model or reported_model}
    provider = attempt.provider
    kind = provider.kind
    if web_search_tool(canonical.get("tools")) is not None and not runs_web_search(
        kind, provider.base_url
    ):
        if client != "responses" or not offered_only(canonical):
            raise web_search_refusal(client, provider.name, kind)
        canonical = {**canonical, "tools": without_web_search(canonical["tools"])}
        log["web_search_left_out"] = 1
    if not attempt.vision:
        canonical, left_out = without_images(canonical)
        if left_out:
            log["images_left_out"] = left_out
    limit = attempt.max_tokens_limit
    asked = canonical.get("max_tokens")
    if limit is not None and isinstance(asked, int) and asked > limit:
        log["max_tokens_lowered"] = f"{asked}->{limit}"  # each writer clamps to it
    hinted = session.cache_key is not None and provider.cache_hints != "none"
    cache_key = session.cache_key() if hinted and session.cache_key is not None else None
    path, body = WRITERS[kind](
        canonical, BodyFor(attempt, signing_key, stream, cache_key, session.memo)
    )
    plan = Plan(
        url=provider.base_url.rstrip("/") + path,
        headers=DIALECTS[kind].headers(
            accept="text/event-stream" if stream else "application/json"
        ),
        body=dumps(body),
        reply="relay" if stream else "json",
        log={**log, "stream": 1} if stream else log,
    )
    if stream:
        build = reply.build
        plan.transducer = lambda: build(impl.transducer(kind, client))
    else:
        read, write = READERS[kind], reply.write

        def convert(answer: Any) -> Any:
            return write(read(answer, ids.message_id(), reported_model, signing_key))

        plan.convert = convert
    return plan


# -- requests: canonical -> upstream ---------------------------------------------------


class BodyFor(NamedTuple):
    """What an upstream request is written for, beside the canonical request."""

    attempt: Attempt
    signing_key: bytes
    stream: bool
    cache_key: str | None  # the session's key, None when the provider takes no cache hint
    memo: dict[Any, Any] | None  # the session's memo of the writer's work, when it has one

    def effort(self, request: dict[str, Any]) -> str | None:
        return route_effort(self.attempt, lambda: asked_effort(request))

    def target_fields(self, request: dict[str, Any]) -> dict[str, Any]:
        """The fields the Chat and the Responses writers' targets share."""
        attempt, provider = self.attempt, self.attempt.provider
        hinted = provider.cache_hints == "prompt_cache_key"
        return {
            "model": attempt.model,
            "max_tokens_limit": attempt.max_tokens_limit,
            "reasoning": provider.reasoning,
            "sampling": provider.sampling,
            "signing_key": self.signing_key,
            "effort": self.effort(request),
            "prompt_cache_key": self.cache_key if hinted else None,
        }


Writer = Callable[[dict[str, Any], BodyFor], tuple[str, Any]]
"""(canonical request, what it is written for) -> (path, the upstream's request)."""


def route_effort(attempt: Attempt, asked: Callable[[], str | None]) -> str | None:
    """The reasoning effort the attempt's route sets (None: the route sets none for this
    request, whose own effort goes as it is): its fixed one, else its map's entry for the
    effort `asked` reads from the request (only read when the route has a map)."""
    options = attempt.options
    if options.effort is not None:
        return options.effort
    if not options.effort_map:
        return None
    requested = asked()
    if requested not in dict(options.effort_map):
        return None
    return options.map_effort(requested)


def _chat(canonical: dict[str, Any], to: BodyFor) -> tuple[str, Any]:
    provider = to.attempt.provider
    target = ChatTarget(
        **to.target_fields(canonical),
        effort_form=provider.effort_form,
        effort_levels=provider.effort_levels,
        max_tokens_field=provider.max_tokens_field,
        replay_reasoning=provider.replay_reasoning,
        cache_control=provider.cache_hints == "cache_control",
    )
    body = chat_request_from_messages(canonical, target, stream=to.stream, memo=to.memo)
    return DIALECTS["chat"].path, body


def _anthropic(canonical: dict[str, Any], to: BodyFor) -> tuple[str, Any]:
    attempt = to.attempt
    target = AnthropicTarget(attempt.model, attempt.max_tokens_limit, to.effort(canonical))
    body = anthropic_request_from_messages(canonical, target, stream=to.stream)
    return DIALECTS["anthropic"].path, body


def _responses(canonical: dict[str, Any], to: BodyFor) -> tuple[str, Any]:
    target = ResponsesTarget(**to.target_fields(canonical))
    body = responses_request_from_messages(canonical, target, stream=to.stream)
    return DIALECTS["responses"].path, body


def _gemini(canonical: dict[str, Any], to: BodyFor) -> tuple[str, Any]:
    attempt = to.attempt
    try:
        path = "/" + gemini_path(attempt.model, stream=to.stream)
    except ValueError as exc:
        raise invalid_request(f"model: {exc}", "model") from None
    options: dict[str, Any] = {"signing_key": to.signing_key, "effort": to.effort(canonical)}
    limit = attempt.max_tokens_limit or attempt.provider.max_output
    if limit is not None:
        options["max_output_tokens"] = limit
    return path, gemini_request_from_messages(canonical, gemini_target(attempt.model, **options))


WRITERS: dict[ProtocolName, Writer] = {
    "chat": _chat,
    "anthropic": _anthropic,
    "responses": _responses,
    "gemini": _gemini,
}


# -- non-streamed replies: upstream reply -> canonical Message ---------------------------

Reader = Callable[[Any, str, str, bytes], dict[str, Any]]
"""(reply, message_id, model, signing_key) -> an Anthropic Message."""


READERS: dict[ProtocolName, Reader] = {
    "chat": lambda reply, mid, model, key: message_from_chat_completion(
        reply, message_id=mid, model=model, signing_key=key
    ),
    "anthropic": lambda reply, mid, model, key: message_from_anthropic_message(reply, model=model),
    "responses": lambda reply, mid, model, key: message_from_response(
        reply, message_id=mid, model=model, key=key
    ),
    "gemini": lambda reply, mid, model, key: message_from_gemini_response(
        reply, message_id=mid, model=model, signing_key=key
    ),
}
