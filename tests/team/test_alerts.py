"""Spend alerts: thresholds of a key's or a team's budget, each posted to a webhook once per
threshold and period, across workers and replicas (the claim in the key store), retried
with backoff and logged; set with `hydra-proxy keys alert` and `/admin/keys/.../alert`; end
to end through a proxy of two workers, on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
import pytest

from hydra_proxy.mock import MockServer
from hydra_proxy.team import alerts, manage
from hydra_proxy.team.alerts import AlertWatch, Crossing, Watched
from hydra_proxy.team.period import bounds
from hydra_proxy.team.store import open_key_store
from support.servers import PYTHON_DIR
from support.team_keys import ADMIN_KEY, call, cost, create, ledger_rows, messages, proxy, turn
from support.webhook_receiver import Receiver

SECRET_PATH = "/hook/T000-secret-part"


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def test_thresholds_and_webhooks_are_checked() -> None:
    assert alerts.parse_thresholds("80, 50,100%,50") == (50, 80, 100)
    assert alerts.parse_thresholds([90]) == (90,)
    for bad, said in (("", "whole percentage"), ([0], "between 1 and 1000"),
                      ("x", "whole percentage"), ([], "list of percentages"),
                      (list(range(1, 13)), "at most 10")):  # fmt: skip
        with pytest.raises(alerts.AlertError, match=said):
            alerts.parse_thresholds(bad)
    for url in ("ftp://host/x", "hooks.slack.com/x", "http:///nohost", 5):
        with pytest.raises(alerts.AlertError, match="webhook"):
            alerts.make("key", "alice", [50], url)
    with pytest.raises(alerts.AlertError, match="format"):
        alerts.make("key", "alice", [50], "https://h/x", "xml")
    alert = alerts.make("team", "core", "50", "https://hooks.example.com" + SECRET_PATH, "slack")
    assert alert.public() == {"thresholds": [50], "webhook": "https://hooks.example.com/…",
                              "format": "slack"}  # fmt: skip


def test_bodies_say_who_what_and_when() -> None:
    now = 1_800_000_000.0
    start, end = bounds("month", now)
    alert = alerts.make("key", "alice", [80], "https://h/x")
    crossing = Crossing(alert, 80, 10.0, 8.5, "month", start, end, team="core")
    doc = orjson.loads(alerts.body(crossing, now))
    assert doc == {
        "type": "budget_alert",
        "subject": {"kind": "key", "name": "alice", "team": "core"},
        "threshold_percent": 80,
        "budget_usd": 10.0,
        "spent_usd": 8.5,
        "left_usd": 1.5,
        "period": "month",
        "period_start": "2027-01-01T00:00:00Z",
        "period_resets": "2027-02-01T00:00:00Z",
        "time": "2027-01-15T08:00:00Z",
    }
    slack = alerts.make("key", "alice", [80], "https://h/x", "slack")
    text = orjson.loads(alerts.body(Crossing(slack, 80, 10.0, 8.5, "month", start, end), now))
    assert list(text) == ["text"]
    assert "'alice' has spent $8.50 of its $10.00 budget per month (80% reached" in text["text"]


def test_a_failed_post_is_retried_with_backoff_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    with Receiver([500, 503]) as receiver:
        alert = alerts.make("key", "alice", [50], receiver.url(SECRET_PATH))
        crossing = Crossing(alert, 50, 1.0, 0.6, "day", 0.0, 86400.0)
        with caplog.at_level(logging.INFO, "hydra_proxy.alerts"):
            assert asyncio.run(alerts.deliver(crossing, 10.0, 0.5, sleep=sleep)) is True
        assert len(receiver.posts) == 3 and waits == [0.5, 1.0]
        assert receiver.posts[0][1]["content-type"] == "application/json"
        receiver.statuses = [404]
        caplog.clear()
        with caplog.at_level(logging.INFO, "hydra_proxy.alerts"):
            assert asyncio.run(alerts.deliver(crossing, 10.0, 0.5, sleep=sleep)) is False
        assert len(receiver.posts) == 4  # a 404 is final: not retried
        receiver.statuses = [302]  # a redirect is not followed: the body goes nowhere else
        assert asyncio.run(alerts.deliver(crossing, 10.0, 0.5, sleep=sleep)) is False
        assert len(receiver.posts) == 5
    logged = caplog.text
    assert "alert NOT sent: key:alice reached 50% of its budget" in logged
    assert "HTTP 404, attempt 1 of 4, given up" in logged
    # Nowhere down to an unreachable host: every attempt, then given up.
    waits.clear()
    dead = alerts.make("key", "alice", [50], "http://127.0.0.1:1/hook")
    gone = Crossing(dead, 50, 1.0, 0.6, "day", 0.0, 86400.0)
    assert asyncio.run(alerts.deliver(gone, 10.0, 0.25, sleep=sleep)) is False
    assert waits == [0.25, 0.5, 1.0]
    assert "T000-secret-part" not in caplog.text  # the webhook's path is never logged


def test_a_stopping_worker_does_not_wait_out_the_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    create(ledger, "alice", budget=1.0)
    store = open_key_store(ledger)
    alerts.save(store, alerts.make("key", "alice", [50], "http://127.0.0.1:1/hook"))
    monkeypatch.setattr(alerts, "CLOSE_WAIT", 0.2)

    async def counter_spent(name: str) -> float:
        return 0.9

    async def run() -> list[Crossing]:
        watch = AlertWatch(store, counter_spent, ledger_on=False,
                           environ={alerts.BACKOFF_ENV: "3600"})  # fmt: skip
        watch.configure(alerts.load(store))
        found = await watch.look(Watched("key:alice", 1.0, "day"), time.time())
        await watch.close()
        return found

    with caplog.at_level(logging.INFO, "hydra_proxy.alerts"):
        assert [c.threshold for c in asyncio.run(run())] == [50]
    assert "retried in 3600.0 s" in caplog.text
    assert "the worker stopped while its webhook was retried" in caplog.text
    store.close()


def test_each_threshold_once_per_period_across_replicas(ledger: str) -> None:
    """Three workers (three stores on one database, as replicas have) look at once: each
    threshold reached is sent by exactly one; the next period sends it again."""
    create(ledger, "alice", budget=1.0)
    spent = {"value": 0.85}

    async def counter_spent(name: str) -> float:
        assert name == "key:alice:budget"
        return spent["value"]

    stores = [open_key_store(ledger) for _ in range(3)]
    with Receiver() as receiver:
        alert = alerts.make("key", "alice", [50, 80, 100], receiver.url())
        alerts.save(stores[0], alert)
        watches = []
        for store in stores:
            watch = AlertWatch(store, counter_spent, ledger_on=False, environ={})
            watch.configure(alerts.load(store))
            watches.append(watch)
        watched = Watched("key:alice", 1.0, "month", "core")
        now = time.time()

        async def everyone(at: float) -> list[list[Crossing]]:
            found = await asyncio.gather(*(w.look(watched, at) for w in watches))
            for w in watches:
                await w.close()
            return list(found)

        sent = asyncio.run(everyone(now))
        assert sorted(c.threshold for found in sent for c in found) == [50, 80]
        assert sorted(b["threshold_percent"] for b in receiver.wait_for(2)) == [50, 80]
        spent["value"] = 1.02
        sent = asyncio.run(everyone(now + 1))
        assert [c.threshold for found in sent for c in found] == [100]
        assert sorted(b["threshold_percent"] for b in receiver.wait_for(3)) == [50, 80, 100]
        next_period = bounds("month", now)[1] + 60
        sent = asyncio.run(everyone(next_period))
        assert sorted(c.threshold for found in sent for c in found) == [50, 80, 100]
        assert len(receiver.wait_for(6)) == 6
        body = receiver.bodies()[-1]
        assert body["subject"] == {"kind": "key", "name": "alice", "team": "core"}
    marks = alerts.sent(stores[0], "key:alice")
    assert [m[0] for m in marks] == [50, 80, 100, 50, 80, 100]
    for store in stores:
        store.close()


def _keys(ledger: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hydra_proxy", "keys", "--ledger", ledger, *args],
        capture_output=True, text=True, env={"PYTHONPATH": str(PYTHON_DIR)}, timeout=60,
    )  # fmt: skip


def test_cli_sets_lists_and_removes_alerts(tmp_path: Path) -> None:
    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    create(ledger, "alice", team="core", budget=10)
    url = "https://hooks.slack.com/services" + SECRET_PATH
    done = _keys(ledger, "alert", "alice", "--at", "50,80,100", "--webhook", url,
                 "--format", "slack")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "key 'alice': alert at 50%, 80%, 100% of its budget, to https://hooks.slack.com/… (slack)\n"
    )
    assert _keys(ledger, "team", "core", "--budget", "100").returncode == 0
    assert _keys(ledger, "alert", "core", "--team", "--at", "90", "--webhook", url).returncode == 0
    listed = orjson.loads(_keys(ledger, "list", "--json").stdout)
    assert listed["keys"][0]["alert"] == {"thresholds": [50, 80, 100],
                                          "webhook": "https://hooks.slack.com/…",
                                          "format": "slack"}  # fmt: skip
    assert listed["teams"][0]["alert"]["thresholds"] == [90]
    assert "T000-secret-part" not in _keys(ledger, "list").stdout
    bad = _keys(ledger, "alert", "alice", "--at", "0", "--webhook", url)
    assert bad.returncode == 2 and "between 1 and 1000" in bad.stderr
    assert "no key named 'nobody'" in _keys(ledger, "alert", "nobody", "--at", "5",
                                            "--webhook", url).stderr  # fmt: skip
    assert _keys(ledger, "alert", "alice", "--off").stdout == "key 'alice': no spend alert\n"
    assert orjson.loads(_keys(ledger, "list", "--json").stdout)["keys"][0]["alert"] is None


def test_alerts_through_a_proxy_of_two_workers(
    mock: MockServer, ledger: str, tmp_path: Path
) -> None:
    """Set through /admin/keys; six requests of $0.25 against a $4.00 budget, three at a
    time over two workers: 10 % and 30 % are each posted once, with what was spent; 50 %
    is not reached. The team's own alert (Slack's body) at 10 % of its $10.00."""
    secret = create(ledger, "alice", team="core", budget=4.0)
    store = open_key_store(ledger)
    manage.set_team(store, "core", budget=10)
    store.close()
    env = {"HYDRA_ALERTS_BACKOFF": "0.05", "HYDRA_PROXY_WORKERS": "2"}
    with Receiver() as receiver, proxy(mock, ledger, tmp_path, **env) as server:
        body = {"thresholds": [10, 30, 50], "webhook": receiver.url(SECRET_PATH)}
        reply = call(server.port, "PUT", "/admin/keys/alice/alert", body, ADMIN_KEY)
        assert reply.status == 200, reply.body
        assert reply.json()["alert"]["webhook"] == "http://127.0.0.1/…"
        kept = call(server.port, "PUT", "/admin/keys/alice/alert", {"thresholds": [5]}, ADMIN_KEY)
        assert kept.status == 200  # no webhook: the one set before is kept
        unset = call(server.port, "DELETE", "/admin/keys/alice/alert", None, ADMIN_KEY)
        assert unset.json()["removed"] is True
        no_url = call(server.port, "PUT", "/admin/keys/alice/alert", {"thresholds": [5]}, ADMIN_KEY)
        assert no_url.status == 400 and "webhook" in no_url.message
        reply = call(server.port, "PUT", "/admin/keys/alice/alert", body, ADMIN_KEY)
        assert reply.status == 200
        slack = {"thresholds": [10], "webhook": receiver.url("/team"), "format": "slack"}
        team_reply = call(server.port, "PUT", "/admin/keys/_teams/core/alert", slack, ADMIN_KEY)
        assert team_reply.status == 200, team_reply.body
        assert call(server.port, "PUT", "/admin/keys/nobody/alert", body, ADMIN_KEY).status == 404
        assert call(
            server.port, "PUT", "/admin/keys/_teams/none/alert", body, ADMIN_KEY
        ).status == (404)
        assert call(server.port, "PUT", "/admin/keys/alice/alert", body, secret).status == 401
        time.sleep(1.0)  # every worker reloads the alerts (the store's version moved)
        mock.script([turn(5, 10)] * 6)
        with ThreadPoolExecutor(3) as pool:
            replies = list(pool.map(
                lambda _: call(server.port, "POST", "/v1/messages", messages(), secret), range(6)
            ))  # fmt: skip
        assert [r.status for r in replies] == [200] * 6
        receiver.wait_for(3)
        time.sleep(1.0)  # nothing more comes
        log = server.log_text()
    ledger_rows(ledger, "alice", 6)
    team_posts = [body for path, _, body in receiver.posts if path == "/team"]
    assert len(team_posts) == 1 and list(team_posts[0]) == ["text"]
    assert team_posts[0]["text"].startswith("hydra-proxy: team 'core' has spent $")
    assert "of its $10.00 budget per month (10% reached" in team_posts[0]["text"]
    got = [body for path, _, body in receiver.posts if path == SECRET_PATH]
    assert sorted(b["threshold_percent"] for b in got) == [10, 30], got
    each = cost("priced-a", 5, 10)
    for b in got:
        assert b["subject"] == {"kind": "key", "name": "alice", "team": "core"}
        assert b["budget_usd"] == 4.0
        assert b["spent_usd"] >= 4.0 * b["threshold_percent"] / 100
        assert b["spent_usd"] <= 6 * each + 1e-9
    assert log.count("worker ready") == 2
    assert log.count("alert sent: key:alice reached") == 2
    assert log.count("alert sent: team:core reached 10%") == 1
    assert "T000-secret-part" not in log
