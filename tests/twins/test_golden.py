"""Both transducers reproduce the recorded golden streams byte for byte.

tests/golden/cases.json lists every case (direction, input, options, call script) with its
recorded end state; tests/golden/outputs/ holds the recorded bytes (tests/golden/record.py).
Each case is replayed on both implementations, whole and split at seeded random offsets.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from golden_cases import GOLDEN, load_input, run

CASES: list[dict[str, Any]] = json.loads((GOLDEN / "cases.json").read_text())


def test_cases_cover_every_input() -> None:
    used = {c["input"] for c in CASES}
    stored = {
        f"input:{p.relative_to(GOLDEN / 'inputs')}" for p in (GOLDEN / "inputs").glob("*/*.sse")
    }
    assert stored <= used
    assert {c["direction"] for c in CASES} == {
        "messages_via_chat",
        "chat_via_messages",
        "responses_via_chat",
        "responses_via_messages",
        "responses_via_gemini",
        "messages_via_responses",
        "chat_via_responses",
        "messages_via_gemini",
        "chat_via_gemini",
    }
    assert len({(c["direction"], c["name"]) for c in CASES}) == len(CASES)


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
