"""benches/fleet.py --quick end to end: a few paced streams straight at its upstream and
through `serve --workers 1` and `--workers 2`.

Proves the fleet benchmark measures what it says: every stream of every cell complete and
well-formed (each delta the upstream's, in order; a few kept streams re-checked by the
Anthropic grammar), delays, CPU and RSS produced. Never asserts a time: benchmarks report.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from support.implementations import NATIVE_MISSING

REPO = Path(__file__).resolve().parent.parent.parent

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if NATIVE_MISSING:
        pytest.skip(NATIVE_MISSING)
    out = tmp_path_factory.mktemp("fleet")
    proc = subprocess.run(
        [sys.executable, str(REPO / "benches" / "fleet.py"), "--quick", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        timeout=300,  # a bound on a hung run, not a timing assertion
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-4000:]
    assert (out / "fleet.md").read_text().startswith("# Fleet benchmark")
    data: dict[str, Any] = orjson.loads((out / "fleet.json").read_bytes())
    return data


def test_every_stream_of_every_cell_was_complete(results: dict[str, Any]) -> None:
    rows = results["rows"]
    assert {r["target"] for r in rows} == {"direct", "w1", "w2"}
    for row in rows:
        assert "crashed" not in row, row
        assert row["outcomes"] == {"complete": row["streams"]}, (row["target"], row["errors"])
        # Every delta of every stream arrived (the client checks each one's sequence).
        assert row["deltas_total"] == row["streams"] * row["events_per_stream"], row
        assert row["grammar_checked"] > 0 and row["grammar_problems"] == [], row


def test_delays_cpu_and_memory_were_measured(results: dict[str, Any]) -> None:
    for row in results["rows"]:
        assert row["events_in_window"] > 0, row
        assert row["delay"]["n"] == row["events_in_window"], row
        assert row["delay"]["p99_ms"] is not None and row["delay"]["p99_ms"] >= 0, row
        if row["target"] != "direct":
            assert row["workers"] in (1, 2)
            # The proxy's whole tree: granian's main process and its workers.
            assert len(row["proxy_pids"]) >= row["workers"] + 1, row
            assert row["proxy_cpu_us_per_event"] is not None, row
            assert row["rss_per_stream_bytes"] is not None, row
            assert row["added_p99_ms"] is not None, row
    assert set(results["capacity"]) == {"w1", "w2"}
