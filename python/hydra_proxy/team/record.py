"""A named key and a team as the store keeps them: who, and the limits that hold for them."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Any

from .period import utc_text


# Per request the same few globs meet the same few model names: matched once.
@lru_cache(maxsize=1024)
def _allowed(globs: tuple[str, ...], model: str) -> bool:
    return any(fnmatchcase(model, glob) for glob in globs)


@dataclass(frozen=True)
class Limits:
    """What a key or a team may spend and how fast (None: no such limit)."""

    budget_usd: float | None = None
    period: str = "month"
    rpm: int | None = None
    tpm: int | None = None

    @property
    def any(self) -> bool:
        return self.budget_usd is not None or self.rpm is not None or self.tpm is not None


@dataclass(frozen=True)
class NamedKey:
    name: str
    secret_hash: str
    created: float
    team: str | None = None
    limits: Limits = Limits()
    streams: int | None = None
    models: tuple[str, ...] = ()
    """Globs of the model names the key may use, requested and upstream (empty: any)."""
    expires: float | None = None
    revoked: float | None = None
    previous_hash: str | None = None
    """After a rotation: the old secret's hash, valid until `previous_until`."""
    previous_until: float | None = None
    last_used: float | None = None

    def may_use(self, model: str) -> bool:
        return not self.models or _allowed(self.models, model)

    def public(self) -> dict[str, Any]:
        """The key as listings show it: everything but its hashes."""
        doc = asdict(self)
        del doc["secret_hash"], doc["previous_hash"]
        doc.update(doc.pop("limits"))
        doc["models"] = list(self.models)
        for field in ("created", "expires", "revoked", "previous_until", "last_used"):
            if doc[field] is not None:
                doc[field] = utc_text(doc[field])
        doc["old_secret_until"] = doc.pop("previous_until")
        return doc


@dataclass(frozen=True)
class Team:
    name: str
    limits: Limits = Limits()

    def public(self) -> dict[str, Any]:
        return {"name": self.name, **asdict(self.limits)}
