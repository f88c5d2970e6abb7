"""The SQLite ledger: batched off the hot path, nothing lost on close, drops counted."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from hydra_proxy.usage.backends import open_ledger
from hydra_proxy.usage.ledger import Ledger, LedgerError
from hydra_proxy.usage.record import UsageRecord
from hydra_proxy.usage.sqlite_ledger import SqliteLedger
from support.usage_data import make_records

WRITER = Path(__file__).parent.parent / "support" / "usage_writer.py"


def _env(go: Path) -> dict[str, str]:
    env = dict(os.environ)
    python_dir = str(Path(__file__).parents[2] / "python")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [python_dir, env.get("PYTHONPATH")]))
    env["USAGE_GO"] = str(go)
    return env


def run_two_writers(target: str, tmp: Path, count: int) -> list[int]:
    """Two processes recording ``count`` records each into ``target`` at the same time."""
    go = tmp / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, str(WRITER), "ledger", target, str(seed), str(count)],
            env=_env(go),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in (1, 2)
    ]
    go.touch()
    written = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        written.append(int(out.strip()))
    return written


def assert_adds_up(ledger: Ledger, count: int) -> None:
    expected = make_records(count, 1) + make_records(count, 2)
    stored = ledger.query()
    assert len(stored) == 2 * count
    assert {r.request_id for r in stored} == {r.request_id for r in expected}
    for kind in ("input_tokens", "output_tokens", "cache_read_tokens", "reasoning_tokens"):
        assert sum(getattr(r, kind) for r in stored) == sum(getattr(r, kind) for r in expected)
    assert sum(r.cost_usd or 0 for r in stored) == pytest.approx(
        sum(r.cost_usd or 0 for r in expected)
    )
    by_id = {r.request_id: r for r in expected}
    for rec in stored[:50]:
        assert rec == by_id[rec.request_id]  # every field round-trips


def test_records_round_trip_and_query_newest_first(tmp_path: Path) -> None:
    records = make_records(40, 7)
    ledger = open_ledger(f"sqlite:{tmp_path / 'u.sqlite3'}", batch_size=8, flush_interval=0.01)
    for rec in records:
        ledger.record(rec)
    ledger.flush()
    assert ledger.written == 40
    stored = ledger.query()
    assert stored == sorted(records, key=lambda r: r.time, reverse=True)
    assert ledger.query(since=records[30].time) == stored[:10]
    assert ledger.query(limit=3) == stored[:3]
    ledger.close()
    conn = sqlite3.connect(tmp_path / "u.sqlite3")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_clean_close_loses_nothing(tmp_path: Path) -> None:
    # A flush interval far longer than the test: only close() can have written these.
    path = tmp_path / "u.sqlite3"
    ledger = open_ledger(f"sqlite:{path}", batch_size=1000, flush_interval=3600)
    records = make_records(2500, 3)
    for rec in records:
        ledger.record(rec)
    ledger.close()
    assert ledger.written == 2500 and ledger.dropped == 0
    reopened = SqliteLedger(path)
    assert len(reopened.query()) == 2500
    ledger.close()  # idempotent


def test_full_queue_drops_the_oldest_and_counts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    drops: list[int] = []
    # Not started: no writer drains the queue, as when the database stalls.
    ledger = SqliteLedger(
        tmp_path / "u.sqlite3", batch_size=10, max_queue=100, on_drop=drops.append
    )
    records = make_records(130, 4)
    for rec in records:
        ledger.record(rec)
    assert ledger.dropped == 30 and sum(drops) == 30
    assert "queue full" in caplog.text
    ledger._open()
    ledger.close()
    kept = {r.request_id for r in ledger.query()}
    assert kept == {r.request_id for r in records[30:]}  # the newest 100


def test_record_from_many_threads(tmp_path: Path) -> None:
    ledger = open_ledger(f"sqlite:{tmp_path / 'u.sqlite3'}", batch_size=16, flush_interval=0.005)
    chunks = [make_records(300, seed) for seed in range(4)]
    threads = [threading.Thread(target=lambda c=c: [ledger.record(r) for r in c]) for c in chunks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ledger.close()
    assert len(ledger.query()) == 1200 and ledger.dropped == 0


def test_two_processes_into_one_sqlite_file_add_up(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    written = run_two_writers(f"sqlite:{path}", tmp_path, 1500)
    assert written == [1500, 1500]
    assert_adds_up(SqliteLedger(path), 1500)


def test_unwritable_path_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(LedgerError, match="cannot open the SQLite ledger"):
        open_ledger(f"sqlite:{blocker / 'u.sqlite3'}")


def test_a_failing_write_is_retried(tmp_path: Path) -> None:
    class Flaky(SqliteLedger):
        failures = 2

        def _write(self, batch: object) -> None:
            if self.failures:
                self.failures -= 1
                raise sqlite3.OperationalError("database is locked")
            super()._write(batch)  # type: ignore[arg-type]

    ledger = Flaky(tmp_path / "u.sqlite3", batch_size=5)
    ledger.start()
    recs: list[UsageRecord] = make_records(12, 5)
    for rec in recs:
        ledger.record(rec)
    ledger.close()
    assert ledger.write_errors == 2 and ledger.written == 12 and ledger.dropped == 0


class _Failing(SqliteLedger):
    """A SQLite ledger whose writes fail as told (the database away, or a refused row)."""

    outage = 0  # the next writes that fail as if the file were locked past the timeout
    refused: frozenset[str] = frozenset()  # request ids whose rows the database refuses

    def _write(self, batch: Sequence[UsageRecord]) -> None:
        if self.outage:
            self.outage -= 1
            raise sqlite3.OperationalError("database is locked")
        if any(r.request_id in self.refused for r in batch):
            raise sqlite3.IntegrityError("CHECK constraint failed")
        super()._write(batch)


def test_an_outage_keeps_the_records(tmp_path: Path) -> None:
    ledger = _Failing(tmp_path / "u.sqlite3", batch_size=5, flush_interval=0.01)
    ledger.outage = 5  # longer than one round of retries: the batch goes back to the queue
    ledger.start()
    records = make_records(12, 6)
    for rec in records:
        ledger.record(rec)
    ledger.flush()
    assert ledger.written == 12 and ledger.dropped == 0 and ledger.write_errors == 5
    ledger.close()
    assert len(ledger.query()) == 12


def test_a_refused_row_is_dropped_alone(tmp_path: Path) -> None:
    records = make_records(20, 7)
    ledger = _Failing(tmp_path / "u.sqlite3", batch_size=8)
    ledger.refused = frozenset({records[3].request_id})
    ledger.start()
    for rec in records:
        ledger.record(rec)
    ledger.close()
    assert ledger.dropped == 1 and ledger.written == 19
    assert {r.request_id for r in ledger.query()} == {
        r.request_id for r in records
    } - ledger.refused


def test_close_during_an_outage_counts_the_loss(tmp_path: Path) -> None:
    drops: list[int] = []
    ledger = _Failing(
        tmp_path / "u.sqlite3", batch_size=10, flush_interval=3600, on_drop=drops.append
    )
    ledger.start()
    ledger.outage = 10**6
    for rec in make_records(30, 8):
        ledger.record(rec)
    ledger.close()  # returns: shutdown is not held up by a database that is away
    assert ledger.dropped == 30 and sum(drops) == 30 and ledger.written == 0
