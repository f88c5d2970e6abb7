"""The team ledger: one PostgreSQL table shared by every proxy process and host.

Needs the optional extra ``postgres`` (``psycopg`` 3). The table and its indices are
created if missing, under an advisory lock so that proxies starting together do not race
on ``CREATE TABLE``. Each batch is one transaction (psycopg's ``executemany`` sends it in
pipeline mode: one round trip per batch, not per row).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from .ledger import COLUMNS, Ledger, LedgerError, column_definitions, query_filter
from .record import UsageRecord

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresLedger"]

_SCHEMA_LOCK = 0x68796472  # "hydr": any constant shared by all proxies
_COLUMN_DEFINITIONS = column_definitions(
    {"str": "TEXT", "int": "BIGINT", "float": "DOUBLE PRECISION", "bool": "BOOLEAN"},
    "TIMESTAMPTZ",
    {"status": "INTEGER"},
)
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS hydra_usage (
    id BIGSERIAL PRIMARY KEY,
{_COLUMN_DEFINITIONS}
);
ALTER TABLE hydra_usage ADD COLUMN IF NOT EXISTS key_name TEXT;
ALTER TABLE hydra_usage ADD COLUMN IF NOT EXISTS team TEXT;
ALTER TABLE hydra_usage ADD COLUMN IF NOT EXISTS agent TEXT;
ALTER TABLE hydra_usage ADD COLUMN IF NOT EXISTS refusal TEXT;
CREATE INDEX IF NOT EXISTS hydra_usage_time ON hydra_usage (time);
CREATE INDEX IF NOT EXISTS hydra_usage_model ON hydra_usage (target_model, time);
CREATE INDEX IF NOT EXISTS hydra_usage_key_name ON hydra_usage (key_name, time);
CREATE INDEX IF NOT EXISTS hydra_usage_team ON hydra_usage (team, time);
"""
_INSERT = (
    f"INSERT INTO hydra_usage ({', '.join(COLUMNS)}) VALUES ({', '.join('%s' for _ in COLUMNS)})"
)
_SELECT = (
    f"SELECT extract(epoch FROM time)::double precision, {', '.join(COLUMNS[1:])} FROM hydra_usage"
)


_rest = operator.attrgetter(*COLUMNS[1:])


def _text(value: Any) -> Any:
    # PostgreSQL text cannot hold NUL, and model names come from clients.
    return value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value else value


def _row(rec: UsageRecord) -> tuple[Any, ...]:
    return (datetime.fromtimestamp(rec.time, timezone.utc), *map(_text, _rest(rec)))


class PostgresLedger(Ledger):
    def __init__(self, url: str, *, connect_timeout: float = 10.0, **options: Any) -> None:
        super().__init__(**options)
        self.url = url
        self.connect_timeout = connect_timeout
        self._conn: psycopg.Connection[Any] | None = None

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            import psycopg
        except ImportError as exc:
            raise LedgerError(
                "the PostgreSQL ledger needs psycopg: pip install 'hydra-proxy[postgres]'"
            ) from exc
        try:
            return psycopg.connect(
                self.url, connect_timeout=max(1, round(self.connect_timeout)), autocommit=False
            )
        except psycopg.Error as exc:
            # The message names host and database, never the password.
            raise LedgerError(f"cannot connect to the PostgreSQL ledger: {exc}") from exc

    def _open(self) -> None:
        conn = self._connect()
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            for statement in filter(None, (s.strip() for s in _SCHEMA.split(";"))):
                conn.execute(statement)
        self._conn = conn

    def _write(self, batch: Sequence[UsageRecord]) -> None:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            if conn is not None:
                conn.close()
            self._conn = None
            self._open()
            conn = self._conn
            assert conn is not None
        try:
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(_INSERT, [_row(r) for r in batch])
        except Exception:
            # The retry reconnects: cheaper to reason about than telling a broken
            # connection from a failed statement.
            conn.close()
            self._conn = None
            raise

    def _transient(self, exc: Exception) -> bool:
        import psycopg

        # OperationalError: connection lost or refused, server shutting down, too many
        # clients; the rest (DataError, IntegrityError...) is about the rows.
        return isinstance(exc, psycopg.OperationalError) or super()._transient(exc)

    def query(
        self, since: float | None = None, limit: int | None = None, key_name: str | None = None
    ) -> list[UsageRecord]:
        conn = self._connect()
        try:
            if conn.execute("SELECT to_regclass('hydra_usage')").fetchone() == (None,):
                return []
            start = None if since is None else datetime.fromtimestamp(since, timezone.utc)
            tail, params = query_filter("%s", start, limit, key_name)
            rows = conn.execute(_SELECT + tail, params).fetchall()
        except Exception as exc:  # psycopg.Error; psycopg is imported lazily
            raise LedgerError(f"cannot read the PostgreSQL ledger: {exc}") from exc
        finally:
            conn.close()
        out = []
        for row in rows:
            values = dict(zip(COLUMNS, row, strict=True))
            out.append(UsageRecord(**values))
        return out
