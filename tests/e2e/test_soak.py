"""The soak (benches/soak.py) in CI: 500 concurrent streams through one proxy worker, on
both transducer implementations, every client stream byte-compared against the expected
translation of its recorded upstream stream (Chat, Anthropic, Gemini, Responses; tool calls
and thinking). The RSS and CPU numbers are printed, never asserted (benches/results/soak.md
has a run's)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from support.implementations import IMPLEMENTATIONS, NATIVE_MISSING, _native

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "benches"))

import soak

STREAMS = 500


def test_the_normalisation_numbers_minted_values_and_touches_nothing_else() -> None:
    a = b'{"id":"msg_hydra' + b"a" * 24 + b'","created":1700000000,"x":"hydra' + b"b" * 24 + b'"}'
    b = b'{"id":"msg_hydra' + b"c" * 24 + b'","created":1800000000,"x":"hydra' + b"d" * 24 + b'"}'
    assert (
        soak.normalise(a)
        == soak.normalise(b)
        == b'{"id":"msg_hydra<1>","created":<t>,"x":"hydra<2>"}'
    )
    # An id reused where the expected stream has a fresh one is a difference ...
    same = b'{"id":"msg_hydra' + b"a" * 24 + b'","x":"hydra' + b"a" * 24 + b'"}'
    fresh = b'{"id":"msg_hydra' + b"a" * 24 + b'","x":"hydra' + b"b" * 24 + b'"}'
    assert soak.normalise(same) != soak.normalise(fresh)
    # ... and so is any other byte.
    assert soak.normalise(a.replace(b'"x"', b'"y"')) != soak.normalise(a)


def test_every_case_expects_a_real_translation() -> None:
    """Each case's expected bytes are its client's protocol, carrying the fixture's content
    (a broken expectation would make the soak compare against nothing)."""
    for case in soak.CASES:
        upstream = b"".join(soak.upstream_events(case))
        assert upstream, case
    kinds = {(c.client, c.upstream) for c in soak.CASES}
    assert {"chat", "anthropic", "gemini", "responses"} <= {u for _, u in kinds}
    assert {"anthropic", "chat", "responses"} == {c for c, _ in kinds}


@pytest.mark.e2e
@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_500_concurrent_streams_through_one_worker_are_each_byte_exact(
    impl: str, tmp_path: Path
) -> None:
    if impl == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    result = asyncio.run(soak.soak(STREAMS, impl, pace_ms=3.0, waves=1, workdir=tmp_path))
    print(soak.markdown([result]))
    assert result["mismatches"] == 0, result["first_mismatches"]
    assert result["compared"] == STREAMS + len(soak.CASES)
    # Every stream was in flight at once (the upstream holds the wave until all arrived).
    assert result["concurrent"] == STREAMS
    per_case = [len(soak.upstream_events(c)) for c in soak.CASES]
    assert result["events"] == sum(per_case[i % len(per_case)] for i in range(STREAMS))
