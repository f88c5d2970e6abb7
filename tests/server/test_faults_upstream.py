"""Fault injection, upstream side: every misbehaviour of tests/support/faulty_upstream.py, through
the proxy (granian, both transducer implementations), for Anthropic Messages, Chat and
Responses clients. Each case must end in a well-formed reply or a well-formed error in the
client's protocol (never a cut reply that looks whole), and leave nothing behind: no file
descriptor, asyncio task or upstream connection (counted before and after, tests/support/leaks.py).

Exact error types and messages belong to the error-mapping and stream-failure tests; here
only the class of an HTTP error (4xx or 5xx) and the well-formedness of every error.
"""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson
import pytest

from support.fault_rig import Rig, rig
from support.faulty_upstream import KINDS, UPSTREAM_KEY, _data_payloads
from support.implementations import IMPLEMENTATIONS, NATIVE_MISSING
from support.wellformed import PATHS, Client, call, judge, request_body


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def faults(request: pytest.FixtureRequest) -> Iterator[Rig]:
    if request.param == "native" and NATIVE_MISSING:
        pytest.skip(NATIVE_MISSING)
    with rig(request.param) as r:
        yield r


def _expected_text(kind: str) -> str:
    """The text a client must rebuild from the recording the upstream plays."""
    payloads = _data_payloads(KINDS[kind].stream)
    if kind == "chat":
        return "".join(
            p["choices"][0]["delta"].get("content") or "" for p in payloads if p.get("choices")
        )
    if kind == "anthropic":
        return "".join(
            p["delta"]["text"]
            for p in payloads
            if p["type"] == "content_block_delta" and p["delta"]["type"] == "text_delta"
        )
    if kind == "responses":
        return "".join(p["delta"] for p in payloads if p["type"] == "response.output_text.delta")
    return "".join(
        part.get("text", "")
        for p in payloads
        for part in p["candidates"][0]["content"]["parts"]
        if not part.get("thought")
    )


def _expected_reply_text(kind: str) -> str:
    reply: Any = orjson.loads(KINDS[kind].reply)
    if kind == "chat":
        return str(reply["choices"][0]["message"]["content"])
    if kind == "anthropic":
        return "".join(b["text"] for b in reply["content"] if b["type"] == "text")
    if kind == "responses":
        return "".join(
            c["text"] for i in reply["output"] if i["type"] == "message" for c in i["content"]
        )
    return "".join(
        p.get("text", "")
        for p in reply["candidates"][0]["content"]["parts"]
        if not p.get("thought")
    )


KIND_OF = {"chat": "chat", "anth": "anthropic", "resp": "responses", "gem": "gemini"}


def check_outcome(r: Rig, client: Client, prefix: str, scenario: str, stream: bool) -> None:
    """Run one case and assert what its client must see (no leak count: see the callers)."""
    model = f"{prefix}-{scenario}.{r.impl}{int(stream)}{client}"
    got = call(r.port, PATHS[client], request_body(client, model, stream=stream))
    outcome = judge(client, got, secrets=(UPSTREAM_KEY,))
    passthrough = client == "anthropic" and prefix == "anth"
    if prefix in UNREACHABLE:
        # A closed port (refused at once: 502) or one that never accepts (past the
        # connect timeout, with the one retry): a well-formed 5xx error.
        assert not outcome.complete and outcome.status // 100 == 5, outcome
        if prefix == "refused":
            assert outcome.status == 502
        return
    kind = KIND_OF[prefix]
    if scenario in ("ok", "gzip", "r429"):
        assert outcome.complete, outcome
        expected = _expected_text(kind) if stream else _expected_reply_text(kind)
        assert outcome.text == expected
        if scenario == "r429":  # the retry-after: 0 was waited out, then the reply
            assert r.upstream.seen(model) == 2
    elif scenario.startswith("err") or scenario == "stall_error":
        status = int(scenario[3:6]) if scenario.startswith("err") else 503
        assert not outcome.complete and outcome.status >= 400, outcome
        assert outcome.status // 100 == status // 100, (status, outcome)
        if status == 429:
            assert outcome.status == 429 and "retry-after" in got.headers, got.headers
    else:
        # A cut, garbage, an oversized event or a stall: an error, never a whole reply.
        assert not outcome.complete, outcome
        assert outcome.error_type is not None
        if passthrough and stream and scenario != "stall_head":
            assert outcome.error_type == "broken", outcome  # the transfer itself is cut


# The two translated directions get every fault; Responses clients and the Gemini and
# Responses upstreams a cross-section; an Anthropic client on an Anthropic upstream is
# passed through (forward) and must show a cut as a broken transfer.
ROUTES = [("anthropic", "chat"), ("chat", "anth")]
CROSS = [
    ("responses", "chat"),
    ("responses", "anth"),
    ("anthropic", "gem"),
    ("chat", "resp"),
    ("anthropic", "anth"),
]
UNREACHABLE = ("refused", "hole")
COMMON = ["ok", "gzip", "r429", "drop_inside", "stall_body", "stall_head"]
ERRORS = [
    "err400_anthropic",
    "err401_openai",
    "err403_anthropic",
    "err404_openai",
    "err429_gemini",
    "err500_empty",
    "err503_text",
]


def scenarios(client: str, prefix: str) -> list[tuple[str, bool]]:
    full = (client, prefix) in ROUTES
    cases = [(s, True) for s in COMMON] + [(s, False) for s in COMMON]
    if full:
        cases += [(s, True) for s in ("drop_boundary", "garbage", "big_event", *ERRORS)]
        cases += [(s, False) for s in ("drop_boundary", "stall_error", "err401_openai")]
    else:
        cases += [("err500_empty", True)]
    return cases


def test_upstream_faults(faults: Rig) -> None:
    """Every scenario of every route at once (concurrent faults), each judged, then the
    leak count over all of them."""
    cases = [
        (client, prefix, scenario, stream)
        for client, prefix in ROUTES + CROSS
        for scenario, stream in scenarios(client, prefix)
    ]
    cases += [
        (c, p, "ok", s) for c in ("anthropic", "chat") for p in UNREACHABLE for s in (True, False)
    ]
    before = faults.leaks.settle()

    def one(case: tuple[Client, str, str, bool]) -> str | None:
        try:
            check_outcome(faults, *case)
        except (AssertionError, OSError, http.client.HTTPException) as exc:
            # A connection the proxy closed unanswered fails its case, named, like a wrong
            # answer: the other cases still run and the proxy's log is shown.
            client, prefix, scenario, stream = case
            what = f"{type(exc).__name__}: {exc}"
            return f"{client}<-{prefix}-{scenario} ({'stream' if stream else 'whole'}): {what}"
        return None

    with ThreadPoolExecutor(len(cases)) as pool:
        failures = [f for f in pool.map(one, cases) if f is not None]
    assert not failures, "\n".join(failures) + "\n-- the proxy's log:\n" + faults.proxy.log_tail()
    faults.leaks.assert_back_to(before)


def test_repeated_faults_do_not_grow_memory(faults: Rig) -> None:
    """RSS of the worker over 24 faulty streams (a 5 MB event, a cut inside an event,
    garbage; both directions) stays bounded: what a failed stream held is freed."""
    cases: list[tuple[Client, str]] = [
        (client, f"{prefix}-{scenario}")
        for client, prefix in ROUTES
        for scenario in ("big_event", "drop_inside", "garbage")
    ]

    def case() -> None:
        for client, model in cases:
            got = call(faults.port, PATHS[client], request_body(client, model, stream=True))
            assert not judge(client, got, secrets=(UPSTREAM_KEY,)).complete

    growth = faults.leaks.rss_growth_kib(case, repetitions=4)
    # 8 streams with a 5 MB event: a leak of the event alone would be 40 MB.
    assert growth < 16 * 1024, f"RSS grew {growth} KiB over 24 faulty streams"
