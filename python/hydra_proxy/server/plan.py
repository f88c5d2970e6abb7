"""A planned exchange: the upstream request to send and what to do with its reply.

Ingress modules build a Plan from a client request without any I/O; the exchange module
sends it and answers the client in one of three ways:

- relay: a translated stream, through a transducer built once the request is on its way
  (its construction may cost a token estimate: that overlaps with the upstream's work);
- forward: the upstream's bytes unchanged (same protocol on both sides);
- json: a non-streamed reply, parsed and converted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..transducers import StreamTransducer

ClientProtocol = Literal["anthropic", "openai", "responses"]
"""The client's protocol: Anthropic Messages, OpenAI Chat, OpenAI Responses."""


@dataclass(frozen=True)
class Target:
    """Where a request went, for its usage record (server/accounting.py)."""

    route: str  # the route's match pattern
    provider: str  # the provider's name
    upstream: str  # the provider's kind (its protocol): "openai", "anthropic", ...
    requested_model: str
    target_model: str
    stream: bool


@dataclass
class Plan:
    url: str
    headers: dict[str, str]
    body: bytes
    client: ClientProtocol
    kind: Literal["relay", "forward", "json"]
    transducer: Callable[[], StreamTransducer] | None = None
    """relay: builds the transducer (called after the upstream request was sent)."""
    convert: Callable[[Any], Any] | None = None
    """json: the upstream's parsed reply -> the client's reply (a JSON-able object)."""
    log: dict[str, object] = field(default_factory=dict)
    """Details for the access-log line."""
    provider: str = ""
    """The provider's name, for errors that must say which upstream failed (set by the
    attempts module)."""
    target: Target | None = None
    """Where the request goes, for its usage record."""
