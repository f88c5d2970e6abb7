"""The ledger backends, by URL: ``sqlite:PATH`` (or a bare path) or ``postgresql://...``."""

from __future__ import annotations

from pathlib import Path

from .ledger import Ledger
from .postgres_ledger import PostgresLedger
from .sqlite_ledger import SqliteLedger

__all__ = ["DEFAULT_SQLITE_PATH", "open_ledger"]

DEFAULT_SQLITE_PATH = Path("~/.hydra-proxy/usage.sqlite3")


def open_ledger(url: str, *, start: bool = True, **options: object) -> Ledger:
    """A ledger for ``sqlite:PATH`` (or a bare path) or ``postgresql://...``.

    ``start=False`` makes a reader (the report, a dashboard elsewhere): nothing is created
    or written, :meth:`Ledger.query` of a ledger that does not exist yet returns no rows.
    """
    if url.startswith(("postgresql://", "postgres://")):
        ledger: Ledger = PostgresLedger(url, **options)  # type: ignore[arg-type]
    else:
        path = url.removeprefix("sqlite://").removeprefix("sqlite:") or str(DEFAULT_SQLITE_PATH)
        ledger = SqliteLedger(Path(path).expanduser(), **options)  # type: ignore[arg-type]
    if start:
        ledger.start()
    return ledger
