"""Ingress: one module per client endpoint, each turning a client request into a Plan.

parse -> resolve the route -> plan, with no I/O: the exchange module sends the plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from ...config import Provider, Route, Settings
from ...errors import ProxyError, invalid_request
from ...transducers import Implementation
from ..plan import Target


@dataclass(frozen=True)
class Context:
    """What every ingress needs from the running server (no I/O handles)."""

    settings: Settings
    impl: Implementation
    signing_key: bytes


def parse_request(body: bytes) -> dict[str, Any]:
    """The request body as a JSON object with a model name, or a 400."""
    try:
        request = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise invalid_request(f"request body is not valid JSON: {exc}") from None
    if not isinstance(request, dict):
        raise invalid_request("request body must be a JSON object")
    model = request.get("model")
    if not isinstance(model, str) or not model:
        raise invalid_request("model: a model name (string) is required", "model")
    return request


def resolve(settings: Settings, model: str, *, param: str | None = None) -> tuple[Provider, Route]:
    """The provider and route for `model`, or a 404 naming it."""
    resolved = settings.resolve(model)
    if resolved is None:
        raise ProxyError(
            404, f"model: no route for model {model!r}", error_type="not_found_error", param=param
        )
    return resolved


def target_of(provider: Provider, route: Route, model: str, request: dict[str, Any]) -> Target:
    """Where the request goes, for its usage record."""
    return Target(
        route=route.match,
        provider=provider.name,
        upstream=provider.kind,
        requested_model=model,
        target_model=route.model or model,
        stream=request.get("stream") is True,
    )
