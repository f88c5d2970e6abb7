"""UsageService: the server's one object for usage (records, metrics, ledger, page)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from test_usage_metrics import samples, total

from hydra_proxy.usage.ledger import Ledger
from hydra_proxy.usage.record import Tokens, UsageRecord, client_key_id
from hydra_proxy.usage.service import UsageService


def _record(usage: UsageService, **changes: object) -> UsageRecord:
    fields: dict[str, object] = dict(
        time=1_764_000_000.0, request_id="req_1", protocol="anthropic", route="claude-*",
        provider="openai", requested_model="claude-sonnet-4-5", target_model="gpt-4o",
        tokens=Tokens(input=1_000_000, output=1_000_000, cache_read=1_000_000),
        latency_ms=1500.0, ttfb_ms=200.0, status=200, key="sk-team-key", stream=True,
    )  # fmt: skip
    fields.update(changes)
    return usage.make_record(**fields)  # type: ignore[arg-type]


def test_make_record_prices_and_hides_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    usage = UsageService.start(
        ledger_url=None, pricing_overrides={"house-*": {"input": 1, "output": 1}}
    )
    rec = _record(usage)
    assert rec.cost_usd == pytest.approx(2.5 + 10 + 1.25)  # gpt-4o list prices
    assert rec.key_id == client_key_id("sk-team-key") and "sk-team-key" not in repr(rec)
    assert _record(usage, target_model="house-7b").cost_usd == pytest.approx(
        2.0 + 1.0
    )  # cache read as input
    assert _record(usage, target_model="unlisted").cost_usd is None
    usage.close()


def test_finish_feeds_metrics_and_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    usage = UsageService.start(
        ledger_url=f"sqlite:{tmp_path / 'u.sqlite3'}", known_routes=["claude-*"]
    )
    recs = [_record(usage, request_id=f"req_{i}", status=200 if i % 3 else 529,
                    error_type=None if i % 3 else "overloaded_error") for i in range(9)]  # fmt: skip
    usage.stream_opened("claude-*", "openai")
    for rec in recs:
        usage.finish(rec)
    status, content_type, body = usage.metrics_response()
    found = samples(body)
    assert status == 200 and content_type.startswith("text/plain")
    assert total(found, "hydra_requests_total", route="claude-*") == 9
    assert total(found, "hydra_upstream_errors_total", error_type="overloaded_error") == 3
    assert total(found, "hydra_open_streams") == 1
    usage.stream_closed("claude-*", "openai")
    usage.close()
    assert isinstance(usage.ledger, Ledger)
    assert sorted(r.request_id for r in usage.ledger.query()) == sorted(r.request_id for r in recs)
    status, _, body = usage.dashboard("/dashboard/data.json", "since=2025-01-01")
    assert status == 200 and orjson.loads(body)["total"]["errors"] == 3


def test_finish_never_raises(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    usage = UsageService.start(ledger_url=None)

    class Broken:
        def observe(self, rec: UsageRecord) -> None:
            raise RuntimeError("boom")

    usage.metrics = Broken()  # type: ignore[assignment]
    usage.finish(_record(usage))
    assert "usage accounting failed for request req_1" in caplog.text


def test_everything_off() -> None:
    usage = UsageService.start(ledger_url=None, metrics=False)
    usage.finish(_record(usage))
    assert usage.metrics_response()[0] == 404
    assert usage.dashboard("/dashboard", "")[0] == 404
    usage.close()
