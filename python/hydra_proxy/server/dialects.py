"""What each upstream protocol expects on the wire, as data: path, auth, version headers.

The ingress modules build an upstream request from one of these rows; nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import Provider, ProviderKind


@dataclass(frozen=True)
class Dialect:
    kind: ProviderKind
    path: str
    """Appended to the provider's base_url."""
    auth_header: str
    auth_prefix: str
    """The key goes into `auth_header` as `auth_prefix + key`."""
    fixed_headers: tuple[tuple[str, str], ...]
    """Sent with every request unless the client's own value is forwarded (passthrough)."""
    passthrough_headers: tuple[bytes, ...]
    """Client headers forwarded on same-protocol passthrough (never across protocols)."""
    passthrough_query: bool
    """The client's query string is kept on passthrough."""
    strips_proxy_signatures: bool
    """Thinking blocks signed by this proxy are dropped before this upstream sees them."""

    def url(self, provider: Provider, query: bytes = b"") -> str:
        url = provider.base_url.rstrip("/") + self.path
        if query and self.passthrough_query:
            url += "?" + query.decode("latin-1")
        return url

    def headers(self, provider: Provider, *, accept: str | None) -> dict[str, str]:
        headers = {"content-type": "application/json", **dict(self.fixed_headers)}
        if accept is not None:
            headers["accept"] = accept
        key = provider.api_key()
        if key:
            headers[self.auth_header] = self.auth_prefix + key
        return headers


ANTHROPIC_VERSION = "2023-06-01"

DIALECTS: dict[ProviderKind, Dialect] = {
    "openai": Dialect(
        kind="openai",
        path="/chat/completions",
        auth_header="authorization",
        auth_prefix="Bearer ",
        fixed_headers=(),
        passthrough_headers=(),
        passthrough_query=False,
        strips_proxy_signatures=False,
    ),
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
    "responses": Dialect(
        kind="responses",
        path="/responses",
        auth_header="authorization",
        auth_prefix="Bearer ",
        fixed_headers=(),
        passthrough_headers=(),
        passthrough_query=False,
        strips_proxy_signatures=False,
    ),
    # The path is the model's (gemini.request_writer.gemini_path): the writer supplies it.
    "gemini": Dialect(
        kind="gemini",
        path="",
        auth_header="x-goog-api-key",
        auth_prefix="",
        fixed_headers=(),
        passthrough_headers=(),
        passthrough_query=False,
        strips_proxy_signatures=False,
    ),
}
