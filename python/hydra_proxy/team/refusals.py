"""The refusals of named keys, in the client's protocol, each naming the key (or team), the
limit and when it resets.

- a rate limit (rpm, tpm, concurrent streams): 429 ``rate_limit_error`` with ``retry-after``,
  which Claude Code, Codex and the SDKs wait out and retry;
- over budget: the exhausted-quota convention of each protocol, which clients do not retry:
  Anthropic's 402 ``billing_error`` (Claude Code 2.1.328 shows it and stops after one
  request; a 400 it sends again up to five times, changing its tools), OpenAI's 429
  ``insufficient_quota`` (Codex stops on that code; the SDKs would retry a 429, so
  ``x-should-retry: false`` says not to). The message says the budget, the spend and the
  reset;
- a revoked, expired or unknown key: 401 ``authentication_error``;
- a model the key may not use: 403 ``permission_error``.
"""

from __future__ import annotations

import math
import time

from ..errors import ProxyError
from ..usage.pricing import usd
from .period import utc_text


class QuotaExhausted(ProxyError):
    """Over budget: no retry will succeed before the period ends."""

    no_retry = True
    cause = "budget"

    @property
    def openai_status(self) -> int:
        return 429


class Refusal(ProxyError):
    """A named key's refusal; `cause` names the check for the usage record (rpm, tpm,
    streams, budget, unpriced, model, key)."""

    def __init__(self, cause: str, status: int, message: str, **kwargs: str | None) -> None:
        super().__init__(status, message, **kwargs)
        self.cause = cause


_CAUSES = {
    "requests per minute": "rpm",
    "tokens per minute": "tpm",
    "concurrent streams": "streams",
}


def rate_limited(who: str, limit: str, value: float, wait: float) -> ProxyError:
    seconds = max(1, math.ceil(wait))
    return Refusal(
        _CAUSES.get(limit, "rate"),
        429,
        f"hydra-proxy: {who} is over its limit of {value:g} {limit}; it has room again in "
        f"{seconds} s (at {utc_text(time.time() + seconds)})",
        error_type="rate_limit_error",
        retry_after=str(seconds),
    )


def over_budget(
    who: str, budget: float, period: str, spent: float, reserved: float, needed: float, reset: float
) -> ProxyError:
    in_flight = f" and {usd(reserved)} in flight" if reserved > 0 else ""
    return QuotaExhausted(
        402,
        f"hydra-proxy: {who} is over its budget of {usd(budget)} per {period}: {usd(spent)} "
        f"spent{in_flight}, this request may cost up to {usd(needed)}. The budget resets at "
        f"{utc_text(reset)}; ask the proxy's admin to raise it",
        error_type="billing_error",
        code="insufficient_quota",
    )


def unpriced(who: str, model: str) -> ProxyError:
    return Refusal(
        "unpriced",
        403,
        f"hydra-proxy: {who} has a budget and model {model!r} has no price, so its cost "
        "cannot be counted; add a [pricing] entry for it",
        error_type="permission_error",
    )


def not_allowed(name: str, model: str, globs: tuple[str, ...]) -> ProxyError:
    return Refusal(
        "model",
        403,
        f"hydra-proxy: key {name!r} may not use model {model!r} (allowed: {', '.join(globs)})",
        error_type="permission_error",
        code="model_not_allowed",
    )


def unauthorized(message: str) -> ProxyError:
    return Refusal("key", 401, f"hydra-proxy: {message}", error_type="authentication_error")
