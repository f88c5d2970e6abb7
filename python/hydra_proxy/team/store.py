"""The key store: named keys and teams in the usage ledger's own database (the SQLite file
or the PostgreSQL database its URL names), beside the ledger's table, so that a key's spend
is read from the rows the ledger wrote for it.

Three tables: ``hydra_keys`` (one row per key name, the secret as its SHA-256 only),
``hydra_teams`` (team limits) and ``hydra_keys_version`` (one counter, raised by every
change: a worker polls it and reloads the keys when it moved); and the spend alerts'
two (team/alerts.py). `last_used` is written
without raising the version (it changes on every request). Every method opens or reuses one
connection under a lock: the store is used from threads, never on the event loop.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from ..usage.backends import DEFAULT_SQLITE_PATH
from ..usage.ledger import LedgerError
from .record import Limits, NamedKey, Team

_KEY_COLUMNS = (
    "name", "secret_hash", "created", "team", "budget_usd", "period", "rpm", "tpm", "streams",
    "models", "expires", "revoked", "previous_hash", "previous_until", "last_used",
)  # fmt: skip
_TEAM_COLUMNS = ("name", "budget_usd", "period", "rpm", "tpm")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS hydra_keys (
    name TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL UNIQUE,
    created {real} NOT NULL,
    team TEXT,
    budget_usd {real},
    period TEXT NOT NULL,
    rpm BIGINT,
    tpm BIGINT,
    streams BIGINT,
    models TEXT NOT NULL,
    expires {real},
    revoked {real},
    previous_hash TEXT,
    previous_until {real},
    last_used {real}
);
CREATE TABLE IF NOT EXISTS hydra_teams (
    name TEXT PRIMARY KEY,
    budget_usd {real},
    period TEXT NOT NULL,
    rpm BIGINT,
    tpm BIGINT
);
CREATE TABLE IF NOT EXISTS hydra_keys_version (
    id INTEGER PRIMARY KEY,
    version BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS hydra_alerts (
    subject TEXT PRIMARY KEY,
    thresholds TEXT NOT NULL,
    webhook TEXT NOT NULL,
    format TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS hydra_alerts_sent (
    subject TEXT NOT NULL,
    threshold BIGINT NOT NULL,
    period_end {real} NOT NULL,
    sent {real} NOT NULL,
    PRIMARY KEY (subject, threshold, period_end)
)
"""


class KeyStoreError(LedgerError):
    """The store cannot be opened or refused a change (a duplicate name, an unknown key)."""


def _key(row: Sequence[Any]) -> NamedKey:
    v = dict(zip(_KEY_COLUMNS, row, strict=True))
    return NamedKey(
        name=v["name"],
        secret_hash=v["secret_hash"],
        created=v["created"],
        team=v["team"],
        limits=Limits(v["budget_usd"], v["period"], v["rpm"], v["tpm"]),
        streams=v["streams"],
        models=tuple(m for m in v["models"].split(",") if m),
        expires=v["expires"],
        revoked=v["revoked"],
        previous_hash=v["previous_hash"],
        previous_until=v["previous_until"],
        last_used=v["last_used"],
    )


def _key_row(key: NamedKey) -> tuple[Any, ...]:
    lim = key.limits
    return (
        key.name, key.secret_hash, key.created, key.team, lim.budget_usd, lim.period, lim.rpm,
        lim.tpm, key.streams, ",".join(key.models), key.expires, key.revoked,
        key.previous_hash, key.previous_until, key.last_used,
    )  # fmt: skip


class KeyStore:
    """The SQL of the store, for both backends (placeholders and connections differ)."""

    mark = "?"
    real = "REAL"
    usage_table = "usage"
    usage_time = "?"
    """How a Unix time compares with the ledger's `time` column."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._conn: Any = None
        self._cursor: Any = None

    # -- a backend ------------------------------------------------------------------------

    def _connect(self) -> Any:
        raise NotImplementedError

    def _errors(self) -> tuple[type[BaseException], ...]:
        raise NotImplementedError

    def _duplicate(self, exc: BaseException) -> bool:
        raise NotImplementedError

    def transaction(self) -> AbstractContextManager[Any]:
        """A cursor in one transaction; the store's own calls made inside it join it (a
        change and its audit entry are written together or not at all)."""
        return self._tx()

    @contextmanager
    def _tx(self) -> Iterator[Any]:
        """A cursor in one transaction; the connection is dropped after an error."""
        with self._lock:
            if self._cursor is not None:  # within transaction(): the outer one commits
                yield self._cursor
                return
            try:
                if self._conn is None:
                    self._conn = self._connect()
                    self._create(self._conn)
                conn = self._conn
                cur = self._cursor = conn.cursor()
                try:
                    yield cur
                    conn.commit()
                except BaseException:
                    conn.rollback()
                    raise
                finally:
                    self._cursor = None
            except self._errors() as exc:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
                if self._duplicate(exc):
                    raise KeyStoreError("a key with that name exists already") from exc
                raise KeyStoreError(f"the key store: {exc}") from exc

    def _create(self, conn: Any) -> None:
        cur = conn.cursor()
        for statement in _SCHEMA.format(real=self.real).split(";"):
            if statement.strip():
                cur.execute(statement)
        m = self.mark
        # Workers start together: the first one's row stands.
        cur.execute(
            f"INSERT INTO hydra_keys_version (id, version) VALUES ({m}, {m}) "
            "ON CONFLICT (id) DO NOTHING",
            (1, 0),
        )
        from . import audit, live_config  # the audit log and the live config live here too

        audit.create_table(self, cur)
        live_config.create_table(self, cur)
        conn.commit()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- reading ---------------------------------------------------------------------------

    def version(self) -> int:
        with self._tx() as cur:
            cur.execute(f"SELECT version FROM hydra_keys_version WHERE id = {self.mark}", (1,))
            row = cur.fetchone()
        return int(row[0]) if row else 0

    def keys(self) -> list[NamedKey]:
        with self._tx() as cur:
            cur.execute(f"SELECT {', '.join(_KEY_COLUMNS)} FROM hydra_keys ORDER BY name")
            return [_key(row) for row in cur.fetchall()]

    def key(self, name: str) -> NamedKey | None:
        with self._tx() as cur:
            cur.execute(
                f"SELECT {', '.join(_KEY_COLUMNS)} FROM hydra_keys WHERE name = {self.mark}",
                (name,),
            )
            row = cur.fetchone()
        return _key(row) if row else None

    def teams(self) -> list[Team]:
        with self._tx() as cur:
            cur.execute(f"SELECT {', '.join(_TEAM_COLUMNS)} FROM hydra_teams ORDER BY name")
            return [Team(r[0], Limits(r[1], r[2], r[3], r[4])) for r in cur.fetchall()]

    def spent(self, column: str, name: str, since: float) -> tuple[float, int]:
        """What the ledger's rows of a key (`column` "key_name") or a team ("team") cost
        since `since`: (USD of the priced rows, count of the rows without a price)."""
        assert column in ("key_name", "team")
        sql = (
            f"SELECT COALESCE(SUM(cost_usd), 0), "
            f"COALESCE(SUM(CASE WHEN cost_usd IS NULL THEN 1 ELSE 0 END), 0) "
            f"FROM {self.usage_table} WHERE {column} = {self.mark} AND time >= {self.usage_time}"
        )
        with self._tx() as cur:
            if not self._has_usage(cur):
                return 0.0, 0
            cur.execute(sql, (name, since))
            row = cur.fetchone()
        return float(row[0]), int(row[1])

    def refused(self, column: str, name: str, since: float) -> int:
        """How many of a key's (or team's) requests since `since` the proxy refused (a
        ledger written before refusals were recorded: 0)."""
        assert column in ("key_name", "team")
        sql = (
            f"SELECT COUNT(*) FROM {self.usage_table} WHERE {column} = {self.mark} "
            f"AND time >= {self.usage_time} AND refusal IS NOT NULL"
        )
        try:
            with self._tx() as cur:
                if not self._has_usage(cur):
                    return 0
                cur.execute(sql, (name, since))
                return int(cur.fetchone()[0])
        except Exception:  # no refusal column yet: the ledger adds it when a proxy opens it
            return 0

    def _has_usage(self, cur: Any) -> bool:
        raise NotImplementedError

    # -- changing --------------------------------------------------------------------------

    def _bump(self, cur: Any) -> None:
        cur.execute(
            f"UPDATE hydra_keys_version SET version = version + 1 WHERE id = {self.mark}", (1,)
        )

    def add(self, key: NamedKey) -> None:
        marks = ", ".join(self.mark for _ in _KEY_COLUMNS)
        with self._tx() as cur:
            cur.execute(
                f"INSERT INTO hydra_keys ({', '.join(_KEY_COLUMNS)}) VALUES ({marks})",
                _key_row(key),
            )
            self._bump(cur)

    def replace(self, key: NamedKey) -> None:
        """Write every field of an existing key (KeyStoreError: no such key)."""
        sets = ", ".join(f"{c} = {self.mark}" for c in _KEY_COLUMNS[1:])
        with self._tx() as cur:
            cur.execute(
                f"UPDATE hydra_keys SET {sets} WHERE name = {self.mark}",
                (*_key_row(key)[1:], key.name),
            )
            if cur.rowcount != 1:
                raise KeyStoreError(f"no key named {key.name!r}")
            self._bump(cur)

    def set_team(self, team: Team) -> None:
        m = self.mark
        lim = team.limits
        with self._tx() as cur:
            cur.execute(f"DELETE FROM hydra_teams WHERE name = {m}", (team.name,))
            cur.execute(
                f"INSERT INTO hydra_teams ({', '.join(_TEAM_COLUMNS)}) VALUES ({m}, {m}, {m}, {m}, {m})",
                (team.name, lim.budget_usd, lim.period, lim.rpm, lim.tpm),
            )
            self._bump(cur)

    def touch(self, last_used: dict[str, float]) -> None:
        """Note when keys were last used (no version change: workers need not reload)."""
        if not last_used:
            return
        m = self.mark
        with self._tx() as cur:
            for name, at in last_used.items():
                cur.execute(f"UPDATE hydra_keys SET last_used = {m} WHERE name = {m}", (at, name))


class SqliteKeyStore(KeyStore):
    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def _connect(self) -> Any:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=10.0, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        return conn

    def _errors(self) -> tuple[type[BaseException], ...]:
        return (sqlite3.Error, OSError)

    def _duplicate(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.IntegrityError)

    def _has_usage(self, cur: Any) -> bool:
        cur.execute("SELECT 1 FROM sqlite_master WHERE name = 'usage'")
        return cur.fetchone() is not None and self._has_key_columns(cur)

    def _has_key_columns(self, cur: Any) -> bool:
        cur.execute("PRAGMA table_info(usage)")
        return "key_name" in {row[1] for row in cur.fetchall()}


_SCHEMA_LOCK = 0x68796B73  # "hyks": any constant shared by all proxies


class PostgresKeyStore(KeyStore):
    mark = "%s"
    real = "DOUBLE PRECISION"
    usage_table = "hydra_usage"
    usage_time = "to_timestamp(%s)"

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url

    def _create(self, conn: Any) -> None:
        # Proxies starting together would race on CREATE TABLE IF NOT EXISTS (a duplicate
        # type error): one at a time, as the ledger creates its table.
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        super()._create(conn)
        conn.commit()

    def _connect(self) -> Any:
        try:
            import psycopg
        except ImportError as exc:
            raise KeyStoreError(
                "the PostgreSQL key store needs psycopg: pip install 'hydra-proxy[postgres]'"
            ) from exc
        return psycopg.connect(self.url, connect_timeout=10)

    def _errors(self) -> tuple[type[BaseException], ...]:
        import psycopg

        return (psycopg.Error,)

    def _duplicate(self, exc: BaseException) -> bool:
        import psycopg

        return isinstance(exc, psycopg.errors.UniqueViolation)

    def _has_usage(self, cur: Any) -> bool:
        cur.execute(
            "SELECT 1 FROM information_schema.columns "
            "WHERE table_name = 'hydra_usage' AND column_name = 'key_name'"
        )
        return cur.fetchone() is not None


def open_key_store(ledger_url: str | None) -> KeyStore:
    """The store in the database of the ledger at `ledger_url` (None or "off": the default
    SQLite file, so that keys work with the ledger off)."""
    url = ledger_url or ""
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresKeyStore(url)
    return SqliteKeyStore(sqlite_path(url))


def sqlite_path(ledger_url: str | None) -> Path:
    """The SQLite file of a ledger URL that is not PostgreSQL's (None or "off": the
    default file)."""
    url = ledger_url or ""
    if url.lower() == "off":
        url = ""
    return Path(
        url.removeprefix("sqlite://").removeprefix("sqlite:") or str(DEFAULT_SQLITE_PATH)
    ).expanduser()


def store_exists(ledger_url: str | None) -> bool:
    """Whether a store may hold keys without creating anything: a PostgreSQL URL (asked
    later), or an SQLite file that exists."""
    store = open_key_store(ledger_url)
    if isinstance(store, SqliteKeyStore):
        return store.path.exists()
    return True
