"""The embedded ledger: one SQLite file in WAL mode, shared by the workers of one host.

WAL lets readers (``hydra-proxy usage``, the dashboard) run while a worker writes; writers
from several granian worker processes take turns on the file's write lock, each waiting up
to ``busy_timeout`` (SQLite's own busy handler) and the batch being retried on top of that
(:class:`~.ledger.Ledger`). ``synchronous=NORMAL`` in WAL mode keeps every committed batch
across a process crash (a power loss may take the last transactions back).
"""

from __future__ import annotations

import functools
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .ledger import COLUMNS, Ledger, LedgerError, column_definitions, query_filter
from .record import UsageRecord

__all__ = ["SqliteLedger"]

_COLUMN_DEFINITIONS = column_definitions(
    {"str": "TEXT", "int": "INTEGER", "float": "REAL", "bool": "INTEGER"}, "REAL"
)
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS usage (
    id INTEGER PRIMARY KEY,
{_COLUMN_DEFINITIONS}
);
CREATE INDEX IF NOT EXISTS usage_time ON usage (time);
CREATE INDEX IF NOT EXISTS usage_model ON usage (target_model, time);
"""
# Partial: a request without a named key (NULL) updates neither, and a query for one key
# (`key_name = ?` implies NOT NULL) still reads its index. The full indices of older ledgers
# are replaced.
_KEY_INDICES = (
    "DROP INDEX IF EXISTS usage_key_name",
    "DROP INDEX IF EXISTS usage_team",
    "CREATE INDEX IF NOT EXISTS usage_named_key ON usage (key_name, time)"
    " WHERE key_name IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS usage_named_team ON usage (team, time) WHERE team IS NOT NULL",
)
_OPEN_ATTEMPTS = 5
# Rows go in as multi-row INSERTs, not executemany: the sqlite3 module releases and retakes
# the GIL around every row's step, and each retake interrupts the request thread (measured:
# ~9% of the proxy's streams/s at c=64). 999 is SQLite's smallest host-parameter limit.
_ROWS_PER_INSERT = 999 // len(COLUMNS)
_ROW = f"({', '.join('?' for _ in COLUMNS)})"


@functools.cache
def _insert(rows: int) -> str:
    return f"INSERT INTO usage ({', '.join(COLUMNS)}) VALUES {', '.join([_ROW] * rows)}"


_SELECT = f"SELECT {', '.join(COLUMNS)} FROM usage"


def _select_of(have: set[str]) -> str:
    return f"SELECT {', '.join(c if c in have else 'NULL' for c in COLUMNS)} FROM usage"


def record_of(row: Sequence[Any]) -> UsageRecord:
    values = dict(zip(COLUMNS, row, strict=True))
    values["estimated"] = bool(values["estimated"])
    values["stream"] = bool(values["stream"])
    return UsageRecord(**values)


class SqliteLedger(Ledger):
    def __init__(self, path: Path, *, busy_timeout: float = 10.0, **options: Any) -> None:
        super().__init__(**options)
        self.path = path
        self.busy_timeout = busy_timeout
        self._conn: sqlite3.Connection | None = None

    def _connect(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Autocommit mode; batches open their own transactions (BEGIN IMMEDIATE).
            conn = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout,
                isolation_level=None,
                check_same_thread=False,
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        except (OSError, sqlite3.Error) as exc:
            raise LedgerError(f"cannot open the SQLite ledger {self.path}: {exc}") from exc
        return conn

    def _open(self) -> None:
        # Workers start together on a new file: in WAL mode a statement that reads first and
        # then writes (CREATE ... IF NOT EXISTS in autocommit) can fail at once with "database
        # is locked" when another connection wrote meanwhile (no busy wait on a stale
        # snapshot). The schema is written in one IMMEDIATE transaction, which waits for the
        # write lock up front, and a busy open is tried again.
        for attempt in range(1, _OPEN_ATTEMPTS + 1):
            try:
                self._conn = self._create()
                return
            except LedgerError as exc:
                busy = isinstance(exc.__cause__, sqlite3.OperationalError)
                if not busy or attempt == _OPEN_ATTEMPTS:
                    raise
                time.sleep(0.05 * attempt)

    def _create(self) -> sqlite3.Connection:
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
            for statement in filter(None, (s.strip() for s in _SCHEMA.split(";"))):
                conn.execute(statement)
            # A ledger written before named keys, agents or refusals: their columns are added.
            have = {row[1] for row in conn.execute("PRAGMA table_info(usage)")}
            for column in ("key_name", "team", "agent", "refusal"):
                if column not in have:
                    conn.execute(f"ALTER TABLE usage ADD COLUMN {column} TEXT")
            for statement in _KEY_INDICES:
                conn.execute(statement)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            conn.close()
            raise LedgerError(f"cannot create the usage table in {self.path}: {exc}") from exc
        return conn

    def _write(self, batch: Sequence[UsageRecord]) -> None:
        conn = self._conn
        if conn is None:
            self._open()
            conn = self._conn
            assert conn is not None
        # IMMEDIATE takes the write lock up front, so a busy file is waited on (busy
        # timeout) before any row is inserted, never half-way.
        conn.execute("BEGIN IMMEDIATE")
        try:
            for start in range(0, len(batch), _ROWS_PER_INSERT):
                rows = batch[start : start + _ROWS_PER_INSERT]
                # a record is its row
                conn.execute(_insert(len(rows)), [value for row in rows for value in row])
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _transient(self, exc: Exception) -> bool:
        # OperationalError: locked or busy past the timeout, disk full, I/O error.
        return isinstance(exc, sqlite3.OperationalError) or super()._transient(exc)

    def query(
        self, since: float | None = None, limit: int | None = None, key_name: str | None = None
    ) -> list[UsageRecord]:
        if not self.path.exists():
            return []
        conn = self._connect()
        try:
            if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'usage'").fetchone():
                return []
            have = {row[1] for row in conn.execute("PRAGMA table_info(usage)")}
            # A ledger written before named keys has no key_name or team: none to filter.
            sql = _SELECT if have >= set(COLUMNS) else _select_of(have)
            if key_name is not None and "key_name" not in have:
                return []
            tail, params = query_filter("?", since, limit, key_name)
            return [record_of(row) for row in conn.execute(sql + tail, params)]
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot read the SQLite ledger {self.path}: {exc}") from exc
        finally:
            conn.close()
