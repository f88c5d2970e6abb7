"""The console's data (`/dashboard/data.json`) over a real ledger: spend per member with
refusals by cause apart, per agent within a member, per member per day, and the latest
requests filtered by member, model and status."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from hydra_proxy.usage.backends import open_ledger
from hydra_proxy.usage.dashboard import STATUSES, dashboard_response
from hydra_proxy.usage.ledger import Ledger
from hydra_proxy.usage.record import UsageRecord

DAY = 86400.0
NOW = 1_800_000_000.0


def rec(i: int, member: str, *, agent: str | None = None, cost: float | None = 0.5,
        model: str = "m-a", status: int = 200, refusal: str | None = None,
        days_ago: int = 0) -> UsageRecord:  # fmt: skip
    refused = refusal is not None
    return UsageRecord(
        time=NOW - days_ago * DAY - 100 + i,
        request_id=f"req_{i}",
        protocol="anthropic",
        route="*",
        provider="p",
        requested_model=model,
        target_model="" if refused else model,
        input_tokens=0 if refused else 10,
        output_tokens=0 if refused else 5,
        cost_usd=None if refused else cost,
        status=403 if refused else status,
        error_type="permission_error" if refused else (None if status < 400 else "api_error"),
        key_name=member,
        team="core",
        agent=agent,
        refusal=refusal,
    )


RECORDS = [
    rec(0, "alice", days_ago=1),
    rec(1, "alice", agent="researcher", cost=1.25),
    rec(2, "alice", agent="researcher", cost=0.25, model="m-b"),
    rec(3, "alice", agent="tester", cost=None),
    rec(4, "alice", refusal="over_budget"),
    rec(5, "bob", cost=0.1, status=502),
    rec(6, "bob", refusal="rpm"),
    rec(7, "bob", refusal="rpm"),
    rec(8, "bob", refusal="model_not_allowed", model="m-c"),
]


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ledger]:
    led = open_ledger(f"sqlite:{tmp_path_factory.mktemp('console') / 'u.sqlite3'}")
    for r in RECORDS:
        led.record(r)
    led.flush()
    yield led
    led.close()


def data(ledger: Ledger, query: str, key_name: str | None = None) -> dict[str, Any]:
    status, _, body = dashboard_response(
        "/dashboard/data.json", query, ledger, now=NOW, key_name=key_name
    )
    assert status == 200, body
    return dict(orjson.loads(body))


def test_members_spend_and_refusals_by_cause(ledger: Ledger) -> None:
    doc = data(ledger, "since=7d")
    assert doc["total"]["requests"] == 5 and doc["total"]["refused"] == 4
    assert doc["total"]["cost_usd"] == pytest.approx(0.5 + 1.25 + 0.25 + 0.1)
    assert doc["refusals"] == {"rpm": 2, "over_budget": 1, "model_not_allowed": 1}
    members = {m["key"]: m for m in doc["by_member"]}
    assert [m["key"] for m in doc["by_member"]] == ["alice", "bob"]  # the costliest first
    alice, bob = members["alice"], members["bob"]
    assert (alice["requests"], alice["errors"], alice["unpriced"]) == (4, 0, 1)
    assert (alice["refused"], alice["refusals"]) == (1, {"over_budget": 1})
    assert (bob["requests"], bob["errors"], bob["refused"]) == (1, 1, 3)
    assert bob["refusals"] == {"rpm": 2, "model_not_allowed": 1}
    # A refusal is no model's spend: the per-model rows hold the answered requests only.
    assert {m["key"]: m["requests"] for m in doc["by_model"]} == {"m-a": 4, "m-b": 1}


def test_agents_within_a_member_and_days_by_member(ledger: Ledger) -> None:
    doc = data(ledger, "since=7d")
    agents = {(a["member"], a["agent"]): a for a in doc["by_agent"]}
    assert set(agents) == {("alice", "lead"), ("alice", "researcher"), ("alice", "tester"),
                           ("bob", "lead")}  # fmt: skip
    assert agents[("alice", "researcher")]["cost_usd"] == pytest.approx(1.5)
    assert agents[("alice", "researcher")]["requests"] == 2
    assert agents[("alice", "tester")]["unpriced"] == 1
    days = {(d["day"], d["member"]): d["cost_usd"] for d in doc["by_day_member"]}
    assert days == {("2027-01-14", "alice"): 0.5, ("2027-01-15", "alice"): 1.5,
                    ("2027-01-15", "bob"): pytest.approx(0.1)}  # fmt: skip
    today = data(ledger, "since=2027-01-15")
    assert {a["agent"]: a["requests"] for a in today["by_agent"] if a["member"] == "alice"} == {
        "researcher": 2, "tester": 1}  # fmt: skip
    mine = data(ledger, "since=7d", key_name="bob")
    assert [m["key"] for m in mine["by_member"]] == ["bob"]
    assert {r["member"] for r in mine["latest"]} == {"bob"}


@pytest.mark.parametrize(
    ("query", "ids"),
    [
        ("member=bob", [8, 7, 6, 5]),
        ("model=m-c", [8]),  # a refused request by the model it asked for
        ("status=refused", [8, 7, 6, 4]),
        ("status=error", [5]),
        ("status=ok", [3, 2, 1, 0]),
        ("member=alice&status=refused", [4]),
        ("member=alice&model=m-b", [2]),
        ("member=nobody", []),
    ],
)
def test_latest_filtered(ledger: Ledger, query: str, ids: list[int]) -> None:
    doc = data(ledger, "since=7d&" + query)
    assert [r["request_id"] for r in doc["latest"]] == [f"req_{i}" for i in ids]
    assert doc["total"]["requests"] == 5  # the filters pick the table's rows, not the totals
    assert doc["filters"] == {"member": ["alice", "bob"], "model": ["m-a", "m-b", "m-c"],
                              "status": list(STATUSES)}  # fmt: skip


def test_latest_rows_say_why_a_request_was_refused(ledger: Ledger) -> None:
    latest = {r["request_id"]: r for r in data(ledger, "since=7d")["latest"]}
    assert latest["req_6"]["refusal"] == "rpm" and latest["req_6"]["cost_usd"] is None
    assert latest["req_5"]["refusal"] is None and latest["req_5"]["status"] == 502
    assert latest["req_1"]["agent"] == "researcher" and latest["req_0"]["agent"] is None
    status, _, body = dashboard_response("/dashboard/data.json", "status=lost", ledger, now=NOW)
    assert status == 400 and b"use one of ok, error, refused" in body


def test_statuses_cover_every_row(ledger: Ledger) -> None:
    # Every record is in exactly one status: the three filters together are the whole table.
    seen = []
    for status in STATUSES:
        seen += [r["request_id"] for r in data(ledger, f"since=7d&status={status}")["latest"]]
    assert sorted(seen) == sorted(r.request_id for r in RECORDS)
