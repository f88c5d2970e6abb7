"""The databases the named-key features are tested on: a fresh SQLite file, and a fresh
database on one real PostgreSQL server per module (skipped, naming why, when the server
or psycopg is missing)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.postgres_server import postgres_server, wait_ready, why_unavailable

PG_MISSING = why_unavailable()
try:
    import psycopg  # noqa: F401
except ImportError:  # pragma: no cover - the extra is installed by tests/run
    PG_MISSING = PG_MISSING or "psycopg not installed (extra 'postgres')"


@pytest.fixture(scope="module")
def pg_server() -> Iterator[str]:
    if PG_MISSING:
        pytest.skip(PG_MISSING)
    with postgres_server() as url:
        wait_ready(url)
        yield url


def pg_database(server: str, tmp_path: Path) -> Iterator[str]:
    """A new database on `server` for one test, dropped after it."""
    import psycopg

    name = f"k{abs(hash(tmp_path))}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield server.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", "postgres"])
def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The ledger URL of a fresh store, on each backend."""
    if request.param == "sqlite":
        yield f"sqlite:{tmp_path / 'usage.sqlite3'}"
        return
    yield from pg_database(request.getfixturevalue("pg_server"), tmp_path)
