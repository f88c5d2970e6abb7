"""Ingress: one module per client endpoint, each turning a client request into a Plan.

parse -> decide the route (request traits) -> a `Routed`: the decision and how to plan
each of its attempts, with no I/O. The attempts module sends the plans in order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...config import (
    Attempt,
    Provider,
    RequestTraits,
    Route,
    RouteDecision,
    Settings,
    not_found_message,
)
from ...errors import ProxyError, invalid_request
from ...transducers import Implementation
from ..limits import DEFAULT_MAX_JSON_DEPTH, check_model_name, parse_object
from ..plan import Plan, Target


@dataclass(frozen=True)
class Context:
    """What every ingress needs from the running server (no I/O handles)."""

    settings: Settings
    impl: Implementation
    signing_key: bytes


def parse_request(body: bytes, max_depth: int = DEFAULT_MAX_JSON_DEPTH) -> dict[str, Any]:
    """The request body as a JSON object (within `max_depth` levels) with a model name, or
    a 400 naming the problem."""
    request = parse_object(body, max_depth)
    model = request.get("model")
    if not isinstance(model, str) or not model:
        raise invalid_request("model: a model name (string) is required", "model")
    check_model_name(model)
    return request


@dataclass(frozen=True)
class Routed:
    """A routed client request: the decision and the Plan of each attempt (built on demand
    for the attempt's provider kind and model, through the same ingress function)."""

    decision: RouteDecision
    build: Callable[[Attempt], Plan]
    stream: bool = False
    """The client asked for a stream (for the usage record)."""


def decide(settings: Settings, traits: RequestTraits, *, param: str | None = None) -> RouteDecision:
    """The route a request takes, or a 404 `not_found_error` listing what is routable."""
    decision = settings.decide(traits)
    if decision is None:
        raise ProxyError(
            404,
            not_found_message(settings, traits.model),
            error_type="not_found_error",
            param=param,
        )
    return decision


def resolve(settings: Settings, model: str, *, param: str | None = None) -> tuple[Provider, Route]:
    """The provider and route for a model name alone, or a 404 listing what is routable:
    for an ingress that plans a single upstream itself (a Plan, not a Routed: no traits,
    fallbacks or key pools). Prefer `decide`."""
    resolved = settings.resolve(model)
    if resolved is None:
        raise ProxyError(
            404, not_found_message(settings, model), error_type="not_found_error", param=param
        )
    return resolved


def usage_target(decision: RouteDecision, attempt: Attempt, *, stream: bool) -> Target:
    """Where one attempt of a routed request goes, for the usage record (the record names
    the attempt that answered: the last one sent)."""
    return Target(
        route=decision.route.match,
        provider=attempt.provider.name,
        upstream=attempt.provider.kind,
        requested_model=decision.requested_model,
        target_model=attempt.model,
        stream=stream,
    )
