"""Both transducers reproduce the recorded golden streams byte for byte.

tests/golden/cases.json lists every case (direction, input, options, call script) with its
recorded end state; tests/golden/outputs/ holds the recorded bytes (tests/golden/record.py).
Each case is replayed on both implementations, whole and split at seeded random offsets.
"""

from __future__ import annotations

import importlib.util
import json
import random
from typing import Any

import pytest

from support.compositions import COMPOSITIONS
from support.golden_cases import GOLDEN, load_input, run

CASES: list[dict[str, Any]] = json.loads((GOLDEN / "cases.json").read_text())


def test_cases_cover_every_input() -> None:
    used = {c["input"] for c in CASES}
    stored = {
        f"input:{p.relative_to(GOLDEN / 'inputs')}" for p in (GOLDEN / "inputs").glob("*/*.sse")
    }
    assert stored <= used
    assert len({(c["direction"], c["name"]) for c in CASES}) == len(CASES)


def test_every_composition_has_goldens() -> None:
    assert {c["direction"] for c in CASES} == set(COMPOSITIONS)


def test_the_recording_is_every_case_the_recorder_makes() -> None:
    spec = importlib.util.spec_from_file_location("golden_record", GOLDEN / "record.py")
    assert spec is not None and spec.loader is not None
    record = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(record)
    recorded = [{k: v for k, v in c.items() if k != "state"} for c in CASES]
    assert recorded == record.cases()


def test_the_gemini_outputs_are_gemini_chunks_or_errors() -> None:
    for case in (c for c in CASES if COMPOSITIONS[c["direction"]][1] == "gemini"):
        out = (GOLDEN / "outputs" / case["direction"] / f"{case['name']}.sse").read_bytes()
        events = [e for e in out.split(b"\r\n\r\n") if e]
        for event in events:
            assert event.startswith(b"data: {")
            chunk = json.loads(event[6:])
            assert set(chunk) <= {
                "candidates",
                "usageMetadata",
                "modelVersion",
                "responseId",
                "error",
            }
        if case["state"]["complete"]:
            last = json.loads(events[-1][6:])
            assert last["candidates"][0]["finishReason"] and "usageMetadata" in last
        elif case["state"]["error"] is not None:
            assert set(json.loads(events[-1][6:])["error"]) == {"code", "message", "status"}


@pytest.mark.parametrize("case", CASES, ids=[f"{c['direction']}/{c['name']}" for c in CASES])
def test_golden(case: dict[str, Any], impl: str) -> None:
    expected = (GOLDEN / "outputs" / case["direction"] / f"{case['name']}.sse").read_bytes()
    output, state = run(case, impl)
    assert output == expected
    assert state == case["state"]
    data = load_input(case["input"])
    rng = random.Random(case["name"])
    for _ in range(3):
        if len(data) < 2:
            break
        cuts = rng.sample(range(1, len(data)), k=min(len(data) - 1, rng.randint(1, 30)))
        if "max_event_bytes" in case["options"]:
            # Whether a partial line or a whole event is found too long depends on the
            # split (sse.py); both implementations must still agree.
            other = "python" if impl == "native" else "native"
            assert run(case, impl, cuts) == run(case, other, cuts), f"split at {sorted(cuts)}"
            continue
        assert run(case, impl, cuts) == (expected, case["state"]), f"split at {sorted(cuts)}"
