"""Parameters an upstream refuses, learnt once and sent no more.

A translated request carries fields the proxy added or carried for the upstream's sake (a
reasoning level, a thinking switch, ``parallel_tool_calls``, a tool's ``strict``...). A
model that does not take one answers a 400 naming it (OpenAI: ``param`` and "Unsupported
parameter"; others say "unrecognized", "unknown", "not supported" with the name), and the
whole session would die on it. So, before any byte of the reply reaches the client: read
the refusal (`refused_param`), remember it for the provider and model (logged once), and
send the request once more without it (`without`); later requests leave it out from the
start (`Refusals.by_model`). A client's own fields on a same-protocol passthrough are
never touched: there the upstream's 400 is the client's.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import orjson

from ...upstream_errors import ErrorBody

__all__ = ["DROPPABLE", "REFUSALS", "Refusals", "refused_param", "without"]

log = logging.getLogger("hydra_proxy.refusals")

# What a request may go without: the answer is the same, less tuned.
DROPPABLE = (
    "reasoning_effort",
    "thinking",
    "enable_thinking",
    "thinking_budget",
    "parallel_tool_calls",
    "prompt_cache_key",
    "stream_options",
    "strict",
    "user",
)
_NAMES = re.compile(r"\b(" + "|".join(DROPPABLE) + r")\b")
_REFUSING = re.compile(
    r"unsupported|not supported|unrecognized|unrecognised|unknown|not allowed|not permitted"
    r"|extra (?:fields|inputs)|does not support|invalid (?:parameter|argument)",
    re.IGNORECASE,
)
MAX_MODELS = 1024  # provider/model pairs remembered per worker


def refused_param(status: int, body: ErrorBody) -> str | None:
    """The droppable field a 400/422 error says the upstream refuses (None: not one)."""
    if status not in (400, 422):
        return None
    if body.param is not None:
        name = body.param.rpartition(".")[2]  # "tools[0].function.strict" -> strict
        if name in DROPPABLE:
            return name
    message = body.message or ""
    found = _NAMES.search(message)
    if found is not None and _REFUSING.search(message):
        return found.group(1)
    return None


def without(body: bytes, names: frozenset[str] | set[str]) -> bytes | None:
    """The JSON request body without those fields (top level, and a tool's ``strict``);
    None when it carries none of them."""
    request: Any = orjson.loads(body)
    if not isinstance(request, dict):
        return None
    changed = False
    for name in names & request.keys():
        del request[name]
        changed = True
    if "strict" in names:
        for tool in request.get("tools") or ():
            function = tool.get("function") if isinstance(tool, dict) else None
            for holder in (tool, function):
                if isinstance(holder, dict) and "strict" in holder:
                    del holder["strict"]
                    changed = True
    return orjson.dumps(request) if changed else None


class Refusals:
    """What each provider's model refused, per worker: `by_model` is read on every
    translated attempt (a dict lookup, nothing more), written by `learn`."""

    def __init__(self) -> None:
        self.by_model: dict[tuple[str, str], frozenset[str]] = {}

    def learn(self, provider: str, model: str, name: str, message: str | None) -> None:
        """Remember a refusal; said once per provider, model and field. At most
        `MAX_MODELS` pairs: the first learnt go first."""
        key = (provider, model)
        known = self.by_model.get(key, frozenset())
        if name in known:
            return
        self.by_model[key] = known | {name}
        while len(self.by_model) > MAX_MODELS:
            del self.by_model[next(iter(self.by_model))]
        log.warning(
            "provider %r refuses %r for model %r (%s); it is left out of this model's "
            "requests from now on",
            provider,
            name,
            model,
            (message or "no message")[:200],
        )


REFUSALS = Refusals()
