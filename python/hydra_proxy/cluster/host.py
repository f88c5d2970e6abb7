"""The counters of one machine: an SQLite database in WAL mode, shared by the workers of
one `serve`, needing nothing installed.

Each method is one ``BEGIN IMMEDIATE`` transaction: the first statement takes the
database's write lock, so a check and its count are one step for every worker. The
file lives on tmpfs (``/dev/shm``) when there is one and nothing in it outlasts the
`serve` (synchronous off: a power cut loses only counters that died with the processes).
A transaction takes a few tens of microseconds; a worker that finds the lock held waits
in SQLite's busy handler, bounded by `BUSY_TIMEOUT`.

Slots and reservations carry the holding process's pid: when a bound is full, holders
whose process is gone (a worker killed, respawned by granian) are dropped at once rather
than at the end of their lease.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BUSY_TIMEOUT = 2.0  # seconds a worker waits for another's transaction
# How often a full bound looks for holders whose process died (a few syscalls each).
DEAD_SWEEP_INTERVAL = 0.5

SCHEMA = """
CREATE TABLE IF NOT EXISTS slots (
    name TEXT NOT NULL, holder TEXT NOT NULL, until REAL NOT NULL, pid INTEGER NOT NULL,
    PRIMARY KEY (name, holder)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS windows (name TEXT NOT NULL, at REAL NOT NULL, amount REAL NOT NULL);
CREATE INDEX IF NOT EXISTS windows_by_name ON windows (name, at);
CREATE TABLE IF NOT EXISTS budgets (
    name TEXT PRIMARY KEY, spent REAL NOT NULL, expires REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS reservations (
    name TEXT NOT NULL, holder TEXT NOT NULL, amount REAL NOT NULL, pid INTEGER NOT NULL,
    PRIMARY KEY (name, holder)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rests (name TEXT PRIMARY KEY, until REAL NOT NULL) WITHOUT ROWID;
"""


def new_path() -> Path:
    """A fresh database path for one `serve` (tmpfs when the machine has it), in a folder
    named by the serve's pid; the folders of serves that died without removing theirs (a
    SIGKILL) are removed first."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    parent = Path(base or tempfile.gettempdir())
    for stale in parent.glob("hydra-counters-*-*"):
        pid = stale.name.split("-")[2]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    folder = tempfile.mkdtemp(prefix=f"hydra-counters-{os.getpid()}-", dir=base)
    return Path(folder) / "counters.sqlite3"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


class HostCounters:
    """`Counters` in an SQLite file shared by the processes that open it."""

    def __init__(self, path: str | os.PathLike[str], clock: Callable[[], float] = time.time):
        self.path = str(path)
        self._now = clock
        self._pid = os.getpid()
        self._swept = 0.0
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=OFF")
        db.executescript(SCHEMA)
        self._db = db

    def close(self) -> None:
        self._db.close()

    def _begin(self) -> sqlite3.Connection:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        return db

    # -- slots ----------------------------------------------------------------------------

    def _count(self, db: sqlite3.Connection, name: str, now: float) -> int:
        db.execute("DELETE FROM slots WHERE name = ? AND until <= ?", (name, now))
        row = db.execute("SELECT count(*) FROM slots WHERE name = ?", (name,)).fetchone()
        return int(row[0])

    def _sweep_dead(self, db: sqlite3.Connection, table: str, name: str) -> bool:
        """Drop `name`'s holders whose process is gone; whether any was."""
        now = time.monotonic()
        if now - self._swept < DEAD_SWEEP_INTERVAL:
            return False
        self._swept = now
        pids = [
            p for (p,) in db.execute(f"SELECT DISTINCT pid FROM {table} WHERE name = ?", (name,))
        ]
        dead = [p for p in pids if p != self._pid and not _alive(p)]
        for pid in dead:
            db.execute(f"DELETE FROM {table} WHERE name = ? AND pid = ?", (name, pid))
        return bool(dead)

    async def acquire(self, name: str, limit: int, holder: str, ttl: float) -> bool:
        db = self._begin()
        try:
            now = self._now()
            held = self._count(db, name, now)
            if held >= limit and self._sweep_dead(db, "slots", name):
                held = self._count(db, name, now)
            if held >= limit:
                return False
            db.execute(
                "INSERT OR REPLACE INTO slots VALUES (?, ?, ?, ?)",
                (name, holder, now + ttl, self._pid),
            )
            return True
        finally:
            db.execute("COMMIT")

    async def adopt(self, name: str, holder: str, ttl: float) -> None:
        """Count a slot `holder` already holds elsewhere (a store that went away), past
        any limit: the stream is running."""
        db = self._begin()
        try:
            db.execute(
                "INSERT OR REPLACE INTO slots VALUES (?, ?, ?, ?)",
                (name, holder, self._now() + ttl, self._pid),
            )
        finally:
            db.execute("COMMIT")

    async def release(self, name: str, holder: str) -> None:
        self._db.execute("DELETE FROM slots WHERE name = ? AND holder = ?", (name, holder))

    async def renew(self, leases: list[tuple[str, str]], ttl: float) -> None:
        if not leases:
            return
        db = self._begin()
        try:
            until = self._now() + ttl
            db.executemany(
                "UPDATE slots SET until = ? WHERE name = ? AND holder = ?",
                [(until, name, holder) for name, holder in leases],
            )
        finally:
            db.execute("COMMIT")

    async def held(self, name: str) -> int:
        """Slots of `name` held now (for tests and the benchmark)."""
        db = self._begin()
        try:
            return self._count(db, name, self._now())
        finally:
            db.execute("COMMIT")

    # -- windows --------------------------------------------------------------------------

    def _window_total(self, db: sqlite3.Connection, name: str, now: float, period: float) -> float:
        db.execute("DELETE FROM windows WHERE name = ? AND at <= ?", (name, now - period))
        row = db.execute("SELECT total(amount) FROM windows WHERE name = ?", (name,)).fetchone()
        return float(row[0])

    async def hit(self, name: str, limit: float, amount: float, period: float) -> float:
        db = self._begin()
        try:
            now = self._now()
            total = self._window_total(db, name, now, period)
            if total + amount <= limit:
                db.execute("INSERT INTO windows VALUES (?, ?, ?)", (name, now, amount))
                return 0.0
            need, freed = total + amount - limit, 0.0
            rows = db.execute("SELECT at, amount FROM windows WHERE name = ? ORDER BY at", (name,))
            for at, counted in rows:
                freed += counted
                if freed >= need:
                    return float(max(at + period - now, 0.001))
            return period
        finally:
            db.execute("COMMIT")

    async def add(self, name: str, amount: float, period: float) -> None:
        db = self._begin()
        try:
            now = self._now()
            self._window_total(db, name, now, period)
            db.execute("INSERT INTO windows VALUES (?, ?, ?)", (name, now, amount))
        finally:
            db.execute("COMMIT")

    # -- budgets --------------------------------------------------------------------------

    def _spent(self, db: sqlite3.Connection, name: str) -> tuple[float, float, bool]:
        """(spent, reserved, whether the period is known) after dropping an ended period."""
        row = db.execute("SELECT spent, expires FROM budgets WHERE name = ?", (name,)).fetchone()
        known = row is not None
        spent = 0.0
        if row is not None:
            if row[1] and row[1] <= self._now():
                db.execute("DELETE FROM budgets WHERE name = ?", (name,))
                known = False
            else:
                spent = float(row[0])
        reserved = db.execute(
            "SELECT total(amount) FROM reservations WHERE name = ?", (name,)
        ).fetchone()
        return spent, float(reserved[0]), known

    async def reserve(self, name: str, amount: float, cap: float, holder: str) -> bool:
        db = self._begin()
        try:
            spent, reserved, _ = self._spent(db, name)
            if spent + reserved + amount > cap and self._sweep_dead(db, "reservations", name):
                spent, reserved, _ = self._spent(db, name)
            if spent + reserved + amount > cap:
                return False
            db.execute(
                "INSERT OR REPLACE INTO reservations VALUES (?, ?, ?, ?)",
                (name, holder, amount, self._pid),
            )
            return True
        finally:
            db.execute("COMMIT")

    async def settle(self, name: str, holder: str, spent: float, expires: float) -> None:
        db = self._begin()
        try:
            before, _, _ = self._spent(db, name)
            db.execute("DELETE FROM reservations WHERE name = ? AND holder = ?", (name, holder))
            db.execute(
                "INSERT OR REPLACE INTO budgets VALUES (?, ?, ?)", (name, before + spent, expires)
            )
        finally:
            db.execute("COMMIT")

    async def spent(self, name: str) -> tuple[float, float]:
        db = self._begin()
        try:
            spent, reserved, _ = self._spent(db, name)
            return spent, reserved
        finally:
            db.execute("COMMIT")

    async def seed(self, name: str, spent: float, expires: float) -> None:
        db = self._begin()
        try:
            if not self._spent(db, name)[2]:
                db.execute(
                    "INSERT OR REPLACE INTO budgets VALUES (?, ?, ?)", (name, spent, expires)
                )
        finally:
            db.execute("COMMIT")

    # -- rests ----------------------------------------------------------------------------

    async def rest(self, name: str, until: float) -> None:
        self._db.execute(
            "INSERT INTO rests VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET "
            "until = max(until, excluded.until)",
            (name, until),
        )

    async def rested_until(self, name: str) -> float:
        row = self._db.execute("SELECT until FROM rests WHERE name = ?", (name,)).fetchone()
        if row is None or row[0] <= self._now():
            return 0.0
        return float(row[0])
