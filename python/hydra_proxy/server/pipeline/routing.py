"""What the route decides for a model request: the decision (narrowed by a named key's
rights), what a named key's checks hold until the request settles, and the attempt being
sent (the usage record names the one that answered).

Each step notes its part through one method here, and only here are these fields set
(tests/server/test_exchange_parts.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...config.check import not_found_message
from ...config.routes import Attempt, RequestTraits, RouteDecision, decide
from ...errors import ProxyError

if TYPE_CHECKING:
    from ...team.checks import Pass
    from ..transport.worker import Worker


def decide_route(
    worker: Worker, traits: RequestTraits, *, param: str | None = None
) -> RouteDecision:
    """The route a request takes, or a 404 `not_found_error` listing what is routable."""
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


class Routing:
    """What the route decides for one request."""

    __slots__ = ("attempt", "decision", "held")

    def __init__(self) -> None:
        self.decision: RouteDecision | None = None
        self.attempt: Attempt | None = None
        """The attempt being sent: the usage record names the one that answered."""
        self.held: Pass | None = None
        """What the named key's checks hold for this request until it settles."""

    def decided(self, decision: RouteDecision) -> None:
        """The route decided (again when a named key's rights narrow it)."""
        self.decision = decision

    def holding(self, held: Pass) -> None:
        """A named key's checks passed: its limits and budget hold `held`."""
        self.held = held

    def sending(self, attempt: Attempt) -> None:
        self.attempt = attempt
