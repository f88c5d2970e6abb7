"""The usage ledger: one small interface, records written off the hot path in batches.

:meth:`Ledger.record` only appends to a bounded in-memory queue (a deque append: it never
blocks the event loop and takes no lock in the common case). A writer thread flushes the
queue every ``batch_size`` records or every ``flush_interval`` seconds, whichever comes first,
in one transaction per batch. :meth:`Ledger.close` drains and writes everything, so a clean
shutdown loses nothing.

What a crash (SIGKILL, power loss) can lose: the records still queued, which is at most
``max_queue`` records and, while the database keeps up, about the last ``flush_interval``
seconds of requests (plus the batch being written, if its transaction had not committed).

A write that fails because the database is unavailable (locked past the busy timeout, a
PostgreSQL restart, a full disk) is retried a few times, then its records go back to the
front of the queue and the writer backs off (up to 30 s between tries): an outage loses
nothing until the queue fills. A row the database refuses outright is dropped alone (the
batch is then written row by row) and counted. At close, a database still unavailable after
the retries makes the remaining records count as lost (shutdown is not held up forever).

When the queue is full (the database stalled for long), the OLDEST queued record is dropped
to make room: the ledger then favours recent traffic, the count of dropped records is kept
(:attr:`Ledger.dropped`), each drop is passed to ``on_drop`` (the metrics count them) and a
warning is logged at most once a minute. Requests are never slowed down by the ledger.

Backends implement :meth:`Ledger._write` (one batch, one transaction) and
:meth:`Ledger.query`. A ledger is created per process, AFTER the process forked (in the
server's startup), since its thread and database connection do not survive a fork.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .record import UsageRecord

__all__ = ["COLUMNS", "Ledger", "LedgerError", "column_definitions", "query_filter"]

log = logging.getLogger("hydra_proxy.usage")

# One table, the same columns on every backend: UsageRecord's fields, in order (a record
# is its own row).
COLUMNS: tuple[str, ...] = UsageRecord._fields


def column_definitions(
    types: dict[str, str], time_type: str, overrides: dict[str, str] | None = None
) -> str:
    """The ledger table's columns in one SQL dialect, from UsageRecord's annotations, so the
    two ledgers cannot drift apart: `types` maps a Python type (str, int, float, bool) to the
    dialect's (`overrides`: by column); an optional field is nullable; `time` gets
    `time_type`."""
    lines = []
    for name in COLUMNS[1:]:
        annotation = UsageRecord.__annotations__[name]  # a ForwardRef: annotations are text
        python_type, _, none = str(annotation.__forward_arg__).partition(" | ")
        # A Literal alias (the protocol) is text.
        sql = (overrides or {}).get(name) or types.get(python_type, types["str"])
        lines.append(f"    {name} {sql}{'' if none else ' NOT NULL'}")
    return ",\n".join([f"    time {time_type} NOT NULL", *lines])


_DROP_WARNING_INTERVAL = 60.0
_MAX_BACKOFF = 30.0  # seconds between tries while the database is unavailable


class LedgerError(RuntimeError):
    """The ledger cannot be opened (bad URL, missing driver, unreachable database)."""


class _Connection(Protocol):
    def close(self) -> None: ...


class Ledger(ABC):
    """A durable usage ledger. Thread-safe ``record``; one writer thread per ledger."""

    # The writer's connection, opened by _open (a backend that keeps none there overrides
    # _close).
    _conn: _Connection | None = None

    def __init__(
        self,
        *,
        batch_size: int = 256,
        flush_interval: float = 1.0,
        max_queue: int = 50_000,
        on_drop: Callable[[int], None] | None = None,
    ) -> None:
        if batch_size < 1 or max_queue < batch_size or flush_interval <= 0:
            raise ValueError("need batch_size >= 1, max_queue >= batch_size, flush_interval > 0")
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self.max_queue = max_queue
        self.on_drop = on_drop
        self.dropped = 0
        self.written = 0
        self.write_errors = 0
        self._queue: deque[UsageRecord] = deque()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._closing = False
        self._last_drop_warning = 0.0
        self._writer: threading.Thread | None = None
        self._stats_lock = threading.Lock()  # drops are counted by two threads (rare path)
        self._write_lock = threading.Lock()  # held while the writer drains: flush() waits on it

    # --- the hot path -------------------------------------------------------------------

    def record(self, rec: UsageRecord) -> None:
        """Queue one record for writing; never blocks, never raises for a full queue."""
        queue = self._queue
        if len(queue) >= self.max_queue:
            try:
                queue.popleft()
            except IndexError:  # the writer emptied it meanwhile
                pass
            else:
                self._count_drop()
        queue.append(rec)
        if len(queue) == self.batch_size:
            self._wake.set()

    def _count_drop(self, count: int = 1, warn: bool = True) -> None:
        with self._stats_lock:
            self.dropped += count
        if self.on_drop is not None:
            self.on_drop(count)
        now = time.monotonic()
        if warn and now - self._last_drop_warning >= _DROP_WARNING_INTERVAL:
            self._last_drop_warning = now
            log.warning(
                "usage ledger queue full (%d records): dropped the oldest, %d dropped so far",
                self.max_queue,
                self.dropped,
            )

    # --- the writer ---------------------------------------------------------------------

    def start(self) -> None:
        """Open the backend (create the table) and start the writer thread."""
        self._open()
        self._writer = threading.Thread(
            target=self._run, name=f"hydra-usage-{type(self).__name__}", daemon=True
        )
        self._writer.start()

    def _run(self) -> None:
        backoff = 0.0
        while True:
            if backoff:
                self._stop.wait(backoff)  # the database is away: do not hammer it
            else:
                self._wake.wait(self.flush_interval)
            self._wake.clear()
            if self._closing:
                return  # close() writes the rest itself
            backoff = 0.0 if self._drain() else min(max(2 * backoff, 0.5), _MAX_BACKOFF)

    def _drain(self, final: bool = False) -> bool:
        """Write the queue out; False when the database is unavailable (records kept)."""
        queue = self._queue
        with self._write_lock:
            while queue:
                batch: list[UsageRecord] = []
                while queue and len(batch) < self.batch_size:
                    batch.append(queue.popleft())
                if not self._write_batch(batch, final):
                    return False
        return True

    def _transient(self, exc: Exception) -> bool:
        """Whether a failed write may succeed later (database away, locked, disk full)."""
        return isinstance(exc, LedgerError | OSError)

    def _write_batch(self, batch: list[UsageRecord], final: bool) -> bool:
        delay = 0.05
        attempts = 3
        for attempt in range(attempts):
            try:
                self._write(batch)
            except Exception as exc:  # a backend error must never kill the writer
                self.write_errors += 1
                if not self._transient(exc):
                    log.warning(
                        "usage ledger: a batch was refused (%s), writing it row by row", exc
                    )
                    return self._write_rows(batch, final)
                log.warning("usage ledger write failed (attempt %d): %s", attempt + 1, exc)
                if attempt + 1 < attempts:
                    time.sleep(delay)
                    delay *= 4
            else:
                self.written += len(batch)
                return True
        return self._give_back(batch, final)

    def _write_rows(self, batch: list[UsageRecord], final: bool) -> bool:
        """One row per transaction: only the rows the database refuses are dropped."""
        for i, rec in enumerate(batch):
            try:
                self._write([rec])
            except Exception as exc:
                self.write_errors += 1
                if self._transient(exc):
                    return self._give_back(batch[i:], final)
                log.error("usage ledger: record %s refused, dropped: %s", rec.request_id, exc)
                self._count_drop(1, warn=False)
            else:
                self.written += 1
        return True

    def _give_back(self, batch: list[UsageRecord], final: bool) -> bool:
        """The database is unavailable: keep the records for later, or, closing, count them lost."""
        if final:
            lost = len(batch) + len(self._queue)
            self._queue.clear()
            log.error("usage ledger unavailable at shutdown: %d records lost", lost)
            self._count_drop(lost, warn=False)
            return False
        queue = self._queue
        queue.extendleft(reversed(batch))
        while len(queue) > self.max_queue:  # still bounded: the oldest go first
            queue.popleft()
            self._count_drop()
        return False

    def flush(self) -> None:
        """Write what is queued now, from the calling thread (tests, the CLI)."""
        if self._writer is None:
            self._drain()
            return
        self._wake.set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            while self._queue and time.monotonic() < deadline:
                time.sleep(0.005)
            with self._write_lock:  # the batch the writer popped last is written...
                if not self._queue:  # ...and was not given back (database away)
                    return

    def close(self) -> None:
        """Write every queued record, stop the writer, close the backend. Idempotent."""
        if self._closing:
            return
        self._closing = True
        if self._writer is not None:
            self._stop.set()
            self._wake.set()
            self._writer.join()
        self._drain(final=True)
        self._close()

    # --- a backend ----------------------------------------------------------------------

    @abstractmethod
    def _open(self) -> None:
        """Connect and create the table and its indices if missing."""

    @abstractmethod
    def _write(self, batch: Sequence[UsageRecord]) -> None:
        """Insert one batch in one transaction (raise on failure: the batch is retried)."""

    def _close(self) -> None:
        """Release the writer's connection."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @abstractmethod
    def query(
        self, since: float | None = None, limit: int | None = None, key_name: str | None = None
    ) -> list[UsageRecord]:
        """Records with ``time >= since`` (and of the named key `key_name`, when given),
        newest first, at most ``limit`` (None: all).

        Reads through its own connection: safe from any thread while the writer runs.
        """


def query_filter(
    placeholder: str,
    since: Any,
    limit: int | None,
    key_name: str | None,
    *,
    column: str = "key_name",
) -> tuple[str, list[Any]]:
    """What follows a query's SELECT ... FROM: the WHERE (since, and `column` equal to
    `key_name` when given), newest first, at most ``limit``; and its parameters, each
    written as ``placeholder`` in the SQL. The audit log's queries take it too."""
    params: list[Any] = []
    where = []
    if since is not None:
        where.append(f"time >= {placeholder}")
        params.append(since)
    if key_name is not None:
        where.append(f"{column} = {placeholder}")
        params.append(key_name)
    sql = " WHERE " + " AND ".join(where) if where else ""
    sql += " ORDER BY time DESC, id DESC"
    if limit is not None:
        sql += f" LIMIT {placeholder}"
        params.append(limit)
    return sql, params
