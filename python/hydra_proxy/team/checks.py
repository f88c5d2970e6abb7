"""The checks a named key's request passes after routing, and their settlement.

In order, each through the counters (`hydra_proxy.counters.Counters`), so that where they
live is a setting:

1. model rights: the requested name, and each attempt's upstream model (an attempt the key
   may not use is dropped from the chain; none left: 403);
2. tokens per minute, key then team: admitted while the tokens in the window (60 s by
   default) are below the limit, and then the request's expected tokens (its input's upper
   bound plus its max_tokens) are counted in the window at once, so that requests in
   flight count before they settle (``hit`` of the reservation against limit - 1 + it:
   tokens are whole numbers); a shorter window counts the same rate over less time
   (rpm x window / 60);
3. budgets, key then team: a reservation of the request's cost (its input's upper bound,
   `RequestTraits.input_bound`, plus its max_tokens, at the dearest price of its attempts)
   within the budget, less what the period spent (seeded from the ledger once per period,
   and again when a shared store lost it) and what is in flight;
4. concurrent streams of the key: a slot held until the reply ends;
5. requests per minute, key then team: counted last, so a refused request is not counted.

`Pass.settle` runs when the reply has ended, on every path (done, failed, cut, the client
gone): the reservations become the real cost of the usage record (0 when nothing was
billed), the slot goes back, the tpm windows count the real tokens instead of the
reservation.

Counter names: ``key:NAME:budget``, ``key:NAME:tpm``, ``key:NAME:rpm``, ``key:NAME:streams``,
``team:NAME:budget``, ``team:NAME:tpm``, ``team:NAME:rpm``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from ..config.routes import Attempt, RequestTraits, RouteDecision
from ..counters import Counters, Unseeded
from ..errors import ProxyError
from ..usage.ledger import LedgerError
from ..usage.pricing import PriceTable
from ..usage.record import Tokens
from . import refusals
from .period import bounds
from .record import Limits, NamedKey, Team

WINDOW = 60.0
"""The default window of the per-minute limits, seconds."""
# A stream's slot lapses this long after it was taken unless released (a worker that died
# holding it in a shared store); no stream the proxy serves lasts longer than its timeouts.
STREAM_LEASE = 3600.0
# The output a request without max_tokens is reserved for (its provider's max_output first).
DEFAULT_OUTPUT_TOKENS = 4096
# A budget a shared store lost is read from the ledger this long after the loss is seen:
# every process writes its queued records within a second (the ledger's flush interval).
LEDGER_CATCH_UP = 1.2

Seed = Callable[[str, str, float], Awaitable[float]]
"""(column, name, period start) -> what the ledger says was spent since."""


@dataclass(frozen=True)
class Subject:
    """A key or a team, as its counters and refusals name it."""

    counter: str
    who: str
    limits: Limits

    def __post_init__(self) -> None:
        # The counters' names, made once per key (not per request).
        object.__setattr__(self, "tpm", self.counter + ":tpm")
        object.__setattr__(self, "rpm", self.counter + ":rpm")
        object.__setattr__(self, "budget", self.counter + ":budget")

    tpm: str = field(init=False, default="")
    rpm: str = field(init=False, default="")
    budget: str = field(init=False, default="")


def subjects(key: NamedKey, team: Team | None) -> list[Subject]:
    found = []
    if key.limits.any:
        found.append(Subject(f"key:{key.name}", f"key {key.name!r}", key.limits))
    if team is not None and team.limits.any:
        found.append(Subject(f"team:{team.name}", f"team {team.name!r}", team.limits))
    return found


@dataclass
class Pass:
    """One admitted request's holdings, given back by `settle`."""

    counters: Counters
    holder: str
    subjects: list[Subject]
    budgets: list[tuple[str, str]] = field(default_factory=list)
    """(counter, period) of each reservation."""
    stream: str | None = None
    tpm_reserved: int = 0
    """The tokens counted at admission into each window of `tpm_windows` (the real count
    replaces them)."""
    tpm_windows: list[str] = field(default_factory=list)
    settled: bool = False

    window: float = WINDOW

    async def settle(self, cost: float, tokens: int, now: float) -> None:
        """The reply ended: `cost` (USD, 0 when nothing was billed or it has no price) and
        `tokens` (all of them) are what the ledger's record says."""
        if self.settled:
            return
        self.settled = True
        counters = self.counters
        for counter, period in self.budgets:
            await counters.settle(counter, self.holder, cost, bounds(period, now)[1])
        if self.stream is not None:
            await counters.release(self.stream, self.holder)
        correction = tokens - self.tpm_reserved
        if correction:
            for name in self.tpm_windows:
                await counters.add(name, correction, self.window)


def output_tokens(attempt: Attempt, traits: RequestTraits) -> int:
    requested = traits.max_tokens
    limit = attempt.max_tokens_limit
    if requested is None:
        requested = attempt.provider.max_output or DEFAULT_OUTPUT_TOKENS
    return min(requested, limit) if limit is not None else requested


def expected_tokens(decision: RouteDecision, traits: RequestTraits) -> int:
    """What a tpm limit reserves: the input's upper bound and the most output an attempt
    may write."""
    output = max((output_tokens(a, traits) for a in decision.attempts), default=0)
    return traits.input_bound + output


def estimate(
    prices: PriceTable, decision: RouteDecision, traits: RequestTraits
) -> tuple[float | None, str]:
    """The dearest cost the request's attempts could have (None: one has no price, named)."""
    dearest = 0.0
    for attempt in decision.attempts:
        price = prices.lookup(attempt.model)
        if price is None:
            return None, attempt.model
        tokens = Tokens(traits.input_bound, output_tokens(attempt, traits))
        dearest = max(dearest, price.cost(tokens))
    return dearest, ""


class Checks:
    """The checks of one worker (its counters, prices and how unpriced models are met)."""

    def __init__(
        self,
        counters: Counters,
        prices: PriceTable,
        seed: Seed,
        *,
        allow_unpriced: bool,
        window: float = WINDOW,
    ) -> None:
        self.counters = counters
        self.window = window
        self.prices = prices
        self.seed_from_ledger = seed
        self.allow_unpriced = allow_unpriced
        self._seeded: dict[str, float] = {}
        """Budget counter -> the end of the period it was seeded for."""
        self._seeding: dict[str, asyncio.Future[None]] = {}
        self._found: dict[tuple[int, int], tuple[NamedKey, Team | None, list[Subject]]] = {}
        """The subjects of a key and team (by identity: the keyring's objects, until a
        reload replaces them)."""

    def _subjects(self, key: NamedKey, team: Team | None) -> list[Subject]:
        entry = self._found.get((id(key), id(team)))
        if entry is not None and entry[0] is key and entry[1] is team:
            return entry[2]
        if len(self._found) >= 4096:  # reloads left old ones behind
            self._found.clear()
        found = subjects(key, team)
        self._found[(id(key), id(team))] = (key, team, found)
        return found

    def rights(self, key: NamedKey, decision: RouteDecision) -> RouteDecision:
        """The decision with only the attempts the key may use (403: none, or not the
        requested name)."""
        if not key.models:
            return decision
        if not key.may_use(decision.requested_model):
            raise refusals.not_allowed(key.name, decision.requested_model, key.models)
        allowed = tuple(a for a in decision.attempts if key.may_use(a.model))
        if not allowed:
            raise refusals.not_allowed(key.name, decision.attempts[0].model, key.models)
        if len(allowed) == len(decision.attempts):
            return decision
        return dataclasses.replace(decision, attempts=allowed)

    async def admit(
        self,
        key: NamedKey,
        team: Team | None,
        decision: RouteDecision,
        traits: RequestTraits,
        holder: str,
        now: float,
    ) -> Pass:
        found = self._subjects(key, team)
        held = Pass(self.counters, holder, found, window=self.window)
        try:  # in this order: a refusal by rate spends no budget
            await self._reserve_tokens(found, held, decision, traits)
            await self._reserve_budgets(found, held, decision, traits, holder, now)
            await self._take_stream(key, held, holder)
            await self._hit_requests(found)
        except ProxyError:
            await held.settle(0.0, 0, now)
            raise
        return held

    async def _reserve_tokens(
        self, found: list[Subject], held: Pass, decision: RouteDecision, traits: RequestTraits
    ) -> None:
        """tpm: each window takes the request's expected tokens, settled to the real count."""
        window = self.window
        for s in found:
            tpm = s.limits.tpm
            if tpm is None:
                continue
            if not held.tpm_reserved:
                held.tpm_reserved = expected_tokens(decision, traits)
            reserve = held.tpm_reserved
            bound = math.ceil(tpm * (window / 60.0)) - 1 + reserve
            wait = await self.counters.hit(s.tpm, bound, reserve, window)
            if wait:  # the windows that took the reservation give it back (settle)
                raise refusals.rate_limited(s.who, "tokens per minute", tpm, wait)
            held.tpm_windows.append(s.tpm)

    async def _reserve_budgets(
        self,
        found: list[Subject],
        held: Pass,
        decision: RouteDecision,
        traits: RequestTraits,
        holder: str,
        now: float,
    ) -> None:
        """Each budget reserves the request's estimated cost in its period."""
        cost: float | None = None
        for s in found:
            budget = s.limits.budget_usd
            if budget is None:
                continue
            if cost is None:
                cost, model = estimate(self.prices, decision, traits)
                if cost is None:
                    if self.allow_unpriced:
                        return  # admitted; its record says its cost is unknown
                    raise refusals.unpriced(s.who, model)
            name = s.budget
            start, end = bounds(s.limits.period, now)
            if not await self._reserve(name, s, start, end, cost, budget, holder):
                spent, reserved = await self.counters.spent(name)
                raise refusals.over_budget(
                    s.who, budget, s.limits.period, spent, reserved, cost, end
                )
            held.budgets.append((name, s.limits.period))

    async def _take_stream(self, key: NamedKey, held: Pass, holder: str) -> None:
        """The key's concurrent-streams slot, held until the reply ends."""
        if key.streams is None:
            return
        slot = f"key:{key.name}:streams"
        if not await self.counters.acquire(slot, key.streams, holder, STREAM_LEASE):
            raise refusals.rate_limited(f"key {key.name!r}", "concurrent streams", key.streams, 1)
        held.stream = slot

    async def _hit_requests(self, found: list[Subject]) -> None:
        """rpm: one request in each subject's window."""
        window = self.window
        for s in found:
            rpm = s.limits.rpm
            if rpm is not None:
                wait = await self.counters.hit(s.rpm, rpm * (window / 60.0), 1, window)
                if wait:
                    raise refusals.rate_limited(s.who, "requests per minute", rpm, wait)

    async def count_request(self, key: NamedKey, team: Team | None, now: float) -> None:
        """A request that spends nothing (a token count) still counts against rpm."""
        await self._hit_requests(self._subjects(key, team))

    async def _reserve(
        self, name: str, s: Subject, start: float, end: float, cost: float, cap: float, holder: str
    ) -> bool:
        await self._seed(name, s, start, end)
        try:
            return await self.counters.reserve(name, cost, cap, holder)
        except Unseeded:  # the store lost the period's spend (emptied, or a new one)
            self._seeded.pop(name, None)
            await self._seed(name, s, start, end, catch_up=LEDGER_CATCH_UP)
            return await self.counters.reserve(name, cost, cap, holder)

    async def _seed(
        self, name: str, subject: Subject, start: float, end: float, catch_up: float = 0.0
    ) -> None:
        """The period's spend from the ledger, once per period and counter (after
        `catch_up` s: the records every process had queued are written by then)."""
        if self._seeded.get(name) == end:
            return
        pending = self._seeding.get(name)
        if pending is None:
            pending = self._seeding[name] = asyncio.ensure_future(
                self._read_seed(name, subject, start, end, catch_up)
            )
        try:
            await asyncio.shield(pending)
        finally:
            if pending.done():
                self._seeding.pop(name, None)

    async def _read_seed(
        self, name: str, subject: Subject, start: float, end: float, catch_up: float
    ) -> None:
        if catch_up:
            await asyncio.sleep(catch_up)
        column = "key_name" if subject.counter.startswith("key:") else "team"
        try:
            spent = await self.seed_from_ledger(column, subject.counter.split(":", 1)[1], start)
        except LedgerError as exc:  # the next request tries again
            raise ProxyError(
                503,
                f"hydra-proxy: the spend of {subject.who} cannot be read from the ledger: {exc}",
                error_type="api_error",
            ) from None
        await self.counters.seed(name, spent, end)
        self._seeded[name] = end
