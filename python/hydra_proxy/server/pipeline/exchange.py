"""One HTTP exchange: the client's request, the context passed down while it is answered,
and the response boundary.

The app makes an `Exchange` for every request and hands it to the endpoint's handler; the
layers below take it instead of the ASGI triple and the worker's services. It holds three
parts, each set in one module (tests/server/test_exchange_parts.py):

- what is known when the request is read, set here once: its scope, id and start, who
  sent it (`Caller`, when its key is checked), its protocol, its session's kept turn and
  what it asks (`Asked`, once read by its ingress, with no I/O: `ClientRequest`);
- what the route decides (`route`: server/pipeline/routing.py);
- what the answer records (`outcome`: server/pipeline/outcome.py), read by
  server/pipeline/accounting.py.

Every response starts here (`start`: the request id header, the status noted) and every
error body passes the one redaction (`respond`), in the client's protocol (`fail`).
"""

from __future__ import annotations

import hmac
import os
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import unquote_to_bytes

from ...config.protocols import ProtocolName
from ...config.routes import Attempt, RequestTraits, RouteDecision
from ...errors import ProxyError
from ...gemini import output as gemini_output
from ...redaction import Redactor
from ...signing_key import for_client
from .outcome import Outcome
from .routing import Routing
from .sessions import session_id

if TYPE_CHECKING:
    from ...team.service import Member
    from ..transport.worker import Worker
    from .previous_turn import KeptRequest
    from .upstream_kinds import Plan

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


class UpstreamUnreachable(ProxyError):
    """An upstream that cannot be reached at all: a configuration error (a local server not
    started, a wrong base_url), not overload. Answered with ``x-should-retry: false`` so that
    SDK clients (the Anthropic and OpenAI SDKs, Claude Code) do not retry it for minutes."""


class ClientRequest(NamedTuple):
    """A model request as its client protocol's ingress read it, with no I/O."""

    traits: RequestTraits
    """What routing looks at."""
    stream: bool
    """The client asked for a stream."""
    plan: Callable[[RouteDecision, Attempt], Plan]
    """The upstream request of one attempt of the decided route, and how its reply is
    answered (built on demand for the attempt's provider kind and model)."""


class Caller(NamedTuple):
    """Who sent a request, as its key says (set once, when the key is checked)."""

    signing_key: bytes
    """What the request's carriers are signed and verified with: with proxy keys, the
    client key's own (derived), so what one member was handed does not verify for
    another."""
    client_key: bytes | None = None
    """The proxy key the client presented (its id is recorded, never itself)."""
    provider_key: str | None = None
    """Key passthrough: the client's own provider key, sent upstream instead of the
    provider's."""
    member: Member | None = None
    """The named key presented (hydra_proxy.team), with its team."""


class Asked(NamedTuple):
    """A model request as its ingress read it: what routing looks at (its input estimate
    also counts a reply the upstream gave no counts for), and whether it asked for a
    stream."""

    traits: RequestTraits
    stream: bool


class Exchange:
    """One request: what it is, the worker serving it, what its route decides (`route`) and
    what its answer records (`outcome`)."""

    __slots__ = (
        "asked",
        "caller",
        "kept",
        "log",
        "outcome",
        "protocol",
        "receive",
        "request_id",
        "route",
        "scope",
        "send",
        "started",
        "started_wall",
        "worker",
    )

    def __init__(self, worker: Worker, scope: Scope, receive: Receive, send: Send) -> None:
        self.worker = worker
        self.scope = scope
        self.receive = receive
        self.send = send
        self.request_id = request_id()
        self.started = time.monotonic()
        self.started_wall = time.time()
        self.protocol: ProtocolName | None = None
        """The client protocol of a model request (None: any other endpoint)."""
        self.caller = Caller(worker.signing_key)
        self.kept: KeptRequest | None = None
        """This request as its session's latest (None: not kept; server/previous_turn)."""
        self.asked: Asked | None = None
        self.route = Routing()
        self.outcome = Outcome()
        self.log: dict[str, object] = {}
        """Details for the access-log line (one dict for the request's life)."""

    def guard(self, wrap: Callable[[Send], Send]) -> None:
        """Every response goes through `wrap(send)` (raising: the request is refused)."""
        self.send = wrap(self.send)

    def account(self, protocol: ProtocolName) -> None:
        """A model request: it gets a usage record (server/pipeline/accounting.py), the time its
        first body byte goes out is noted and what it is sent kept (`Outcome.watch`)."""
        self.protocol = protocol
        self.send = self.outcome.watch(self.send)

    def keep(self, kept: KeptRequest | None) -> None:
        """The request as its session's kept latest (its turns reused by the next)."""
        self.kept = kept

    def read_as(self, asked: Asked) -> None:
        """What the ingress read; again only for a big body's, its objects let go."""
        self.asked = asked

    # -- the request --------------------------------------------------------------------

    def header(self, name: bytes) -> bytes | None:
        return header(self.scope, name)

    def session(self) -> tuple[bytes | None, str] | None:
        """The client's session, as its previous requests are kept (None: it names none):
        one client key's sessions apart from another's."""
        named = session_id(self.header)
        return None if named is None else (self.caller.client_key, named)

    def presented_key(self) -> bytes | None:
        """The key the client sent: x-api-key, else an Authorization bearer token; a
        Gemini client's x-goog-api-key, else its ``?key=``."""
        presented = self.header(b"x-api-key")
        if presented is None:
            bearer = self.header(b"authorization") or b""
            presented = bearer[7:].strip() if bearer[:7].lower() == b"bearer " else None
        if presented is None and gemini_client(self.scope):
            presented = self.header(b"x-goog-api-key") or query_key(self.scope)
        return presented

    def authenticate_client(self) -> None:
        """With proxy keys set, the client must present one of them (`client_key`); in
        key-passthrough mode it must present a key, which goes upstream (`provider_key`)."""
        presented = self.presented_key()
        worker = self.worker
        if worker.settings.key_passthrough:
            if presented:
                self.caller = Caller(worker.signing_key, provider_key=presented.decode("latin-1"))
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
            member = team.authenticate(presented, self.started_wall)
            # Derived from the name, not the secret: a rotation breaks no session.
            signing_key = for_client(worker.signing_key, b"hk:" + member.key.name.encode())
            self.caller = Caller(signing_key, client_key=presented, member=member)
            return
        if presented is not None and is_proxy_key(worker.proxy_keys, presented):
            signing_key = for_client(worker.signing_key, presented)
            self.caller = Caller(signing_key, client_key=presented)
            return
        raise ProxyError(401, "invalid or missing proxy API key", error_type="authentication_error")

    # -- the response boundary -----------------------------------------------------------

    def start(self, status: int, headers: Headers) -> Message:
        """The http.response.start message, tagged with the request id; notes the status for
        the access log (every response of this app starts here: body sends are not wrapped)."""
        self.outcome.started(status)
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
        provider_key = self.caller.provider_key
        if provider_key is not None:
            redactor = redactor.with_secrets((provider_key,))
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
            refusal = None
            if self.route.attempt is None:  # no upstream was asked: the proxy's own refusal
                refusal = getattr(exc, "cause", None) or exc.error_type
            self.outcome.failed(exc.error_type, refusal)
        if anthropic_client(self.scope):
            status, body = exc.status, exc.anthropic_body(self.request_id)
        elif gemini_client(self.scope):
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


def gemini_client(scope: Scope) -> bool:
    """Whether errors take the Gemini shape (the Gemini API's paths)."""
    path: str = scope["path"]
    return path.startswith("/v1beta/") or (path.startswith("/v1/models/") and ":" in path)


def anthropic_client(scope: Scope) -> bool:
    """Whether errors take the Anthropic shape (else OpenAI's)."""
    path: str = scope["path"]
    return path.startswith("/v1/messages") or header(scope, b"anthropic-version") is not None


PARTS: tuple[type, ...] = (Exchange, Routing, Outcome)
"""The parts of an exchange whose fields change as it is answered: each is set only in its
own module (tests/server/test_exchange_parts.py)."""
FROZEN_PARTS: tuple[type, ...] = (Caller, Asked)
"""The parts that never change once made (named tuples: half a frozen dataclass's
cost to make, on every request)."""
