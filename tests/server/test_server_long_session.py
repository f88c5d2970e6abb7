"""A long Claude Code session through a running proxy: with its session header each turn
reuses what the turn before it parsed and wrote (server/pipeline/previous_turn.py), and the upstream
gets, byte for byte, what it gets for the same bodies sent as new sessions; a subagent's
conversation under the same session id, and a broken turn, are served as fresh ones."""

from __future__ import annotations

import http.client
import re
import time
from collections.abc import Iterator

import orjson
import pytest

from hydra_proxy.server.pipeline.previous_turn import MIN_BYTES
from support.implementations import NATIVE_MISSING, _native
from support.long_sessions import session
from support.raw_upstream import RawUpstream, chat_stream
from support.servers import ProxyServer

pytestmark = pytest.mark.skipif(_native is None, reason=NATIVE_MISSING)


@pytest.fixture(scope="module")
def upstream() -> Iterator[RawUpstream]:
    with RawUpstream(reply=lambda head, body: chat_stream(3)) as server:
        yield server


@pytest.fixture(scope="module")
def proxy(upstream: RawUpstream) -> Iterator[ProxyServer]:
    env = {"HYDRA_USAGE_LEDGER": "off"}
    with ProxyServer(upstream.url + "/v1", "--log-level", "info", env=env) as server:
        yield server


def send(proxy: ProxyServer, body: bytes, session_id: str) -> tuple[int, bytes]:
    status, data, _ = exchange(proxy, body, session_id)
    return status, data


def exchange(proxy: ProxyServer, body: bytes, session_id: str) -> tuple[int, bytes, str]:
    """The reply's status, body and request id."""
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    headers = {"content-type": "application/json", "x-claude-code-session-id": session_id}
    conn.request("POST", "/v1/messages", body, headers)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data, response.getheader("x-request-id") or ""


def logged_reuse(proxy: ProxyServer, request_ids: list[str]) -> list[int | None]:
    """Each request's `messages_reused` count from its access-log line, found by its id (a
    line is written just after its reply, so lines of requests in a row may land in
    another order); None for a line without one."""
    deadline = time.monotonic() + 10
    while True:
        lines = {found[1]: found[2] for found in re.finditer(r"id=(\S+)([^\n]*)", proxy.log_text())}
        if all(rid in lines for rid in request_ids) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    counts: list[int | None] = []
    for rid in request_ids:
        found = re.search(r"messages_reused=(\d+)", lines.get(rid, ""))
        counts.append(int(found[1]) if found else None)
    return counts


def upstream_bodies(upstream: RawUpstream, since: int) -> list[bytes]:
    return [r.body for r in upstream.requests[since:]]


def _second_is_kept_first_is_not(start: int) -> bool:
    first, second = session(2, start=start)
    return len(first) < MIN_BYTES <= len(second)


def test_a_sessions_turns_reach_the_upstream_as_new_sessions_would(
    proxy: ProxyServer, upstream: RawUpstream
) -> None:
    # The sources read are this repository's files, whose sizes change as it does: the main
    # conversation starts where its first body is under MIN_BYTES and its second is not, the
    # subagent reads other sources, from one whose first body a session keeps.
    first = next(s for s in range(200) if _second_is_kept_first_is_not(s))
    main = list(session(6, start=first))
    start = next(
        s for s in range(first + 6, first + 200) if len(next(session(1, start=s))) >= MIN_BYTES
    )
    subagent = list(session(3, start=start))
    ordered = [main[0], main[1], subagent[0], main[2], subagent[1], main[3], subagent[2],
               main[4], main[5]]  # fmt: skip
    before = len(upstream.requests)
    ids = []
    for body in ordered:
        status, reply, rid = exchange(proxy, body, "one-session")
        assert status == 200 and b"event: message_stop" in reply
        ids.append(rid)
    reused = upstream_bodies(upstream, before)
    counts = logged_reuse(proxy, ids)
    before = len(upstream.requests)
    fresh_ids = []
    for i, body in enumerate(ordered):
        status, _, rid = exchange(proxy, body, f"fresh-{i}")
        assert status == 200
        fresh_ids.append(rid)
    fresh = upstream_bodies(upstream, before)
    assert len(reused) == len(fresh) == len(ordered)
    for i, (a, b) in enumerate(zip(reused, fresh, strict=True)):
        # The one difference: the session named as the upstream's prompt-cache key.
        key = b'"prompt_cache_key":"%s"'
        assert key % b"one-session" in a
        assert a == b.replace(key % f"fresh-{i}".encode(), key % b"one-session"), f"request {i}"
    assert orjson.loads(reused[-1])["messages"][-1]["role"] == "tool"
    # Each turn reused all the messages of its conversation's turn before but the last
    # (its breakpoint moved on); the subagent's first turn, the four it began with. The
    # first body is under MIN_BYTES: parsed whole, and not kept.
    assert len(main[0]) < MIN_BYTES <= len(main[1])
    # In the order sent: main 0 and 1 (main 0 was not kept, so main 1 is parsed whole),
    # subagent 0 (the four messages it began with), main 2, subagent 1, main 3, subagent 2,
    # main 4, main 5.
    assert counts == [None, None, 4, 7, 5, 9, 7, 11, 13]
    assert logged_reuse(proxy, fresh_ids) == [None] * len(ordered)  # new sessions reuse nothing


def test_a_broken_turn_is_refused_and_the_session_goes_on(proxy: ProxyServer) -> None:
    bodies = list(session(3, start=80))
    assert send(proxy, bodies[0], "broken")[0] == 200
    broken = bodies[1][: len(bodies[1]) - 40] + b"\xff" + bodies[1][len(bodies[1]) - 39 :]
    status, reply = send(proxy, broken, "broken")
    assert status == 400
    error = orjson.loads(reply)["error"]
    assert error["type"] == "invalid_request_error"
    assert "not valid UTF-8" in error["message"] or "not valid JSON" in error["message"]
    assert send(proxy, bodies[2], "broken")[0] == 200
