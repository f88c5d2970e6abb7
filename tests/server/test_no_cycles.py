"""A finished model request leaves no reference cycle behind: every object it made (the
exchange, the transducer, the chunks sent, the upstream response) is freed when the request
ends, not at the garbage collector's next pass. A cycle per request would hold each
request's objects, its sent chunks included, until a collection, and make the collector run
(and walk them) every few requests.

Every model entry, streamed and not, on an upstream of every kind (translated and passed
through), on both transducer implementations, in a worker served by granian.
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest

from hydra_proxy.server.app import ModelEntry
from support.entries import ENTRIES
from support.fault_rig import Rig, rig
from support.implementations import IMPLEMENTATIONS, NATIVE_MISSING
from support.wellformed import call

UPSTREAM_PREFIXES = ("chat", "anth", "resp", "gem")
# Each request three times: a few objects a worker makes once in a while are not one cycle
# per request.
REPEATS = 3


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def proxy(request: pytest.FixtureRequest) -> Iterator[Rig]:
    if request.param == "native" and NATIVE_MISSING:
        pytest.skip(NATIVE_MISSING)
    with rig(request.param) as r:
        yield r


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_finished_request_leaves_no_reference_cycle(proxy: Rig, entry: ModelEntry) -> None:
    proxy.proxy.collect()  # what the warm-up left
    requests = 0
    for prefix in UPSTREAM_PREFIXES:
        for stream in (True, False) if entry.streams is None else (entry.streams,):
            path, body = entry.request(f"{prefix}-ok", stream=stream)
            for _ in range(REPEATS):
                got = call(proxy.port, path, orjson.dumps(body))
                assert got.status == 200, (path, prefix, stream, got.body[:300])
                requests += 1
    garbage = proxy.proxy.collect()
    # Fewer objects than requests: not one cycle (two objects at least) per request.
    assert sum(garbage.values()) < requests, str(garbage)
