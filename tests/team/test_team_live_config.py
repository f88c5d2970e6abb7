"""Live configuration: routes and providers changed through ``/admin/config``, checked as a
start checks the file (refusals naming where, in the overlay or in the file), audited, and
taken up by both workers of one server and by two replicas sharing one PostgreSQL store;
the file and SIGHUP keep working under it."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hydra_proxy.config import ConfigError, load
from hydra_proxy.config.overlay import Overlay, merge, merge_patch
from hydra_proxy.mock import MockServer
from support.team_keys import ADMIN_KEY, call, config, create, messages, proxy, turn

LIVE_ROUTE = {"name": "live", "match": "live-*", "provider": "b", "model": "cheap-a"}


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def _config(port: int) -> dict[str, Any]:
    reply = call(port, "GET", "/admin/config", key=ADMIN_KEY)
    assert reply.status == 200, reply.body
    doc: dict[str, Any] = reply.json()
    return doc


def _taken_up(
    port: int,
    version: int,
    workers: int,
    old: frozenset[int] | set[int] = frozenset(),
    deadline: float = 30,
) -> set[int]:
    """The worker pids that answer with `version` in force, once `workers` of them did and
    no other worker (nor one of the `old` pids) has answered for a while: granian lets the
    old workers finish for a few seconds after it started the new ones."""
    seen: set[int] = set()
    streak = 0
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            doc = _config(port)
        except (OSError, AssertionError):  # a worker stopping
            time.sleep(0.1)
            continue
        if doc["applied_version"] == version and doc["worker"] not in old:
            seen.add(doc["worker"])
            streak += 1
            if len(seen) >= workers and streak >= 20:
                return seen
        else:
            seen.clear()
            streak = 0
        time.sleep(0.05)
    raise AssertionError(f"version {version} not taken up by {workers} workers: {seen}")


def _upstream_model(mock: MockServer, port: int, secret: str, model: str) -> Any:
    mock.script([turn(5, 10)])
    reply = call(port, "POST", "/v1/messages", messages(model, stream=False), secret)
    if reply.status != 200:
        return reply.status
    return mock.requests()[-1]["body"]["model"]


def test_overlay_merge_and_patch() -> None:
    file_doc = {"providers": {"a": {"kind": "chat", "base_url": "u"}},
                "routes": [{"match": "x-*", "provider": "a"}], "server": {"port": 1}}  # fmt: skip
    overlay = {"providers": {"a": {"base_url": "v"}, "c": {"kind": "anthropic"}},
               "routes": [LIVE_ROUTE]}  # fmt: skip
    merged = merge(file_doc, overlay)
    assert merged["providers"] == {"a": {"kind": "chat", "base_url": "v"},
                                   "c": {"kind": "anthropic"}}  # fmt: skip
    assert merged["routes"] == [LIVE_ROUTE] and merged["server"] == {"port": 1}
    assert merge_patch(overlay, {"providers": {"c": None}, "routes": []}) == {
        "providers": {"a": {"base_url": "v"}}, "routes": []}  # fmt: skip


def test_overlay_problems_say_where(mock: MockServer, tmp_path: Path) -> None:
    path = config(mock, tmp_path)
    flags = {"config": str(path)}
    env = {"OPENAI_API_KEY": "sk-x"}
    bad = Overlay(4, {"routes": [{"match": "z-*", "provider": "nowhere"}],
                      "providers": {"a": {"kind": "nonsense"}}})  # fmt: skip
    with pytest.raises(ConfigError) as refused:
        load(flags, env, bad)
    text = str(refused.value)
    assert "live config v4: " in text and "nowhere" in text and "(at routes.0.provider)" in text
    assert "(at providers.a.kind)" in text
    # A problem of the file under an overlay still names the file and its line.
    path.write_text(path.read_text() + '\n[usage]\nmetrics = "yes"\n')
    with pytest.raises(ConfigError) as file_problem:
        load(flags, env, Overlay(1, {"routes": [LIVE_ROUTE]}))
    assert f"{path}:" in str(file_problem.value) and "live config" not in str(file_problem.value)
    with pytest.raises(ConfigError, match="'server' cannot be set live"):
        load(flags, env, Overlay(1, {"server": {"port": 1}}))
    with pytest.raises(ConfigError, match="names HYDRA_ADMIN_KEY, one of the proxy's own"):
        load(flags, env, Overlay(1, {"providers": {"a": {"api_keys_env": ["HYDRA_ADMIN_KEY"]}}}))


def test_live_config_across_two_workers(mock: MockServer, tmp_path: Path) -> None:
    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    secret = create(ledger, "m")
    with proxy(mock, ledger, tmp_path, HYDRA_PROXY_WORKERS="2") as server:
        port = server.port
        before = _config(port)
        assert before["version"] == 0 and before["applied_version"] == 0
        assert "sk-upstream-SECRET-key" not in str(before)  # keys masked
        assert any(
            k["env"] == "OPENAI_API_KEY" for k in before["effective"]["providers"]["openai"]["keys"]
        )
        assert _upstream_model(mock, port, secret, "live-x") == "live-x"  # the default route
        # Refused: an unknown provider, a table that is not live; nothing stored.
        bad = call(port, "PUT", "/admin/config",
                   {"routes": [{**LIVE_ROUTE, "provider": "nowhere"}]}, ADMIN_KEY)  # fmt: skip
        assert bad.status == 400, bad.body
        problems = bad.json()["error"]["problems"]
        assert problems[0]["where"] == "live config v1" and "nowhere" in problems[0]["message"]
        assert (
            call(port, "PATCH", "/admin/config", {"server": {"port": 1}}, ADMIN_KEY).status == 400
        )
        assert _config(port)["version"] == 0
        # Accepted: the new route, in every worker within the refresh interval.
        routes = [LIVE_ROUTE, *before["effective"]["routes"]]
        routes = [
            {k: v for k, v in r.items() if k in ("name", "match", "provider", "model")}
            for r in routes
        ]
        changed = call(port, "PUT", "/admin/config?version=0", {"routes": routes}, ADMIN_KEY)
        assert changed.status == 200, changed.body
        assert changed.json()["version"] == 1
        pids = _taken_up(port, 1, workers=2)
        assert len(pids) == 2
        for _ in range(6):
            assert _upstream_model(mock, port, secret, "live-x") == "cheap-a"
        # A change against a stale version: 409.
        stale = call(port, "PATCH", "/admin/config?version=0", {"providers": {}}, ADMIN_KEY)
        assert stale.status == 409, stale.body
        # SIGHUP re-reads the file with the live config over it.
        assert server.process is not None
        os.kill(server.process.pid, signal.SIGHUP)
        pids = _taken_up(port, 1, workers=2, old=pids)
        assert _upstream_model(mock, port, secret, "live-x") == "cheap-a"
        # Removed: the file alone again.
        assert call(port, "DELETE", "/admin/config", key=ADMIN_KEY).status == 200
        _taken_up(port, 2, workers=2, old=pids)
        assert _upstream_model(mock, port, secret, "live-x") == "live-x"
        entries = call(port, "GET", "/admin/audit?subject=config", key=ADMIN_KEY).json()["entries"]
        assert [(e["actor"], e["action"]) for e in entries] == [("admin-key", "config.set")] * 2
        assert entries[0]["before"] == {"routes": routes} and entries[0]["after"] == {}


def test_live_config_across_two_replicas_sharing_postgres(
    mock: MockServer, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from conftest import pg_database

    databases = pg_database(request.getfixturevalue("pg_server"), tmp_path)
    ledger = next(databases)
    try:
        secret = create(ledger, "m")
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        with proxy(mock, ledger, tmp_path / "a") as one, proxy(mock, ledger, tmp_path / "b") as two:
            assert _upstream_model(mock, two.port, secret, "live-x") == "live-x"
            routes = [LIVE_ROUTE, {"match": "*", "provider": "a"}]
            changed = call(one.port, "PUT", "/admin/config", {"routes": routes}, ADMIN_KEY)
            assert changed.status == 200, changed.body
            for server in (one, two):
                _taken_up(server.port, 1, workers=1)
                assert _upstream_model(mock, server.port, secret, "live-x") == "cheap-a"
            # A replica started later takes it up from the store at start.
            (tmp_path / "c").mkdir()
            with proxy(mock, ledger, tmp_path / "c") as three:
                assert _config(three.port)["applied_version"] == 1
                assert _upstream_model(mock, three.port, secret, "live-x") == "cheap-a"
    finally:
        next(databases, None)


def test_config_check_shows_the_live_config(
    mock: MockServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    from hydra_proxy.cli import main
    from hydra_proxy.team import live_config
    from hydra_proxy.team.store import open_key_store

    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    path = config(mock, tmp_path)
    monkeypatch.setenv("HYDRA_USAGE_LEDGER", ledger)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    monkeypatch.setenv("HOME", str(tmp_path))
    store = open_key_store(ledger)
    try:
        live_config.write(store, {"routes": [LIVE_ROUTE]}, 0, time.time())
        # A second writer that read version 0 is refused: no version is lost.
        with pytest.raises(live_config.VersionConflict):
            live_config.write(store, {}, 0, time.time())
    finally:
        store.close()
    assert main(["config", "check", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "live config: v1 over the file (routes" in out
    assert "1. [live] model live-* => b:cheap-a" in out and "priced-*" not in out
