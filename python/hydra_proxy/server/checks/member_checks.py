"""A named key's checks on a routed request (hydra_proxy.team.checks), the one place every
entry calls them: a model request passes them all (`admit`: rights, tpm, budget, streams,
rpm; what they hold is given back when the request ends, in `App.http`), a token count
its rights and its requests per minute (`admit_count`). Without a named key both do
nothing."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ...config.routes import RequestTraits, RouteDecision

if TYPE_CHECKING:
    from ...config import ModelInfo
    from ..pipeline.exchange import Exchange


async def admit(exchange: Exchange, traits: RequestTraits) -> None:
    team, member, decision = exchange.worker.team, exchange.caller.member, exchange.route.decision
    if member is None:
        return
    assert team is not None and decision is not None
    checks = team.checks
    exchange.log["key"] = member.key.name
    exchange.log["model"] = decision.requested_model
    decision = checks.rights(member.key, decision)
    exchange.route.decided(decision)
    exchange.route.holding(
        await checks.admit(
            member.key, member.team, decision, traits, exchange.request_id, time.time()
        )
    )


async def admit_count(exchange: Exchange, decision: RouteDecision) -> None:
    """A token count: the model must be one the key may use, and it counts as a request."""
    team, member = exchange.worker.team, exchange.caller.member
    if member is None:
        return
    assert team is not None
    exchange.log["key"] = member.key.name
    team.checks.rights(member.key, decision)
    await team.checks.count_request(member.key, member.team, time.time())


def usable(exchange: Exchange, listing: list[ModelInfo]) -> list[ModelInfo]:
    """What a model listing shows the request's key: with named rights, only the names it
    may use (every listing of every protocol filters through here)."""
    member = exchange.caller.member
    if member is None or not member.key.models:
        return listing
    return [m for m in listing if member.key.may_use(m.id)]
