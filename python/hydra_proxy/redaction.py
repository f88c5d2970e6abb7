"""API keys out of what the proxy answers: the one redaction, pure (no I/O).

An upstream may echo the key it was sent (in an error message, an HTML error page, a
`param`), and a client may send a key-like string the proxy then quotes in an error. Every
error the proxy writes goes through a `Redactor` first: each known secret (the providers'
configured keys, and in key-passthrough mode the client's own key) and anything else that
looks like an API key becomes ``[redacted]``. Streams are not scanned (no per-chunk cost):
an upstream checks the key before it starts one, and echoes it, if at all, in the HTTP
error.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["KEY_LIKE", "MIN_SECRET_LENGTH", "REDACTED", "SCRUB", "Redactor"]

REDACTED = "[redacted]"
# Shorter values are not treated as secrets (they would match ordinary text).
MIN_SECRET_LENGTH = 8
# Key-like tokens: OpenAI/Anthropic/OpenRouter (sk-...), Groq (gsk_), xAI, Google (AIza),
# and any bearer token. A masked key (``sk-ab***yz``, ``sk-…abcd``) stays as it is.
KEY_LIKE = (
    r"(?:\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{8,}|\bsk_[A-Za-z0-9_]{8,}|\bgsk_[A-Za-z0-9]{8,}"
    r"|\bxai-[A-Za-z0-9]{8,}|\bAIza[0-9A-Za-z_\-]{20,}|(?i:bearer)\s+[A-Za-z0-9._~+/\-]{8,}=*)"
)
_KEY_LIKE_TEXT = re.compile(KEY_LIKE)
_KEY_LIKE_BYTES = re.compile(KEY_LIKE.encode())


class Redactor:
    """Replaces the given secrets, and every key-like token, with ``[redacted]``."""

    __slots__ = ("_secrets", "_secrets_bytes")

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        kept = {s for s in secrets if len(s) >= MIN_SECRET_LENGTH}
        # Longest first: a key that contains another is replaced whole.
        self._secrets = tuple(sorted(kept, key=len, reverse=True))
        self._secrets_bytes = tuple(s.encode() for s in self._secrets)

    def with_secrets(self, extra: Iterable[str]) -> Redactor:
        """This redactor, also replacing `extra` (a request's own key)."""
        return Redactor((*self._secrets, *extra))

    def text(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return _KEY_LIKE_TEXT.sub(REDACTED, text)

    def body(self, body: bytes) -> bytes:
        for secret in self._secrets_bytes:
            if secret in body:
                body = body.replace(secret, REDACTED.encode())
        return _KEY_LIKE_BYTES.sub(REDACTED.encode(), body)

    def finds(self, text: str) -> bool:
        """Whether `text` holds anything this redactor would replace."""
        return self.text(text) != text


SCRUB = Redactor()
"""Knows no secret: replaces key-like tokens only."""
