"""The audit log: every admin change (who, what, before and after, when), append-only, in
the key store's database beside the ledger.

An entry is written in the same transaction as the change it describes (`KeyStore.
transaction`): a change is never stored without its entry, nor an entry without its
change. Nothing here updates or deletes an entry, and the database refuses it too: a
trigger on SQLite and on PostgreSQL aborts any UPDATE or DELETE of the table (and TRUNCATE
on PostgreSQL).

Who made a change is the actor of the calling context (`acting_as`): the admin API sets
the credential's identity, and anything else (``hydra-proxy keys``, a script) is the
operating-system user that ran it. Secrets never enter an entry: fields that hold a key,
a secret or a hash of one are replaced by a marker before the entry is written (`scrub`).
"""

from __future__ import annotations

import getpass
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import orjson

from ..usage.ledger import query_filter
from .period import utc_text
from .store import KeyStore, PostgresKeyStore

SCRUBBED = "[scrubbed]"
_SECRET_FIELDS = frozenset({"secret", "api_key", "api_keys", "password", "authorization"})
_SECRET_SUFFIXES = ("_hash", "_secret", "_api_key", "_token")
MAX_LIMIT = 1000
DEFAULT_LIMIT = 100
_APPEND_ONLY = "the audit log is append-only"


def _table(id_type: str, time_type: str) -> tuple[str, ...]:
    """The table and its indices in one SQL dialect."""
    return (
        f"""CREATE TABLE IF NOT EXISTS hydra_audit (
        id {id_type} PRIMARY KEY,
        time {time_type} NOT NULL,
        actor TEXT NOT NULL,
        action TEXT NOT NULL,
        subject TEXT NOT NULL,
        before TEXT,
        after TEXT
    )""",
        "CREATE INDEX IF NOT EXISTS hydra_audit_time ON hydra_audit (time)",
        "CREATE INDEX IF NOT EXISTS hydra_audit_subject ON hydra_audit (subject, time)",
    )


_SQLITE_SCHEMA = (
    *_table("INTEGER", "REAL"),
    *(
        f"CREATE TRIGGER IF NOT EXISTS hydra_audit_no_{verb.lower()} BEFORE {verb} ON "
        f"hydra_audit BEGIN SELECT RAISE(ABORT, '{_APPEND_ONLY}'); END"
        for verb in ("UPDATE", "DELETE")
    ),
)
_POSTGRES_SCHEMA = (
    *_table("BIGSERIAL", "DOUBLE PRECISION"),
    f"""CREATE OR REPLACE FUNCTION hydra_audit_append_only() RETURNS trigger
        LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION '{_APPEND_ONLY}'; END $$""",
    """CREATE OR REPLACE TRIGGER hydra_audit_append_only
        BEFORE UPDATE OR DELETE OR TRUNCATE ON hydra_audit
        FOR EACH STATEMENT EXECUTE FUNCTION hydra_audit_append_only()""",
)
_COLUMNS = ("time", "actor", "action", "subject", "before", "after")


def os_actor() -> str:
    """Who runs this process, as an entry names them: ``os:USER``."""
    try:
        return f"os:{getpass.getuser()}"
    except (KeyError, OSError):  # no name for the uid (a container's random uid)
        return f"os:uid {os.getuid()}"


_actor: ContextVar[str | None] = ContextVar("hydra_audit_actor", default=None)


@contextmanager
def acting_as(actor: str) -> Iterator[None]:
    """Changes made within (and in threads started from it) are `actor`'s."""
    token = _actor.set(actor)
    try:
        yield
    finally:
        _actor.reset(token)


def current_actor() -> str:
    return _actor.get() or os_actor()


def _secret_field(name: str) -> bool:
    lowered = name.lower()
    return lowered in _SECRET_FIELDS or lowered.endswith(_SECRET_SUFFIXES)


def scrub(value: Any) -> Any:
    """`value` with every field that may hold a key, a secret or its hash replaced by a
    marker, at any depth."""
    if isinstance(value, Mapping):
        return {
            k: SCRUBBED if _secret_field(str(k)) and v is not None else scrub(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [scrub(v) for v in value]
    return value


@dataclass(frozen=True)
class Entry:
    time: float
    actor: str
    action: str
    subject: str
    before: Any
    after: Any

    def public(self) -> dict[str, Any]:
        return {
            "time": utc_text(self.time),
            "actor": self.actor,
            "action": self.action,
            "subject": self.subject,
            "before": self.before,
            "after": self.after,
        }


def create_table(store: KeyStore, cur: Any) -> None:
    """The table and its triggers (the store calls it when it creates its own tables)."""
    schema = _POSTGRES_SCHEMA if isinstance(store, PostgresKeyStore) else _SQLITE_SCHEMA
    for statement in schema:
        cur.execute(statement)


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(scrub(value)).decode()


def record(
    store: KeyStore, action: str, subject: str, before: Any, after: Any, now: float | None = None
) -> None:
    """Append one entry; call it inside the change's `store.transaction()`."""
    m = store.mark
    if now is None:
        now = time.time()
    with store.transaction() as cur:
        cur.execute(
            f"INSERT INTO hydra_audit ({', '.join(_COLUMNS)}) "
            f"VALUES ({', '.join(m for _ in _COLUMNS)})",
            (now, current_actor(), action, subject, _json(before), _json(after)),
        )


def entries(
    store: KeyStore,
    since: float | None = None,
    subject: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> list[Entry]:
    """The newest entries first: at most `limit`, from `since` on, of one `subject`."""
    tail, params = query_filter(
        store.mark, since, max(1, min(int(limit), MAX_LIMIT)), subject, column="subject"
    )
    sql = f"SELECT {', '.join(_COLUMNS)} FROM hydra_audit{tail}"
    with store.transaction() as cur:
        cur.execute(sql, params)
        rows = cur.fetchall()
    return [
        Entry(
            float(r[0]),
            r[1],
            r[2],
            r[3],
            None if r[4] is None else orjson.loads(r[4]),
            None if r[5] is None else orjson.loads(r[5]),
        )
        for r in rows
    ]
