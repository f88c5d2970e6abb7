"""One usage record per finished request: what it asked, what it cost, how it went.

Token conventions (the canonical, Anthropic Messages ones, whatever the upstream spoke):

* ``input_tokens``: input billed at the base rate, that is WITHOUT the tokens read from or
  written to a prompt cache (Chat Completions' ``prompt_tokens`` includes its
  ``cached_tokens``: they are subtracted, see :mod:`.upstream_usage`);
* ``cache_read_tokens`` / ``cache_write_tokens``: prompt-cache hits and cache writes;
* ``output_tokens``: every generated token, reasoning included;
* ``reasoning_tokens``: the part of ``output_tokens`` spent thinking, when the upstream
  says (a breakdown, not an addition: it is never added to the output again).

``estimated`` is True when the upstream reported no usage (a stream cut before its usage
arrived, an upstream that never sends it) and the counts are the proxy's own estimate.
"""

from __future__ import annotations

import hashlib
import hmac
from functools import lru_cache
from typing import NamedTuple

from ..config.protocols import PROTOCOLS, ProtocolName

__all__ = ["PROTOCOLS", "ProtocolName", "Tokens", "UsageRecord", "client_key_id"]

# A fixed, public salt: the id only has to be stable and not reveal the key. An HMAC with a
# salt keeps the id from matching a plain sha256 of the key published anywhere else.
_KEY_ID_SALT = b"hydra-proxy client key id v1"


# Per request the key is one of the few configured proxy keys: its id is computed once.
@lru_cache(maxsize=64)
def client_key_id(key: bytes | str | None) -> str | None:
    """A short, non-reversible id of a proxy key (8 hex digits); None without a key.

    32 bits identify one of a team's handful of keys, and are far too few to confirm a
    guessed key offline with any confidence (many keys share each id).
    """
    if key is None:
        return None
    raw = key.encode() if isinstance(key, str) else key
    if not raw:
        return None
    return hmac.new(_KEY_ID_SALT, raw, hashlib.sha256).hexdigest()[:8]


class Tokens(NamedTuple):
    """Token counts of one request, in the conventions of the module docstring (a tuple:
    built once per request, it must be cheap)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write


class UsageRecord(NamedTuple):
    """One finished request. ``cost_usd`` None means the model has no price: unknown, not 0.

    A named tuple, in the ledger's column order: built on the request path (a tuple costs a
    tenth of a frozen dataclass), it is also the row the ledger writes as it is.
    """

    time: float  # Unix time (seconds, UTC) when the request arrived
    request_id: str
    protocol: ProtocolName  # the client's protocol
    route: str  # the route's match pattern ("*" for the default route)
    provider: str
    requested_model: str
    target_model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    estimated: bool = False
    cost_usd: float | None = None
    latency_ms: float = 0.0
    ttfb_ms: float | None = None  # None: no byte reached the client
    status: int = 200
    error_type: str | None = None
    key_id: str | None = None  # client_key_id() of the proxy key, never the key
    stream: bool = False
    key_name: str | None = None  # the named key's name (hydra_proxy.team), else None
    team: str | None = None  # the named key's team
    # The agent within a client's session (Claude Code's x-claude-code-agent-id: a teammate
    # or subagent), else None: the lead's own requests carry none.
    agent: str | None = None
    # Why the proxy refused the request itself (a named key's limit, rights or budget, the
    # drain, an admission bound), else None: a refusal is no spend, and is shown apart.
    refusal: str | None = None

    @property
    def tokens(self) -> Tokens:
        return Tokens(
            self.input_tokens,
            self.output_tokens,
            self.cache_read_tokens,
            self.cache_write_tokens,
            self.reasoning_tokens,
        )

    @property
    def is_error(self) -> bool:
        return self.error_type is not None or self.status >= 400
