"""benches/long_session.py: the grown Claude Code request is a real one, and the benchmark
runs end to end (--quick, two small sizes). Never asserts a time: benchmarks report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from support.implementations import NATIVE_MISSING

REPO = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(REPO / "benches"))

import long_session  # noqa: E402


@pytest.mark.parametrize("size", [605_000, 2_500_000])
def test_the_grown_request_is_a_well_formed_session_of_that_size(size: int) -> None:
    base = orjson.loads(long_session.BASE_REQUEST.read_bytes())["body"]
    grown = long_session.grown_request(size, long_session.corpus())
    assert abs(len(orjson.dumps(grown)) - size) < size * 0.02
    messages = grown["messages"]
    # The recorded conversation comes first, unchanged but for its cache breakpoint.
    assert [m["role"] for m in messages[: len(base["messages"])]] == [
        m["role"] for m in base["messages"]
    ]
    added = messages[len(base["messages"]) :]
    assert added and [m["role"] for m in added] == ["assistant", "user"] * (len(added) // 2)
    for call, result in zip(added[::2], added[1::2], strict=True):
        (use,) = [b for b in call["content"] if b["type"] == "tool_use"]
        (answer,) = result["content"]
        assert answer["type"] == "tool_result" and answer["tool_use_id"] == use["id"]
        assert use["name"] in ("Read", "Edit") and use["input"]["file_path"]
        assert "     1\t" in answer["content"]  # numbered lines, as Claude Code's Read returns
    breakpoints = [
        b for m in messages if isinstance(m["content"], list) for b in m["content"]
        if "cache_control" in b
    ]  # fmt: skip
    assert breakpoints == [messages[-1]["content"][-1]]
    assert grown["tools"] == base["tools"] and grown["system"] == base["system"]


@pytest.mark.e2e
def test_the_benchmark_runs_end_to_end(tmp_path: Path) -> None:
    if NATIVE_MISSING:
        pytest.skip(NATIVE_MISSING)
    proc = subprocess.run(
        [sys.executable, str(REPO / "benches" / "long_session.py"), "--quick",
         "--sizes", "51000,300000", "--out", str(tmp_path)],
        cwd=REPO, capture_output=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-4000:]
    data: dict[str, Any] = orjson.loads((tmp_path / "long_session.json").read_bytes())
    rows = data["rows"]
    assert [r["size_target"] for r in rows] == [51_000, 300_000]
    for row in rows:
        assert row["failed"] == 0 and row["incomplete"] == 0, row
        assert row["requests"] > 0 and row["direct_requests"] > 0, row
        assert row["session_requests"] > 0, row
        assert abs(row["request_bytes"] - row["size_target"]) < row["size_target"] * 0.02
        # The mock read the proxy's own translation on the direct run: a Chat body.
        assert 0 < row["upstream_bytes"] < row["request_bytes"] * 1.1, row
        assert row["steps_ms"]["parse (orjson.loads)"] > 0, row
        assert row["steps_ms"]["token estimate, cold"] > 0, row
    assert data["per_mb"]["added_ttfb_ms_per_mb"] is not None
    assert data["per_mb"]["session_added_ttfb_ms_per_mb"] is not None
    assert rows[-1]["steps_ms"]["whole ingress, the session's next turn"] > 0
