"""The secrets of named keys: ``hk-`` and 43 random URL-safe characters (256 bits), stored
only as their SHA-256. A secret is random, not chosen by a person, so a plain hash is as
strong as a slow one and costs a microsecond per request."""

from __future__ import annotations

import hashlib
import secrets

PREFIX = "hk-"
_PREFIX_BYTES = PREFIX.encode()


def new_secret() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def secret_hash(secret: bytes | str) -> str:
    raw = secret.encode() if isinstance(secret, str) else secret
    return hashlib.sha256(raw).hexdigest()


def is_named(presented: bytes) -> bool:
    """Whether a presented key has the shape of a named key (else: a HYDRA_PROXY_KEYS one)."""
    return presented.startswith(_PREFIX_BYTES)
