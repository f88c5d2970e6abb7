"""The audit log on SQLite and on a real PostgreSQL server: every change made through
``hydra-proxy keys`` and through ``/admin/keys`` leaves one entry naming who, what, before
and after, read back by ``hydra-proxy audit`` and ``GET /admin/audit``; no entry holds a
secret or a hash of one; a change that fails leaves none; the database refuses to update
or delete an entry."""

from __future__ import annotations

import argparse
import getpass
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from hydra_proxy.mock import MockServer
from hydra_proxy.team import audit, audit_cli, manage
from hydra_proxy.team import cli as keys_cli
from hydra_proxy.team.secret import secret_hash
from hydra_proxy.team.store import open_key_store
from support.team_keys import ADMIN_KEY, call, proxy

WEBHOOK = "https://hooks.example.com/services/T000-secret-part"
# The arguments of each `hydra-proxy keys` command that changes something, and the audit
# action it must leave.
CLI_CHANGES = {
    "create": (["create", "alice", "--budget", "5", "--team", "core"], "key.create"),
    "set": (["set", "alice", "--rpm", "7", "--budget", "none"], "key.set"),
    "rotate": (["rotate", "alice", "--grace", "1"], "key.rotate"),
    "revoke": (["revoke", "alice"], "key.revoke"),
    "team": (["team", "core", "--budget", "50", "--period", "week"], "team.set"),
    "alert": (["alert", "core", "--team", "--at", "80", "--webhook", WEBHOOK], "alert.set"),
    "alert --off": (["alert", "core", "--team", "--off"], "alert.remove"),
}


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def _commands(p: argparse.ArgumentParser) -> set[str]:
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def _raw_rows(ledger: str) -> str:
    """Every stored column of every audit entry, as one text."""
    if ledger.startswith("sqlite:"):
        with sqlite3.connect(ledger.removeprefix("sqlite:")) as conn:
            return repr(conn.execute("SELECT * FROM hydra_audit").fetchall())
    import psycopg

    with psycopg.connect(ledger) as conn:
        return repr(conn.execute("SELECT * FROM hydra_audit").fetchall())


def _tamper(ledger: str, statement: str) -> str:
    """Run `statement` on the audit table directly; the database's refusal."""
    if ledger.startswith("sqlite:"):
        conn = sqlite3.connect(ledger.removeprefix("sqlite:"))
        try:
            with pytest.raises(sqlite3.DatabaseError) as refused:
                conn.execute(statement)
            return str(refused.value)
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(ledger) as conn, pytest.raises(psycopg.Error) as refused_pg:
        conn.execute(statement)
    return str(refused_pg.value)


def _secrets(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("hk-")]


def test_cli_changes_audited(ledger: str, capsys: pytest.CaptureFixture[str]) -> None:
    # Every command of `hydra-proxy keys` but the listing changes something: each is here.
    assert {c.split()[0] for c in CLI_CHANGES} == _commands(keys_cli.parser()) - {"list"}
    assert {action for _, action in CLI_CHANGES.values()} == set(manage.ACTIONS)
    secrets = []
    for args, _ in CLI_CHANGES.values():
        assert keys_cli.main(["--ledger", ledger, *args]) == 0
        secrets += _secrets(capsys.readouterr().out)
    assert len(secrets) == 2  # create and rotate printed one each
    # A change that cannot be made leaves no entry.
    assert keys_cli.main(["--ledger", ledger, "rotate", "alice"]) == 2  # revoked
    assert keys_cli.main(["--ledger", ledger, "set", "nobody", "--rpm", "3"]) == 2
    capsys.readouterr()

    assert audit_cli.main(["--ledger", ledger, "--json"]) == 0
    entries = orjson.loads(capsys.readouterr().out)["entries"]
    assert [e["action"] for e in entries] == [a for _, a in reversed(CLI_CHANGES.values())]
    assert {e["actor"] for e in entries} == {f"os:{getpass.getuser()}"}
    by_action = {e["action"]: e for e in entries}
    created = by_action["key.create"]
    assert created["subject"] == "key:alice" and created["before"] is None
    assert created["after"]["budget_usd"] == 5.0 and created["after"]["team"] == "core"
    changed = by_action["key.set"]
    assert (changed["before"]["rpm"], changed["after"]["rpm"]) == (None, 7)
    assert (changed["before"]["budget_usd"], changed["after"]["budget_usd"]) == (5.0, None)
    rotated = by_action["key.rotate"]
    assert rotated["before"]["old_secret_until"] is None
    assert rotated["after"]["old_secret_until"] is not None
    revoked = by_action["key.revoke"]
    assert revoked["before"]["revoked"] is None and revoked["after"]["revoked"] is not None
    team = by_action["team.set"]
    assert team["subject"] == "team:core" and team["before"] is None
    assert team["after"] == {"name": "core", "budget_usd": 50.0, "period": "week",
                             "rpm": None, "tpm": None}  # fmt: skip
    alert = by_action["alert.set"]
    assert alert["subject"] == "team:core" and alert["before"] is None
    assert alert["after"] == {"thresholds": [80], "webhook": "https://hooks.example.com/…",
                              "format": "json"}  # fmt: skip
    assert by_action["alert.remove"]["before"] == alert["after"]
    raw = _raw_rows(ledger)
    for secret in secrets:
        assert secret not in raw and secret_hash(secret) not in raw
    assert "T000-secret-part" not in raw  # a webhook by its host only

    # The table as the command prints it: one line per entry, the changed fields named.
    assert audit_cli.main(["--ledger", ledger, "--subject", "key:alice", "--limit", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and "key.revoke" in lines[2] and "key.rotate" in lines[3]
    assert "revoked: null -> " in lines[2]
    assert audit_cli.main(["--ledger", ledger, "--since", "2999-01-01"]) == 0
    assert capsys.readouterr().out == "no audit entries\n"


def test_append_only(ledger: str) -> None:
    store = open_key_store(ledger)
    try:
        manage.create(store, "bob", 1.0)
        manage.revoke(store, "bob", 2.0)
    finally:
        store.close()
    statements = [
        "UPDATE hydra_audit SET actor = 'someone else'",
        "DELETE FROM hydra_audit",
    ]
    if not ledger.startswith("sqlite:"):
        statements.append("TRUNCATE hydra_audit")
    for statement in statements:
        assert "the audit log is append-only" in _tamper(ledger, statement)
    store = open_key_store(ledger)
    try:
        kept = audit.entries(store)
    finally:
        store.close()
    assert [(e.actor, e.action) for e in kept] == [
        (f"os:{getpass.getuser()}", "key.revoke"),
        (f"os:{getpass.getuser()}", "key.create"),
    ]


def test_scrub() -> None:
    doc = {"name": "a", "secret": "hk-x", "secret_hash": "ab", "providers": [
        {"api_key": "sk-1", "api_keys": ["sk-2"], "base_url": "u", "refresh_token": "t"}]}  # fmt: skip
    assert audit.scrub(doc) == {"name": "a", "secret": "[scrubbed]", "secret_hash": "[scrubbed]",
                                "providers": [{"api_key": "[scrubbed]", "api_keys": "[scrubbed]",
                                               "base_url": "u", "refresh_token": "[scrubbed]"}]}  # fmt: skip


def _audit(port: int, query: str = "", key: str | None = ADMIN_KEY) -> Any:
    return call(port, "GET", "/admin/audit" + query, key=key)


def test_admin_api_changes_audited(mock: MockServer, ledger: str, tmp_path: Path) -> None:
    with proxy(mock, ledger, tmp_path) as server:
        port = server.port
        created = call(port, "POST", "/admin/keys", {"name": "erin", "rpm": 2}, ADMIN_KEY)
        assert created.status == 201
        secret = created.json()["secret"]
        assert call(port, "PATCH", "/admin/keys/erin", {"rpm": 4}, ADMIN_KEY).status == 200
        # Setting what is set already changes nothing: no entry.
        assert call(port, "PATCH", "/admin/keys/erin", {"rpm": 4}, ADMIN_KEY).status == 200
        rotated = call(port, "POST", "/admin/keys/erin/rotate", {"grace_seconds": 0}, ADMIN_KEY)
        new_secret = rotated.json()["secret"]
        assert call(port, "DELETE", "/admin/keys/erin", key=ADMIN_KEY).status == 200
        assert call(port, "PUT", "/admin/keys/_teams/core", {"rpm": 9}, ADMIN_KEY).status == 200
        # Refused changes: none recorded.
        assert call(port, "POST", "/admin/keys/erin/rotate", {}, ADMIN_KEY).status == 400
        assert call(port, "PATCH", "/admin/keys/nobody", {"rpm": 1}, ADMIN_KEY).status == 404
        assert call(port, "POST", "/admin/keys", {"name": "erin"}, ADMIN_KEY).status == 400

        listed = _audit(port)
        assert listed.status == 200 and listed.headers["cache-control"] == "no-store"
        entries = listed.json()["entries"]
        assert [(e["actor"], e["action"], e["subject"]) for e in entries] == [
            ("admin-key", "team.set", "team:core"),
            ("admin-key", "key.revoke", "key:erin"),
            ("admin-key", "key.rotate", "key:erin"),
            ("admin-key", "key.set", "key:erin"),
            ("admin-key", "key.create", "key:erin"),
        ]
        assert entries[3]["before"]["rpm"] == 2 and entries[3]["after"]["rpm"] == 4
        for text in (listed.body.decode(), _raw_rows(ledger)):
            for s in (secret, new_secret):
                assert s not in text and secret_hash(s) not in text

        # Filters: a subject, a limit, a start.
        erin = _audit(port, "?subject=key:erin&limit=2").json()["entries"]
        assert [e["action"] for e in erin] == ["key.revoke", "key.rotate"]
        assert _audit(port, "?since=2999-01-01").json() == {"entries": []}
        assert len(_audit(port, "?since=1h").json()["entries"]) == 5
        # Bad filters and the wrong credentials: refused in the API's error shape.
        for query, param in (("?limit=0", "limit"), ("?limit=x", "limit"),
                             ("?since=yesterday", "since")):  # fmt: skip
            bad = _audit(port, query)
            assert bad.status == 400 and bad.json()["error"]["param"] == param, bad.body
        assert _audit(port, "?who=me").status == 400
        assert _audit(port, key=None).status == 401
        assert _audit(port, key=new_secret).status == 401  # a member is no admin
        assert call(port, "POST", "/admin/audit", {}, ADMIN_KEY).status == 405
        assert call(port, "DELETE", "/admin/audit", key=ADMIN_KEY).status == 405
