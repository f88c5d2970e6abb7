"""The usage report (pure aggregation) and ``hydra-proxy usage`` over a real ledger."""

from __future__ import annotations

import statistics
from pathlib import Path

import orjson
import pytest

from hydra_proxy.usage.backends import open_ledger
from hydra_proxy.usage.cli import main
from hydra_proxy.usage.report import aggregate, parse_since, render_table, total
from hydra_proxy.usage.upstream_usage import tokens_from_responses
from support.usage_data import FIXTURES, make_records

NOW = 1_764_000_000.0 + 86400 * 3


def test_aggregate_by_model_adds_up() -> None:
    records = make_records(200, 21)
    rows = aggregate(records, "model")
    assert sum(r.requests for r in rows) == 200
    assert sum(r.output_tokens for r in rows) == sum(r.output_tokens for r in records)
    assert [r.cost_usd for r in rows] == sorted((r.cost_usd for r in rows), reverse=True)
    for row in rows:
        mine = [r for r in records if r.target_model == row.key]
        assert row.requests == len(mine)
        assert row.errors == sum(r.status >= 400 for r in mine)
        assert row.unpriced == sum(r.cost_usd is None for r in mine)
        assert row.cost_usd == pytest.approx(sum(r.cost_usd or 0 for r in mine))
        assert row.p50_latency_ms == statistics.median(r.latency_ms for r in mine)


def test_aggregate_by_day_route_key() -> None:
    records = make_records(300, 22)  # 37.5 s apart: 300 records span two UTC days
    days = aggregate(records, "day")
    assert [d.key for d in days] == sorted(d.key for d in days) and len(days) >= 1
    assert sum(d.requests for d in days) == 300
    keys = {r.key for r in aggregate(records, "key")}
    assert keys <= {"a1b2c3d4", "0f0f0f0f", "-"}
    assert {r.key for r in aggregate(records, "route")} == {"*", "claude-*", "gpt-*"}


def test_parse_since() -> None:
    assert parse_since("24h", NOW) == NOW - 86400
    assert parse_since("7d", NOW) == NOW - 7 * 86400
    assert parse_since("30m", NOW) == NOW - 1800
    assert parse_since("2026-11-01", NOW) == 1_793_491_200.0
    with pytest.raises(ValueError, match="expected 30m"):
        parse_since("yesterday", NOW)


def test_table_marks_unknown_cost_and_estimates() -> None:
    rec = make_records(1, 23)[0]
    unknown = rec._replace(target_model="mystery", cost_usd=None, estimated=True)
    rows = aggregate([rec, unknown], "model")
    text = render_table(rows, "model", total([rec, unknown]))
    line = next(ln for ln in text.splitlines() if ln.startswith("mystery"))
    assert "unknown" in line and "est." in line
    assert "(+1 unpriced)" in text.splitlines()[-1]  # the total knows a part is missing


def test_cli_table_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:{tmp_path / 'u.sqlite3'}"
    ledger = open_ledger(url)
    records = make_records(50, 24)
    for rec in records:
        ledger.record(rec)
    ledger.close()
    assert main(["--ledger", url, "--by", "model"]) == 0
    table = capsys.readouterr().out
    assert "claude-sonnet-4-5-20250929" in table and table.splitlines()[-1].startswith("total")
    assert main(["--ledger", url, "--by", "day", "--json"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    assert doc["total"]["requests"] == 50
    assert sum(r["input_tokens"] for r in doc["rows"]) == sum(r.input_tokens for r in records)
    assert main(["--ledger", url, "--since", "1h"]) == 0  # the records are from 2025
    assert "no usage recorded in that period" in capsys.readouterr().out
    assert main(["--ledger", url, "--since", "soon"]) == 2
    assert "expected 30m" in capsys.readouterr().err


def test_cli_help_never_prints_the_ledger_url(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HYDRA_USAGE_LEDGER", "postgresql://u:s3cret@db/x")
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "s3cret" not in capsys.readouterr().out


def test_cli_reads_without_creating(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "none.sqlite3"
    assert main(["--ledger", f"sqlite:{path}"]) == 0
    assert "no usage recorded" in capsys.readouterr().out
    assert not path.exists()
    path.write_bytes(b"not a database, not at all" * 100)
    assert main(["--ledger", f"sqlite:{path}"]) == 1
    assert "not a database" in capsys.readouterr().err


def test_reasoning_tokens_are_reported() -> None:
    """gpt-5's recorded usage (448 of its 469 output tokens spent reasoning), in the table
    and in the JSON rows."""
    body = (
        FIXTURES / "responses" / "pydantic-gpt5-stream-reasoning-function-call.sse"
    ).read_bytes()
    (done,) = [
        orjson.loads(line[5:])
        for line in body.splitlines()
        if line.startswith(b"data:") and b'"response.completed"' in line
    ]
    tokens = tokens_from_responses(done["response"]["usage"])
    rec = make_records(1, 24)[0]._replace(
        target_model="gpt-5",
        input_tokens=tokens.input,
        output_tokens=tokens.output,
        reasoning_tokens=tokens.reasoning,
    )
    (row,) = aggregate([rec, rec], "model")
    assert (row.output_tokens, row.reasoning_tokens) == (2 * 469, 2 * 448)
    assert row.as_json()["reasoning_tokens"] == 896
    lines = render_table([row], "model").splitlines()
    cells = lines[2].split()
    assert "of it reasoning" in lines[0] and cells[5:7] == ["938", "896"]
