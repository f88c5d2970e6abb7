"""What a web browser may ask of the proxy: the Host it names, the Origin it comes from, the
Content-Type of its body, and CORS for the origins the operator lists.

A page the user opens can send requests to the proxy on loopback: a ``no-cors`` fetch
with a body of no declared type reaches ``POST /v1/messages`` without a preflight, and
after DNS rebinding (the page's own name pointed at 127.0.0.1) it can also read the
answers. So, on a proxy without client keys (whose requests spend the operator's provider
keys with nothing asked):

- a request whose ``Host`` names neither this proxy's bound address nor a loopback name
  (``localhost``, ``127.0.0.1``, ``[::1]``), nor one of ``allowed_hosts``, is refused: a
  rebinding page sends its own name. Bound to a wildcard address (``0.0.0.0``, ``::``),
  any IP address names the proxy (a rebinding page has a name, never an address);
- a request carrying an ``Origin`` is refused unless that origin is listed in
  ``allowed_origins`` or is the proxy itself (its own pages: the dashboard);

and on every proxy, a POST body must say ``Content-Type: application/json`` (or
``application/*+json``), which a page cannot send to another origin without a CORS
preflight. With client keys the Host and Origin are not checked: a page cannot add the
key header without a preflight either, and only listed origins pass one.

CORS is answered for listed origins only: the preflight (``OPTIONS`` with
``Access-Control-Request-Method``) and the ``Access-Control-Allow-Origin`` of the answers.

`decide` is pure (headers in, a verdict out); `check` applies it to the ASGI request
(and `preflight_answer` answers a preflight, server/endpoints/handlers.py). Refusals are
ProxyErrors, answered in the client's protocol, that name the setting which would allow
the request.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...config.web import ANY_HOST, normal_origin
from ...errors import ProxyError, invalid_request
from ..pipeline.exchange import Headers, Message, Scope, Send

if TYPE_CHECKING:
    from ...config import Settings

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_ADDRESSES = frozenset({"0.0.0.0", "::", ""})
# Answers a web client may read besides the simple ones.
_EXPOSED = b"x-request-id, request-id, retry-after"
_PREFLIGHT_MAX_AGE = b"600"
_METHODS = b"GET, HEAD, POST, OPTIONS"
_MAX_SEEN_HOSTS = 64


@dataclass(frozen=True)
class Policy:
    """The rules of one server (built from its settings once)."""

    guard: bool  # no client keys: Host and Origin are checked
    hosts: frozenset[str]  # lower-case host names (no port) that name this proxy
    any_address: bool  # bound to a wildcard address: every IP literal names it
    any_host: bool  # allowed_hosts holds "*": the Host check is off
    origins: frozenset[str]  # allowed origins, normalised (scheme://host[:port])
    # Host header values already judged (a client sends the same one every time).
    seen_hosts: dict[bytes, bool] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def for_settings(cls, settings: Settings, *, client_keys: bool) -> Policy:
        return cls.of(
            bound_host=settings.host,
            allowed_hosts=settings.allowed_hosts,
            allowed_origins=settings.allowed_origins,
            client_keys=client_keys,
        )

    @classmethod
    def of(
        cls,
        *,
        bound_host: str,
        allowed_hosts: Iterable[str] = (),
        allowed_origins: Iterable[str] = (),
        client_keys: bool,
    ) -> Policy:
        bound = _strip_brackets(bound_host.strip().lower())
        names = {_strip_brackets(h.strip().lower().rstrip(".")) for h in allowed_hosts}
        return cls(
            guard=not client_keys,
            hosts=frozenset(LOOPBACK_NAMES | {bound} | (names - {ANY_HOST})),
            any_address=bound in WILDCARD_ADDRESSES,
            any_host=ANY_HOST in names,
            origins=frozenset(normal_origin(o) for o in allowed_origins),
        )


@dataclass(frozen=True)
class Verdict:
    """`refusal`: the error to answer with (None: the request goes on); `cors`: headers to
    add to every answer (a listed origin)."""

    refusal: ProxyError | None = None
    cors: tuple[tuple[bytes, bytes], ...] = ()


def _strip_brackets(host: str) -> str:
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def _host_name(value: str) -> str:
    """The name part of a Host header value (lower case, no port, no brackets)."""
    value = value.strip().lower()
    if value.startswith("["):
        close = value.find("]")
        return value[1:close] if close >= 0 else value
    if value.count(":") == 1:
        value = value.partition(":")[0]
    return value.rstrip(".")


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _host_ok(policy: Policy, value: bytes) -> bool:
    if policy.any_host:
        return True
    known = policy.seen_hosts.get(value)
    if known is None:
        known = policy.seen_hosts[value] = _names_proxy(policy, value)
        if len(policy.seen_hosts) > _MAX_SEEN_HOSTS:  # bounded: Host is the client's to say
            policy.seen_hosts.clear()
    return known


def _names_proxy(policy: Policy, value: bytes) -> bool:
    name = _host_name(value.decode("latin-1"))
    if name in policy.hosts:
        return True
    return (policy.any_address or _is_loopback(name)) and _is_ip(name)


def _is_loopback(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _forbidden(message: str) -> ProxyError:
    return ProxyError(403, message, error_type="permission_error")


def content_type_refusal(value: bytes | None) -> ProxyError | None:
    """A 400 unless a request body's Content-Type says JSON (None: it does)."""
    if value is None:
        return invalid_request(
            "the request has no Content-Type: send Content-Type: application/json (a body "
            "that does not say it is JSON is refused: a web page can send one to any address)"
        )
    media = value.split(b";", 1)[0].strip().lower()
    if media == b"application/json" or (
        media.startswith(b"application/") and media.endswith(b"+json")
    ):
        return None
    shown = value.decode("latin-1")[:100]
    return invalid_request(f"content-type must be application/json, not {shown!r}")


_PREFLIGHT_HEADERS = (
    b"origin",
    b"access-control-request-method",
    b"access-control-request-headers",
    b"access-control-request-private-network",
)


def _picked(headers: Sequence[tuple[bytes, bytes]], names: tuple[bytes, ...]) -> list[bytes | None]:
    """The value of each of `names` (the last one sent), None where absent."""
    found: dict[bytes, bytes | None] = dict.fromkeys(names)
    for name, value in headers:
        if name in found:
            found[name] = value
    return list(found.values())


def decide(policy: Policy, method: str, headers: Sequence[tuple[bytes, bytes]]) -> Verdict:
    """The verdict on one request, from its method and headers alone."""
    host = origin = content_type = None
    for name, value in headers:  # the last one sent of each (a loop: every request's)
        if name == b"host":
            host = value
        elif name == b"origin":
            origin = value
        elif name == b"content-type":
            content_type = value
    listed = origin is not None and normal_origin(origin.decode("latin-1")) in policy.origins
    if policy.guard:
        if host is not None and not _host_ok(policy, host):
            shown = host.decode("latin-1")[:100]
            return Verdict(
                _forbidden(
                    f"Host {shown!r} does not name this proxy (a web page that rebinds its "
                    "name to this address sends its own): to accept it, add the name to "
                    "allowed_hosts ([server] allowed_hosts or HYDRA_ALLOWED_HOSTS), or set "
                    "client keys (HYDRA_PROXY_KEYS)"
                )
            )
        if origin is not None and not listed and not _same_origin(origin, host):
            shown = origin.decode("latin-1")[:100]
            return Verdict(
                _forbidden(
                    f"requests from the web origin {shown!r} are refused (any page the user "
                    "opens could otherwise spend this proxy's provider keys): to allow it, "
                    "add it to allowed_origins ([server] allowed_origins or "
                    "HYDRA_ALLOWED_ORIGINS)"
                )
            )
    if method == "POST":
        refusal = content_type_refusal(content_type)
        if refusal is not None:
            return Verdict(refusal)
    if listed and origin is not None:
        return Verdict(cors=_cors(origin))
    return _GOES_ON


_GOES_ON = Verdict()  # made once: most requests get it


def _same_origin(origin: bytes, host: bytes | None) -> bool:
    """Whether the Origin is this proxy itself (its pages), as named by the Host header."""
    if host is None:
        return False
    _, sep, authority = origin.decode("latin-1").strip().lower().partition("://")
    return bool(sep) and authority == host.decode("latin-1").strip().lower()


def _cors(origin: bytes) -> tuple[tuple[bytes, bytes], ...]:
    return (
        (b"access-control-allow-origin", origin),
        (b"access-control-expose-headers", _EXPOSED),
        (b"vary", b"origin"),
    )


def preflight_answer(
    policy: Policy, headers: Sequence[tuple[bytes, bytes]]
) -> tuple[int, Headers] | ProxyError | None:
    """A CORS preflight's answer (status, headers besides those `check` adds for the listed
    origin); a ProxyError for any other origin; None when the request is no preflight."""
    origin, requested, wanted, private = _picked(headers, _PREFLIGHT_HEADERS)
    wanted_headers = b"" if wanted is None else wanted
    if origin is None or requested is None:
        return None
    if normal_origin(origin.decode("latin-1")) not in policy.origins:
        shown = origin.decode("latin-1")[:100]
        return _forbidden(
            f"CORS is answered only for the origins in allowed_origins, not {shown!r} "
            "([server] allowed_origins or HYDRA_ALLOWED_ORIGINS)"
        )
    out: Headers = [
        (b"access-control-allow-methods", _METHODS),
        (b"access-control-max-age", _PREFLIGHT_MAX_AGE),
    ]
    allowed = _header_names(wanted_headers)
    if allowed:
        out.append((b"access-control-allow-headers", allowed))
    if private is not None and private.strip().lower() == b"true":
        out.append((b"access-control-allow-private-network", b"true"))
    return 204, out


def _header_names(value: bytes) -> bytes:
    """The requested header names that are header-name tokens, as one list."""
    names = [n.strip().lower() for n in value.split(b",")]
    return b", ".join(
        n for n in names if n and all(33 <= c < 127 and c not in b'",;:=()' for c in n)
    )


def check(policy: Policy, scope: Scope, send: Send) -> Send:
    """Apply `decide` to an ASGI request: raises the refusal, else returns `send` (adding
    the CORS headers of a listed origin to the answer)."""
    verdict = decide(policy, scope["method"], scope["headers"])
    if verdict.refusal is not None:
        raise verdict.refusal
    if not verdict.cors:
        return send
    extra = list(verdict.cors)

    async def send_with_cors(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *extra]}
        await send(message)

    return send_with_cors
