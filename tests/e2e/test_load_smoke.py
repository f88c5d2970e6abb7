"""benches/load.py --quick end to end against hydra-proxy alone (no peers).

Proves the load benchmark runs: every mode and phase produced numbers and every stream the
client read to its end was complete. Never asserts a time: benchmarks report.
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
MODES = ("anthropic-in", "openai-in", "passthrough")
SERVERS = ("hydra-native", "hydra-python")


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if NATIVE_MISSING:
        pytest.skip(NATIVE_MISSING)
    out = tmp_path_factory.mktemp("load")
    proc = subprocess.run(
        [sys.executable, str(REPO / "benches" / "load.py"), "--quick", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        timeout=300,  # a bound on a hung run, not a timing assertion
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-4000:]
    assert (out / "load.md").read_text().startswith("# Load benchmark")
    data: dict[str, Any] = orjson.loads((out / "load.json").read_bytes())
    return data


@pytest.mark.e2e
def test_every_server_started(results: dict[str, Any]) -> None:
    for server in SERVERS:
        assert results["servers"][server]["status"] == "ok", results["servers"][server]


@pytest.mark.e2e
def test_every_mode_produced_numbers(results: dict[str, Any]) -> None:
    for phase in ("instant", "paced"):
        for mode in MODES:
            for server in ("mock (direct)", *SERVERS):
                lines = [
                    x
                    for x in results["summary"]
                    if (x["phase"], x["mode"], x["server"]) == (phase, mode, server)
                ]
                assert lines, (phase, mode, server)
                for line in lines:
                    assert not line["crashed"], line
                    assert line["completed"] > 0, line
                    assert line["requests_per_s"] > 0, line
                    assert line["events_per_s"] > 0, line
                    assert line["ttfb_p50_s"] is not None and line["ttfb_p50_s"] > 0, line
                    assert line["cpu_us_per_1k_events"] is not None, line
                    if server != "mock (direct)":
                        assert line["added_ttfb_p50_s"] is not None, line


@pytest.mark.e2e
def test_streams_were_complete(results: dict[str, Any]) -> None:
    """Each response read to its end finished with message_stop / [DONE], no error event."""
    rows = results["throughput"]
    assert rows
    for row in rows:
        assert "crashed" not in row, row
        assert row["failed"] == 0, (row["label"], row["errors"])
        assert row["incomplete"] == 0, (row["label"], row["errors"])
        assert row["completed_total"] > 0, row["label"]


@pytest.mark.e2e
def test_held_streams_measured(results: dict[str, Any]) -> None:
    held = {(r["server"], r["mode"]): r for r in results["hold"]}
    for server in SERVERS:
        for mode in MODES:
            row = held[(server, mode)]
            assert "crashed" not in row, row
            assert row["held"] == row["streams"], row
            assert row["failed"] == 0, row["errors"]
            assert row["peak_rss_bytes"] > 0
            assert row["rss_per_stream_bytes"] is not None


@pytest.mark.e2e
def test_paced_cpu_and_large_request_phases_measured(results: dict[str, Any]) -> None:
    """Proxy and mock CPU per relayed event (paced-cpu), and the added TTFB of the real
    Claude Code request (ttfb-large), for each hydra server."""
    for server in SERVERS:
        paced = [
            x for x in results["summary"] if (x["phase"], x["server"]) == ("paced-cpu", server)
        ]
        assert len(paced) == 1, server
        assert paced[0]["deltas"] > 0 and paced[0]["failed"] == 0, paced[0]
        assert paced[0]["cpu_us_per_delta"] is not None, paced[0]
        assert paced[0]["mock_cpu_us_per_delta"] is not None, paced[0]
        large = [
            x for x in results["summary"] if (x["phase"], x["server"]) == ("ttfb-large", server)
        ]
        assert len(large) == 1 and large[0]["completed"] > 0, server
        assert large[0]["request_bytes"] > 40_000, large[0]  # the real request, not a stub
        assert large[0]["added_ttfb_p50_s"] is not None, large[0]
