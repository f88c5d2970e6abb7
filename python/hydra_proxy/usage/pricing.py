"""Cost of a request from its token counts and a dated price table.

The table ships as ``hydra_proxy/data/pricing.toml`` (per model glob, per token kind, USD
per million tokens, with an ``as_of`` date and its sources); a config's ``[pricing]`` table
overrides or extends it (:meth:`PriceTable.with_overrides`). A model that no pattern
matches has no price: :meth:`PriceTable.cost` returns None, reported as unknown, never 0.
"""

from __future__ import annotations

import fnmatch
import math
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from .record import Tokens

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["Price", "PriceTable", "PricingError", "default_table", "usd"]

PRICING_FILE = "pricing.toml"
_KINDS = ("input", "output", "cache_read", "cache_write", "reasoning")
_WILDCARDS = re.compile(r"[*?]|\[[^\]]*\]")


def usd(value: float) -> str:
    """An amount of dollars with the digits that tell it apart from nothing: cents from a
    dollar up, two significant digits below ($0.0004, not $0.00)."""
    if value == 0 or abs(value) >= 1:
        return f"${value:,.2f}"
    digits = max(2, 1 - math.floor(math.log10(abs(value))))
    whole, _, fraction = f"{value:.{digits}f}".partition(".")
    return f"${whole}.{fraction.rstrip('0').ljust(2, '0')}"


class PricingError(ValueError):
    """A malformed price entry (shipped table or config override)."""


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens; a kind left None is billed at the rate its docstring names."""

    pattern: str
    input: float
    output: float
    cache_read: float | None = None  # None: as input
    cache_write: float | None = None  # None: as input
    reasoning: float | None = None  # None: as output (reasoning is part of the output)
    as_of: str | None = None

    def cost(self, tokens: Tokens) -> float:
        reasoning = min(tokens.reasoning, tokens.output)
        reasoning_rate = self.output if self.reasoning is None else self.reasoning
        micro = (
            tokens.input * self.input
            + tokens.cache_read * (self.input if self.cache_read is None else self.cache_read)
            + tokens.cache_write * (self.input if self.cache_write is None else self.cache_write)
            + (tokens.output - reasoning) * self.output
            + reasoning * reasoning_rate
        )
        return micro / 1_000_000


def _specificity(pattern: str) -> int:
    return len(_WILDCARDS.sub("", pattern))


def _rate(where: str, entry: Mapping[str, Any], kind: str, required: bool) -> float | None:
    value = entry.get(kind)
    if value is None:
        if required:
            raise PricingError(f"{where}: needs '{kind}' (USD per million tokens)")
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise PricingError(f"{where}.{kind}: must be a number >= 0, got {value!r}")
    return float(value)


def _price(where: str, pattern: str, entry: Mapping[str, Any], as_of: str | None) -> Price:
    unknown = set(entry) - {*_KINDS, "match", "as_of"}
    if unknown:
        raise PricingError(f"{where}: unknown keys {sorted(unknown)}")
    stamp = entry.get("as_of", as_of)
    return Price(
        pattern=pattern.lower(),
        input=_rate(where, entry, "input", True) or 0.0,
        output=_rate(where, entry, "output", True) or 0.0,
        cache_read=_rate(where, entry, "cache_read", False),
        cache_write=_rate(where, entry, "cache_write", False),
        reasoning=_rate(where, entry, "reasoning", False),
        as_of=str(stamp) if stamp is not None else None,
    )


class PriceTable:
    """Prices by model glob; overrides (config) win over the shipped entries."""

    def __init__(self, prices: list[Price], overrides: list[Price] | None = None) -> None:
        self.prices = tuple(prices)
        self.overrides = tuple(overrides or ())
        # Lookups repeat the same few model names: cache per table.
        self.lookup = lru_cache(maxsize=1024)(self._lookup)

    @classmethod
    def from_toml(cls, text: str) -> PriceTable:
        data = tomllib.loads(text)
        as_of = data.get("as_of")
        prices: list[Price] = []
        for i, entry in enumerate(data.get("model", [])):
            where = f"model[{i}]"
            patterns = entry.get("match")
            if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
                raise PricingError(f"{where}.match: must be a list of model globs")
            prices.extend(_price(where, p, entry, as_of) for p in patterns)
        return cls(prices)

    def with_overrides(self, overrides: Mapping[str, Mapping[str, Any]]) -> PriceTable:
        """A table where ``{"model-glob": {"input": 1.0, "output": 2.0, ...}}`` wins.

        This is the config's ``[pricing]`` table: ``[pricing."my-model*"]`` and its rates.
        """
        extra: list[Price] = []
        for pattern, entry in overrides.items():
            where = f"pricing.{pattern!r}"
            if not isinstance(entry, Mapping):
                raise PricingError(f"{where}: must be a table of rates")
            extra.append(_price(where, pattern, entry, None))
        return PriceTable(list(self.prices), [*extra, *self.overrides])

    def _lookup(self, model: str) -> Price | None:
        name = model.lower()
        short = name.rsplit("/", 1)[-1]
        for group in (self.overrides, self.prices):
            best: Price | None = None
            for price in group:
                if (
                    fnmatch.fnmatchcase(name, price.pattern)
                    or fnmatch.fnmatchcase(short, price.pattern)
                ) and (best is None or _specificity(price.pattern) > _specificity(best.pattern)):
                    best = price
            if best is not None:
                return best
        return None

    def cost(self, model: str, tokens: Tokens) -> float | None:
        """USD for these tokens on this model; None when the model has no price."""
        price = self.lookup(model)
        return None if price is None else price.cost(tokens)


@lru_cache(maxsize=1)
def default_table() -> PriceTable:
    """The table shipped in the package (parsed once per process)."""
    text = resources.files("hydra_proxy").joinpath("data").joinpath(PRICING_FILE).read_text("utf-8")
    return PriceTable.from_toml(text)
