"""The PostgreSQL ledger against a real server the test starts on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_usage_ledger import assert_adds_up, run_two_writers

from hydra_proxy.usage.backends import open_ledger
from hydra_proxy.usage.ledger import LedgerError
from hydra_proxy.usage.postgres_ledger import PostgresLedger
from support.postgres_server import postgres_server, wait_ready, why_unavailable
from support.usage_data import make_records

psycopg = pytest.importorskip("psycopg", reason="psycopg not installed (extra 'postgres')")

_missing = why_unavailable()
pytestmark = pytest.mark.skipif(_missing is not None, reason=_missing or "")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with postgres_server() as url:
        wait_ready(url)
        yield url


@pytest.fixture
def url(server: str) -> Iterator[str]:
    """A fresh database per test on the shared server."""
    name = f"t{abs(hash(object()))}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield server.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


def test_round_trip_and_indices(url: str) -> None:
    records = make_records(60, 11)
    ledger = open_ledger(url, batch_size=7, flush_interval=0.01)
    for rec in records:
        ledger.record(rec)
    ledger.close()
    stored = ledger.query()
    assert stored == sorted(records, key=lambda r: r.time, reverse=True)
    assert ledger.query(since=records[50].time) == stored[:10]
    with psycopg.connect(url) as conn:
        indices = {
            r[0]
            for r in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'hydra_usage'"
            )
        }
    assert {"hydra_usage_time", "hydra_usage_model"} <= indices


def test_clean_close_loses_nothing(url: str) -> None:
    ledger = open_ledger(url, batch_size=500, flush_interval=3600)
    for rec in make_records(1200, 12):
        ledger.record(rec)
    ledger.close()
    assert ledger.written == 1200 and ledger.dropped == 0
    assert len(PostgresLedger(url).query()) == 1200


def test_two_processes_into_one_postgres_add_up(url: str, tmp_path: Path) -> None:
    # Both create the table at once (advisory lock) and then write concurrently.
    written = run_two_writers(url, tmp_path, 1000)
    assert written == [1000, 1000]
    assert_adds_up(PostgresLedger(url), 1000)


def test_a_lost_connection_is_reopened(url: str) -> None:
    ledger = open_ledger(url, batch_size=5, flush_interval=0.01)
    for rec in make_records(5, 13):
        ledger.record(rec)
    ledger.flush()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    for rec in make_records(5, 14):
        ledger.record(rec)
    ledger.close()
    assert ledger.dropped == 0 and len(ledger.query()) == 10


def test_unreachable_server_is_a_clear_error(server: str) -> None:
    dead = server.rsplit(":", 1)[0] + ":1/postgres"
    with pytest.raises(LedgerError, match="cannot connect to the PostgreSQL ledger"):
        open_ledger(dead, connect_timeout=2)


def test_a_reader_creates_nothing(url: str) -> None:
    reader = open_ledger(url, start=False)
    assert reader.query() == []
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT to_regclass('hydra_usage')").fetchone() == (None,)


def test_nul_in_a_client_model_name_is_kept_readable(url: str) -> None:

    rec = make_records(1, 15)[0]._replace(requested_model="gpt\x00-4o")
    ledger = open_ledger(url)
    ledger.record(rec)
    ledger.close()
    assert ledger.dropped == 0
    assert [r.requested_model for r in ledger.query()] == ["gpt\ufffd-4o"]


def test_usage_report_over_postgres(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from hydra_proxy.usage.cli import main

    records = make_records(40, 16)
    ledger = open_ledger(url)
    for rec in records:
        ledger.record(rec)
    ledger.close()
    assert main(["--ledger", url, "--by", "route", "--json"]) == 0
    import orjson

    doc = orjson.loads(capsys.readouterr().out)
    assert doc["total"]["requests"] == 40
    assert {r["key"] for r in doc["rows"]} == {r.route for r in records}
    assert sum(r["output_tokens"] for r in doc["rows"]) == sum(r.output_tokens for r in records)
