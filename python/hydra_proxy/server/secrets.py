"""Provider keys out of what the proxy answers: an upstream that echoes the key it was
sent (in an error message, an HTML error page) never gets it to the client.

Every error response the app writes (asgi.respond with a status >= 400: the proxy's own
errors and upstream error bodies passed through) has each provider key replaced with its
masked id (``sk-…abcd``). Streams are not scanned (no per-chunk cost): an upstream
checks the key before it starts one, and echoes it, if at all, in the HTTP error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..config import Provider
from ..config.keys import mask

SCOPE_KEY = "hydra.redact"
# Shorter values are not treated as secrets (they would match ordinary text).
MIN_SECRET_LENGTH = 8

Redact = Callable[[bytes], bytes]


def provider_secrets(providers: Iterable[Provider]) -> tuple[tuple[bytes, bytes], ...]:
    """(key, its masked id) for every provider key that is set, longest first."""
    keys = {key for provider in providers for _, key in provider.api_keys()}
    return tuple(
        (key.encode(), mask(key).encode())
        for key in sorted(keys, key=len, reverse=True)
        if len(key) >= MIN_SECRET_LENGTH
    )


def redactor(secrets: tuple[tuple[bytes, bytes], ...]) -> Redact:
    def redact(body: bytes) -> bytes:
        for key, masked in secrets:
            if key in body:
                body = body.replace(key, masked)
        return body

    return redact
