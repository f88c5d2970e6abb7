"""The keys a worker checks requests against: every stored key by the hash of its secret
(and, for a rotated key within its grace period, by its old secret's), and the teams by
name. Built from the store, replaced whole when the store's version moves: a lookup is one
hash and one dict access, never a database read."""

from __future__ import annotations

from dataclasses import dataclass

from .record import NamedKey, Team
from .secret import secret_hash


@dataclass(frozen=True)
class KeyMatch:
    key: NamedKey
    previous: bool
    """Presented with the old secret of a rotated key."""


class Keyring:
    def __init__(self, keys: list[NamedKey], teams: list[Team], version: int) -> None:
        self.version = version
        self.by_hash: dict[str, KeyMatch] = {}
        self.by_name: dict[str, NamedKey] = {}
        for key in keys:
            self.by_name[key.name] = key
            self.by_hash[key.secret_hash] = KeyMatch(key, False)
            if key.previous_hash is not None:
                self.by_hash[key.previous_hash] = KeyMatch(key, True)
        self.teams = {team.name: team for team in teams}

    def find(self, presented: bytes) -> KeyMatch | None:
        return self.by_hash.get(secret_hash(presented))

    def __len__(self) -> int:
        return len(self.by_name)
