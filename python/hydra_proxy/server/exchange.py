"""One HTTP exchange: the client's request, the context passed down while it is answered,
and the response boundary.

The app makes an `Exchange` for every request and hands it to the endpoint's handler; the
layers below take it instead of the ASGI triple and the worker's services:

- the ingress reads the request through it (`header`, `decide`) and plans each upstream
  attempt from it, with no I/O (`ClientRequest`, upstream_kinds.Plan);
- the attempts and the reply write to the client through it, and note on it what the usage
  record and the access log need (the route decision, the attempt that answered, the
  transducer, the reply's usage, the error type);
- every response starts here (`start`: the request id header, the status noted) and every
  error body passes the one redaction (`respond`), in the client's protocol (`fail`).
"""

from __future__ import annotations

import hmac
import os
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_to_bytes

from ..config.check import not_found_message
from ..config.protocols import ProtocolName
from ..config.routes import (
    Attempt,
    RequestTraits,
    RouteDecision,
    decide,
)
from ..errors import ProxyError
from ..gemini import output as gemini_output
from ..redaction import Redactor
from ..signing_key import for_client
from .sessions import session_id

if TYPE_CHECKING:
    from ..team.checks import Pass
    from ..team.service import Member
    from ..transducers import StreamTransducer
    from ..usage.record import Tokens
    from .accounting import Passthrough
    from .previous_turn import Turn
    from .upstream_kinds import Plan
    from .worker import Worker

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]

JSON = b"application/json"
SSE = b"text/event-stream"


class BodyTooLarge(Exception):
    pass


class ClientGone(Exception):
    pass


async def read_body(receive: Receive, limit: int) -> bytes:
    """The whole request body, or BodyTooLarge past `limit` bytes."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        body = message.get("body", b"")
        if body:
            size += len(body)
            if size > limit:
                raise BodyTooLarge
            parts.append(body)
        if not message.get("more_body", False):
            return b"".join(parts) if len(parts) != 1 else parts[0]


def header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


def query_key(scope: Scope) -> bytes | None:
    """The ``key`` parameter of the query string (how Gemini clients may send their key)."""
    for pair in scope.get("query_string", b"").split(b"&"):
        name, _, value = pair.partition(b"=")
        if name == b"key" and value:
            return unquote_to_bytes(value)
    return None


def is_proxy_key(proxy_keys: Iterable[bytes], presented: bytes) -> bool:
    """Whether `presented` is a proxy key: compared with every key in constant time, with
    no early exit (the time does not say which key, or how much of one, matched)."""
    found = False
    for key in proxy_keys:
        found |= hmac.compare_digest(presented, key)
    return found


def request_id() -> str:
    """The id of one request: its response's ``x-request-id`` and its usage record's."""
    return "req_hydra" + os.urandom(12).hex()


# What a model request's client was sent, kept to count a reply whose counts never came
# (server/accounting.py; past this, the rest is counted at the rate of what was kept).
RELAYED_BYTES = 1 << 20


class Relayed:
    """The reply bytes a model request's client was sent (the first RELAYED_BYTES), and
    when the first of them went out."""

    __slots__ = ("first_byte", "kept", "kept_size", "size")

    def __init__(self) -> None:
        self.first_byte: float | None = None
        self.kept: list[bytes] = []
        self.kept_size = 0
        self.size = 0

    def add(self, chunk: bytes) -> None:
        if self.first_byte is None:
            self.first_byte = time.monotonic()
        self.size += len(chunk)
        if self.kept_size < RELAYED_BYTES:
            self.kept.append(chunk)
            self.kept_size += len(chunk)


class UpstreamUnreachable(ProxyError):
    """An upstream that cannot be reached at all: a configuration error (a local server not
    started, a wrong base_url), not overload. Answered with ``x-should-retry: false`` so that
    SDK clients (the Anthropic and OpenAI SDKs, Claude Code) do not retry it for minutes."""


@dataclass(frozen=True)
class ClientRequest:
    """A model request as its client protocol's ingress read it, with no I/O."""

    traits: RequestTraits
    """What routing looks at."""
    stream: bool
    """The client asked for a stream."""
    plan: Callable[[RouteDecision, Attempt], Plan]
    """The upstream request of one attempt of the decided route, and how its reply is
    answered (built on demand for the attempt's provider kind and model)."""


class Exchange:
    """One request: what it is, the worker serving it, and what the proxy learns as it
    answers (for the access log and the usage record)."""

    __slots__ = (
        "attempt",
        "client_key",
        "counts",
        "decision",
        "error_type",
        "estimate",
        "held",
        "log",
        "member",
        "passthrough",
        "protocol",
        "provider_key",
        "receive",
        "refusal",
        "relayed",
        "reply_usage",
        "request_id",
        "scope",
        "send",
        "signing_key",
        "started",
        "started_wall",
        "status",
        "stream",
        "traits",
        "transducer",
        "turn",
        "worker",
    )

    def __init__(self, worker: Worker, scope: Scope, receive: Receive, send: Send) -> None:
        self.worker = worker
        self.scope = scope
        self.receive = receive
        self.send = send
        self.protocol: ProtocolName | None = None
        """The client protocol of a model request (None: any other endpoint)."""
        self.request_id = request_id()
        self.started = time.monotonic()
        self.started_wall = time.time()
        self.status = 0
        self.log: dict[str, object] = {}
        """Details for the access-log line."""
        self.client_key: bytes | None = None
        self.signing_key: bytes = worker.signing_key
        """What the request's carriers are signed and verified with: with proxy keys, the
        client key's own (derived), so what one member was handed does not verify for
        another."""
        """The proxy key the client presented (its id is recorded, never itself)."""
        self.provider_key: str | None = None
        """Key passthrough: the client's own provider key, sent upstream instead of the
        provider's."""
        self.decision: RouteDecision | None = None
        self.attempt: Attempt | None = None
        """The attempt being sent: the usage record names the one that answered."""
        self.stream = False
        self.transducer: StreamTransducer | None = None
        self.estimate = 0
        self.reply_usage: dict[str, Any] | None = None
        self.passthrough: Passthrough | None = None
        self.error_type: str | None = None
        self.traits: RequestTraits | None = None
        """The model request as routing read it (its input estimate for a record the
        upstream gave no counts for)."""
        self.relayed: Relayed | None = None
        """What the client was sent of a model request's reply (server/accounting.py)."""
        self.refusal: str | None = None
        """Why the proxy refused a model request itself, before any upstream attempt (the
        usage record's `refusal`: no spend)."""
        self.member: Member | None = None
        """The named key presented (hydra_proxy.team), with its team."""
        self.held: Pass | None = None
        """What the named key's checks hold for this request until it settles."""
        self.counts: Tokens | None = None
        """The usage record's token counts (set when the request is recorded)."""
        self.turn: Turn | None = None
        """This request as its session's latest turn (None: not kept; server/previous_turn)."""

    def account(self, protocol: ProtocolName) -> None:
        """A model request: it gets a usage record (server/accounting.py), and what it is
        sent is noted (`Relayed`; the same awaitable is returned: relay.py tests it to send
        from a parser callback). The wrapper holds no reference to the exchange: a cycle
        would keep every request's objects alive until the garbage collector's next pass."""
        self.protocol = protocol
        send = self.send
        relayed = self.relayed = Relayed()

        def watched(message: Message) -> Awaitable[None]:
            body = message.get("body")
            if body:
                relayed.add(body)
            return send(message)

        self.send = watched

    # -- the request --------------------------------------------------------------------

    def header(self, name: bytes) -> bytes | None:
        return header(self.scope, name)

    def session(self) -> tuple[bytes | None, str] | None:
        """The client's session, as its previous requests are kept (None: it names none):
        one client key's sessions apart from another's."""
        named = session_id(self.header)
        return None if named is None else (self.client_key, named)

    def presented_key(self) -> bytes | None:
        """The key the client sent: x-api-key, else an Authorization bearer token; a
        Gemini client's x-goog-api-key, else its ``?key=``."""
        presented = self.header(b"x-api-key")
        if presented is None:
            bearer = self.header(b"authorization") or b""
            presented = bearer[7:].strip() if bearer[:7].lower() == b"bearer " else None
        if presented is None and self.gemini_client():
            presented = self.header(b"x-goog-api-key") or query_key(self.scope)
        return presented

    def authorize(self) -> None:
        """With proxy keys set, the client must present one of them (`client_key`); in
        key-passthrough mode it must present a key, which goes upstream (`provider_key`)."""
        presented = self.presented_key()
        worker = self.worker
        if worker.settings.key_passthrough:
            if presented:
                self.provider_key = presented.decode("latin-1")
                return
            raise ProxyError(
                401,
                "key passthrough is on: send your provider API key in x-api-key or "
                "Authorization: Bearer",
                error_type="authentication_error",
            )
        team = worker.team
        if not worker.proxy_keys and team is None:
            return
        if team is not None and presented is not None and team.recognizes(presented):
            self.member = member = team.authenticate(presented, self.started_wall)
            self.client_key = presented
            # Derived from the name, not the secret: a rotation breaks no session.
            self.signing_key = for_client(worker.signing_key, b"hk:" + member.key.name.encode())
            return
        if presented is not None and is_proxy_key(worker.proxy_keys, presented):
            self.client_key = presented
            self.signing_key = for_client(worker.signing_key, presented)
            return
        raise ProxyError(401, "invalid or missing proxy API key", error_type="authentication_error")

    def decide(self, traits: RequestTraits, *, param: str | None = None) -> RouteDecision:
        """The route the request takes, or a 404 `not_found_error` listing what is routable."""
        worker = self.worker
        settings = worker.settings
        decision = decide(settings.routes, worker.default_route, settings.providers, traits)
        if decision is None:
            raise ProxyError(
                404,
                not_found_message(settings, traits.model),
                error_type="not_found_error",
                param=param,
                code="model_not_found",  # what OpenAI's SDKs and clients check
            )
        return decision

    # -- the response boundary -----------------------------------------------------------

    def start(self, status: int, headers: Headers) -> Message:
        """The http.response.start message, tagged with the request id; notes the status for
        the access log (every response of this app starts here: body sends are not wrapped)."""
        self.status = status
        headers = [*headers, (b"x-request-id", self.request_id.encode())]
        return {"type": "http.response.start", "status": status, "headers": headers}

    async def respond(
        self,
        status: int,
        body: bytes,
        content_type: bytes = JSON,
        headers: Iterable[tuple[bytes, bytes]] = (),
    ) -> None:
        """A whole response; an error's body without any key (the one redaction)."""
        if status >= 400:
            body = self.redactor().body(body)
        await self.send(self.start(status, [(b"content-type", content_type), *headers]))
        await self.send({"type": "http.response.body", "body": body})

    def redactor(self) -> Redactor:
        """The worker's redaction, and in key-passthrough mode also this client's key."""
        redactor = self.worker.redactor
        if self.provider_key is not None:
            redactor = redactor.with_secrets((self.provider_key,))
        return redactor

    async def respond_error(
        self,
        status: int,
        body: bytes,
        retry_after: str | None,
        *,
        unreachable: bool = False,
        close: bool = False,
    ) -> None:
        """An error response with the headers that say what to do next: when to retry, not
        to retry at all (`unreachable`), or that the connection is done (`close`)."""
        headers = []
        if retry_after:
            headers.append((b"retry-after", retry_after.encode()))
        if unreachable:
            headers.append((b"x-should-retry", b"false"))
        if close:
            headers.append((b"connection", b"close"))
        await self.respond(status, body, JSON, headers)

    async def fail(self, exc: ProxyError, *, close: bool = False) -> None:
        """Answer `exc` in the client's protocol (before anything else was sent); `close`:
        the request's body was left unread, so the connection cannot carry another."""
        if self.protocol is not None:
            self.error_type = exc.error_type
            if self.attempt is None:  # no upstream was asked: the proxy's own refusal
                self.refusal = getattr(exc, "cause", None) or exc.error_type
        if self.anthropic_client():
            status, body = exc.status, exc.anthropic_body(self.request_id)
        elif self.gemini_client():
            status, _ = gemini_output.error_status(exc.error_type)
            body = gemini_output.error_body(exc.error_type, exc.message)
        else:
            status, body = exc.openai_status, exc.openai_body()
        await self.respond_error(
            status,
            body,
            exc.retry_after,
            # An unreachable upstream, an exhausted budget: no retry would succeed.
            unreachable=isinstance(exc, UpstreamUnreachable) or getattr(exc, "no_retry", False),
            close=close or self.worker.shutdown.draining,  # the worker stops: no next request
        )

    def gemini_client(self) -> bool:
        """Whether errors take the Gemini shape (the Gemini API's paths)."""
        path: str = self.scope["path"]
        return path.startswith("/v1beta/") or (path.startswith("/v1/models/") and ":" in path)

    def anthropic_client(self) -> bool:
        """Whether errors take the Anthropic shape (else OpenAI's)."""
        path: str = self.scope["path"]
        return path.startswith("/v1/messages") or self.header(b"anthropic-version") is not None
