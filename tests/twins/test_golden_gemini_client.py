"""Both transducers reproduce the recorded Gemini-client golden streams byte for byte
(tests/golden_gemini_client/: Gemini out from Chat, Anthropic and Responses upstreams),
whole and split at seeded random offsets."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from gemini_client_golden import DIRECTIONS, GOLDEN, cases, run
from golden_cases import load_input

CASES: list[dict[str, Any]] = json.loads((GOLDEN / "cases.json").read_text())


def test_the_recording_covers_every_case() -> None:
    recorded = {(c["direction"], c["name"]) for c in CASES}
    assert recorded == {(c["direction"], c["name"]) for c in cases()}
    assert {c["direction"] for c in CASES} == set(DIRECTIONS)
    assert len(recorded) == len(CASES)


def test_the_outputs_are_gemini_chunks_or_errors() -> None:
    for case in CASES:
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
    for _ in range(2):
        if len(data) < 2:
            break
        cuts = rng.sample(range(1, len(data)), k=min(len(data) - 1, rng.randint(1, 30)))
        if "max_event_bytes" in case["options"]:
            other = "python" if impl == "native" else "native"
            assert run(case, impl, cuts) == run(case, other, cuts), f"split at {sorted(cuts)}"
            continue
        assert run(case, impl, cuts) == (expected, case["state"]), f"split at {sorted(cuts)}"
