"""A client's agent session: the key pool's key it keeps (`session_id`) and, for the
upstream, a prompt-cache key (`session_cache_key`).

Providers that cache by prefix route a request to a cache by a key (OpenAI's
``prompt_cache_key``): one key per client session keeps a session's turns on the cache that
holds its history. The key is the client's own ``prompt_cache_key`` when it sends one
(Codex does, its session id; Chat clients may), else its session header (Claude Code's
``x-claude-code-session-id``, Codex's ``session-id``, opencode's ``x-session-id`` and
``x-session-affinity``, and the ``session_headers`` setting's). A value of up to 64 characters of
``[A-Za-z0-9_.:-]`` is sent as it is (a UUID); any other becomes ``hydra-`` and 40 hex
digits of its SHA-256 (OpenAI bounds the key's length).

A team shares its lead's session: a teammate's (or subagent's) requests carry the same
session header and an ``x-claude-code-agent-id`` (`agent_id`), the lead's none. Each agent
has a history of its own, so its cache key is the session's and its agent id together.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

__all__ = [
    "AGENT_HEADER",
    "SESSION_HEADERS",
    "agent_id",
    "session_cache_key",
    "session_id",
    "use_session_headers",
]

SESSION_HEADERS = (
    b"x-claude-code-session-id",
    b"session-id",
    b"session_id",
    b"x-session-id",
    b"x-session-affinity",
)
# SESSION_HEADERS and the ones the settings add (set once as a worker starts).
_names: tuple[bytes, ...] = SESSION_HEADERS
AGENT_HEADER = b"x-claude-code-agent-id"
_MAX_AGENT = 128  # longer ids are cut: an id is a label, not a payload
_PLAIN = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_MAX_INPUT = 1024  # longer values are hashed from their first bytes: a key, not a payload


def use_session_headers(extra: tuple[str, ...]) -> None:
    """Read these headers too, after the known ones (the ``session_headers`` setting)."""
    global _names
    more = tuple(name.lower().encode("latin-1") for name in extra)
    _names = SESSION_HEADERS + tuple(name for name in more if name not in SESSION_HEADERS)


def session_id(header: Callable[[bytes], bytes | None]) -> str | None:
    """The session a client names in its headers (None: none; bounded)."""
    for name in _names:
        raw = header(name)
        if raw:
            return raw[:_MAX_INPUT].decode("latin-1")
    return None


def agent_id(header: Callable[[bytes], bytes | None]) -> str | None:
    """The agent within the session that sent the request (None: the lead)."""
    raw = header(AGENT_HEADER)
    return raw[:_MAX_AGENT].decode("latin-1") if raw else None


def session_cache_key(asked: object, header: Callable[[bytes], bytes | None]) -> str | None:
    """The cache key of a request (None: the client names no session): `asked` is the
    request's own ``prompt_cache_key`` field, `header` reads a client header."""
    value: str | None = asked if isinstance(asked, str) and asked else None
    if value is None:
        value = session_id(header)
    if value is None:
        return None
    agent = agent_id(header)
    if agent is not None:
        value = f"{value}:{agent}"
    if _PLAIN.fullmatch(value):
        return value
    digest = hashlib.sha256(value[:_MAX_INPUT].encode("utf-8", "surrogatepass")).hexdigest()
    return "hydra-" + digest[:40]
