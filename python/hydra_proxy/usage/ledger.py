"""The usage ledger: one small interface, records written off the hot path in batches.

:meth:`Ledger.record` only appends to a bounded in-memory queue (a deque append: it never
blocks the event loop and takes no lock in the common case). A writer thread flushes the
queue every ``batch_size`` records or every ``flush_interval`` seconds, whichever comes first,
in one transaction per batch. :meth:`Ledger.close` drains and writes everything, so a clean
shutdown loses nothing.

What a crash (SIGKILL, power loss) can lose: the records still queued, which is at most
``max_queue`` records and, while the database keeps up, about the last ``flush_interval``
seconds of requests (plus the batch being written, if its transaction had not committed).

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
from pathlib import Path

from .record import UsageRecord

__all__ = ["DEFAULT_SQLITE_PATH", "Ledger", "LedgerError", "open_ledger"]

log = logging.getLogger("hydra_proxy.usage")

DEFAULT_SQLITE_PATH = Path("~/.hydra-proxy/usage.sqlite3")

# One table, the same columns on every backend (UsageRecord's fields, in order).
COLUMNS = (
    "time",
    "request_id",
    "protocol",
    "route",
    "provider",
    "requested_model",
    "target_model",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "estimated",
    "cost_usd",
    "latency_ms",
    "ttfb_ms",
    "status",
    "error_type",
    "key_id",
    "stream",
)

_DROP_WARNING_INTERVAL = 60.0


class LedgerError(RuntimeError):
    """The ledger cannot be opened (bad URL, missing driver, unreachable database)."""


class Ledger(ABC):
    """A durable usage ledger. Thread-safe ``record``; one writer thread per ledger."""

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

    def _count_drop(self, count: int = 1) -> None:
        with self._stats_lock:
            self.dropped += count
        if self.on_drop is not None:
            self.on_drop(count)
        now = time.monotonic()
        if count == 1 and now - self._last_drop_warning >= _DROP_WARNING_INTERVAL:
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
        while True:
            self._wake.wait(self.flush_interval)
            self._wake.clear()
            closing = self._closing
            self._drain()
            if closing:
                return

    def _drain(self) -> None:
        queue = self._queue
        with self._write_lock:
            while queue:
                batch: list[UsageRecord] = []
                while queue and len(batch) < self.batch_size:
                    batch.append(queue.popleft())
                self._write_with_retry(batch)

    def _write_with_retry(self, batch: Sequence[UsageRecord]) -> None:
        delay = 0.05
        for attempt in range(6):
            try:
                self._write(batch)
            except Exception as exc:  # a backend error must not kill the writer
                self.write_errors += 1
                if attempt == 5:
                    log.error("usage ledger: %d records lost, write failed: %s", len(batch), exc)
                    self._count_drop(len(batch))
                    return
                log.warning("usage ledger write failed (retrying): %s", exc)
                time.sleep(delay)
                delay *= 2
            else:
                self.written += len(batch)
                return

    def flush(self) -> None:
        """Write what is queued now, from the calling thread (tests, the CLI)."""
        if self._writer is None:
            self._drain()
            return
        self._wake.set()
        deadline = time.monotonic() + 30
        while self._queue and time.monotonic() < deadline:
            time.sleep(0.005)
        with self._write_lock:  # the batch the writer popped last is written
            pass

    def close(self) -> None:
        """Write every queued record, stop the writer, close the backend. Idempotent."""
        if self._closing:
            return
        self._closing = True
        if self._writer is not None:
            self._wake.set()
            self._writer.join()
        self._drain()  # anything recorded after the writer's last look
        self._close()

    # --- a backend ----------------------------------------------------------------------

    @abstractmethod
    def _open(self) -> None:
        """Connect and create the table and its indices if missing."""

    @abstractmethod
    def _write(self, batch: Sequence[UsageRecord]) -> None:
        """Insert one batch in one transaction (raise on failure: the batch is retried)."""

    @abstractmethod
    def _close(self) -> None:
        """Release the writer's connection."""

    @abstractmethod
    def query(self, since: float | None = None, limit: int | None = None) -> list[UsageRecord]:
        """Records with ``time >= since``, newest first, at most ``limit`` (None: all).

        Reads through its own connection: safe from any thread while the writer runs.
        """


def open_ledger(url: str, *, start: bool = True, **options: object) -> Ledger:
    """A ledger for ``sqlite:PATH`` (or a bare path) or ``postgresql://...``.

    ``start=False`` makes a reader (the report, a dashboard elsewhere): nothing is created
    or written, :meth:`Ledger.query` of a ledger that does not exist yet returns no rows.
    """
    if url.startswith(("postgresql://", "postgres://")):
        from .postgres_ledger import PostgresLedger

        ledger: Ledger = PostgresLedger(url, **options)  # type: ignore[arg-type]
    else:
        from .sqlite_ledger import SqliteLedger

        path = url.removeprefix("sqlite://").removeprefix("sqlite:") or str(DEFAULT_SQLITE_PATH)
        ledger = SqliteLedger(Path(path).expanduser(), **options)  # type: ignore[arg-type]
    if start:
        ledger.start()
    return ledger
