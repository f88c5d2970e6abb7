"""The live configuration in the key store's database: one row per version of the overlay
(config.overlay), the newest in force, so every worker and every replica that shares the
store (one SQLite file, or one PostgreSQL database) converges on it.

The server's main process reads it when it loads its settings (start, SIGHUP) and polls
its version (`watch`, every ``HYDRA_KEYS_REFRESH`` seconds): when it moved, the main
process reloads as on SIGHUP (the file and the overlay, through every check a start runs),
and granian respawns the workers with the new settings. A new version is written only
after it passed those checks in the worker that took it (`/admin/config`), with its audit
entry in the same transaction.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from ..config import ConfigError, Settings, load
from ..config.overlay import Overlay
from . import audit
from .store import KeyStore, PostgresKeyStore, open_key_store, store_exists

log = logging.getLogger("hydra_proxy.config")

_SCHEMA = """CREATE TABLE IF NOT EXISTS hydra_config (
    version BIGINT PRIMARY KEY,
    time {real} NOT NULL,
    actor TEXT NOT NULL,
    document TEXT NOT NULL
)"""
_WRITE_LOCK = 0x6879636F  # "hyco": one writer of a new version at a time (PostgreSQL)


def create_table(store: KeyStore, cur: Any) -> None:
    """The table (the store calls it when it creates its own tables)."""
    cur.execute(_SCHEMA.format(real=store.real))


def version(store: KeyStore) -> int:
    with store.transaction() as cur:
        cur.execute("SELECT COALESCE(MAX(version), 0) FROM hydra_config")
        row = cur.fetchone()
    return int(row[0])


def current(store: KeyStore) -> Overlay:
    """The newest overlay (version 0 and nothing: none stored)."""
    with store.transaction() as cur:
        cur.execute("SELECT version, document FROM hydra_config ORDER BY version DESC LIMIT 1")
        row = cur.fetchone()
    if row is None:
        return Overlay()
    return Overlay(int(row[0]), orjson.loads(row[1]))


class VersionConflict(Exception):
    """The overlay changed since the version a change was made against."""


def write(store: KeyStore, document: dict[str, Any], expected: int, now: float) -> Overlay:
    """Store `document` as the next version, if the newest is still `expected`, with its
    audit entry (before and after) in the same transaction."""
    m = store.mark
    with store.transaction() as cur:
        if isinstance(store, PostgresKeyStore):
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITE_LOCK,))
        before = current(store)
        if before.version != expected:
            raise VersionConflict(
                f"the live config is at version {before.version}, not {expected}: read it "
                "again and apply the change to it"
            )
        new = Overlay(before.version + 1, document)
        cur.execute(
            f"INSERT INTO hydra_config (version, time, actor, document) VALUES ({m}, {m}, {m}, {m})",
            (new.version, now, audit.current_actor(), orjson.dumps(document).decode()),
        )
        audit.record(store, "config.set", "config", before.document, document, now)
    return new


def load_settings(
    flags: dict[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """The settings of the file with the stored overlay over it. An overlay that cannot be
    read, or that the file (or the environment) no longer agrees with, is logged and left
    out rather than keep the server from starting (`watch` takes it up when it can be
    read; the admin API is how a refused one is put right)."""
    settings = load(flags, env)
    try:
        found = read(settings.usage_ledger)
    except Exception as exc:  # the store away
        log.warning("cannot read the live config, serving the file alone: %s", exc)
        return settings
    if found is None or found.version == 0:
        return settings
    try:
        return with_overlay(flags, env, found)
    except ConfigError as exc:
        log.error(
            "the live config v%d is refused, serving the file alone: %s",
            found.version,
            " | ".join(str(p).replace("\n  -> ", " -> ") for p in exc.problems),
        )
        return settings


def with_overlay(
    flags: dict[str, Any] | None, env: Mapping[str, str] | None, overlay: Overlay
) -> Settings:
    """The settings with `overlay`, through every check a start runs (ConfigError)."""
    from ..config.check import check_startup, require_keys

    settings = load(flags, env, overlay)
    require_keys(settings)
    check_startup(settings, os.environ if env is None else env)
    return settings


def read(ledger: str | None) -> Overlay | None:
    """The stored overlay (None: no store; KeyStoreError: it cannot be read)."""
    if not store_exists(ledger):
        return None
    store = open_key_store(ledger)
    try:
        return current(store)
    finally:
        store.close()


def watch(applied: Callable[[], Settings], interval: float) -> threading.Thread:
    """In the main process: a thread that reloads the server (as SIGHUP does) when the
    stored version differs from the one `applied()` runs with."""

    def run() -> None:
        store: KeyStore | None = None
        store_url: str | None = None
        asked, asked_at = -1, 0.0
        while True:
            time.sleep(interval)
            settings = applied()
            try:
                if store is not None and store_url != settings.usage_ledger:  # a reload moved it
                    store.close()
                    store = None
                if store is None:
                    if not store_exists(settings.usage_ledger):
                        continue
                    store, store_url = open_key_store(settings.usage_ledger), settings.usage_ledger
                newest = version(store)
            except Exception as exc:
                log.warning("cannot read the live config's version: %s", exc)
                continue
            # One reload per new version, and again a minute later when it did not take
            # (refused, or the store was away as it was read): not one per tick.
            now = time.monotonic()
            if newest != settings.overlay_version and (newest != asked or now - asked_at > 60):
                asked, asked_at = newest, now
                log.warning("live config v%d: reloading", newest)
                os.kill(os.getpid(), signal.SIGHUP)

    thread = threading.Thread(target=run, name="hydra-live-config", daemon=True)
    thread.start()
    return thread
