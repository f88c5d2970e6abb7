"""Every way an upstream stream fails is told as what happened, through every composition.

A cut inside an event, a cut at an event boundary, an upstream error, a stall past the idle
timeout, bytes that are not an event stream, and an event past the bound: each ends the
client's stream with its own message, in a well-formed stream of the client's protocol that
never looks complete (tests/support/anthropic_grammar.py, chat_grammar.py, responses_grammar.py).
The bodies are tests/support/failure_streams.py's; tests/golden/ pins the bytes.
"""

from __future__ import annotations

import http.client
from collections.abc import Iterator

import orjson
import pytest

from hydra_proxy.mock import MockServer
from hydra_proxy.responses.errors import MSG_UPSTREAM_FAILED
from hydra_proxy.server.pipeline.relay import MSG_IDLE_TIMEOUT
from hydra_proxy.stream.messages import (
    MSG_CUT_INSIDE_EVENT,
    MSG_CUT_OFF,
    MSG_EVENT_TOO_LARGE,
    MSG_NOT_EVENT_STREAM,
)
from support.compositions import COMPOSITIONS, client_error, make
from support.failure_streams import failure_inputs, whole_stream
from support.implementations import feed_all
from support.servers import ProxyServer

FAILURES = failure_inputs()

# failure -> the message the client is told (None: the stream is not a failure)
MESSAGES: dict[str, str | None] = {
    "cut-at-event-boundary": MSG_CUT_OFF,
    "cut-inside-event": MSG_CUT_INSIDE_EVENT,
    "cut-inside-event-line": MSG_CUT_INSIDE_EVENT,
    "cut-before-blank-line": MSG_CUT_INSIDE_EVENT,
    "cut-inside-done": MSG_CUT_INSIDE_EVENT,
    "garbage-html": MSG_NOT_EVENT_STREAM,
    "garbage-binary": MSG_NOT_EVENT_STREAM,
    "html-only": MSG_NOT_EVENT_STREAM,
    "error-event-not-json": "upstream exploded",
    "error-event-empty": MSG_UPSTREAM_FAILED,
    "large-event": None,
}
# upstream -> its error event's (Anthropic error type, message)
UPSTREAM_ERRORS = {
    "chat": ("overloaded_error", "busy"),
    "anthropic": ("overloaded_error", "Overloaded"),
    "responses": ("rate_limit_error", "slow down"),
    "gemini": ("overloaded_error", "The model is overloaded."),
}
CASES = [
    (composition, failure)
    for composition, (upstream, *_) in COMPOSITIONS.items()
    for failure in FAILURES[upstream]
]


@pytest.mark.parametrize(("composition", "failure"), CASES)
def test_each_failure_is_told_as_what_happened(impl: str, composition: str, failure: str) -> None:
    upstream = COMPOSITIONS[composition][0]
    body = FAILURES[upstream][failure]
    t = make(composition, impl)
    out = feed_all(t, body)
    if failure == "error-event":
        expected: tuple[str, str] | None = UPSTREAM_ERRORS[upstream]
    else:
        message = MESSAGES[failure]
        expected = None if message is None else ("api_error", message)
    assert t.finished
    assert t.error == expected
    assert t.complete == (expected is None)
    told = client_error(composition, out)
    assert (told is None) == (expected is None)
    if told is not None and expected is not None:
        assert told[1] == expected[1]
    # Byte by byte, the same (a cut or garbage is found wherever the chunks end).
    one_by_one = make(composition, impl)
    split = [one_by_one.feed(body[i : i + 1]) for i in range(len(body))]
    assert b"".join(split) + one_by_one.finish() == out
    assert one_by_one.error == expected


@pytest.mark.parametrize("composition", sorted(COMPOSITIONS))
def test_a_stall_is_told_with_the_idle_timeout(impl: str, composition: str) -> None:
    upstream = COMPOSITIONS[composition][0]
    t = make(composition, impl)
    message = MSG_IDLE_TIMEOUT.replace("{}", "30")
    out = t.feed(FAILURES[upstream]["cut-at-event-boundary"]) + t.ping()
    out += t.fail("timeout_error", message)
    assert t.finish() == b"" and t.ping() == b""  # nothing after the end
    assert t.error == ("timeout_error", message) and not t.complete
    assert client_error(composition, out) is not None
    assert client_error(composition, out)[1] == message  # type: ignore[index]


@pytest.mark.parametrize("composition", sorted(COMPOSITIONS))
def test_an_event_past_the_bound_names_it(impl: str, composition: str) -> None:
    """A 5 MB event: within the default bound (16 MiB) it is translated whole; past a
    4 MiB bound the stream ends with the bound named, and nothing of the event is sent."""
    upstream = COMPOSITIONS[composition][0]
    text = "0123456789abcdef" * (5_000_000 // 16)
    body = whole_stream(upstream, text)
    t = make(composition, impl)
    out = feed_all(t, body, list(range(65536, len(body), 65536)))
    assert t.complete and t.error is None
    assert client_error(composition, out) is None
    assert text.encode() in out
    bound = 4 << 20
    t = make(composition, impl, max_event_bytes=bound)
    out = feed_all(t, body, list(range(65536, len(body), 65536)))
    message = MSG_EVENT_TOO_LARGE.replace("{}", str(bound))
    assert message == "an upstream event exceeds the max_event_bytes bound of 4194304 bytes"
    assert t.error == ("api_error", message) and not t.complete
    told = client_error(composition, out)
    assert told is not None and told[1] == message
    assert b"0123456789abcdef" * 8 not in out


@pytest.fixture
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def test_the_server_ends_a_stalled_stream_naming_the_idle_timeout(mock: MockServer) -> None:
    """Through the server: an Anthropic client on a Chat upstream that goes silent."""
    env = {"HYDRA_IDLE_TIMEOUT": "1", "HYDRA_PING_INTERVAL": "0.3"}
    with ProxyServer(mock.url + "/v1", env=env) as proxy:
        mock.script([{"text": "a b c d", "chunk_size": 2, "delay_ms": 3000}])
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
        ask = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 100,
            "stream": True,
            "messages": [{"role": "user", "content": "hi"}],
        }
        conn.request(
            "POST", "/v1/messages", orjson.dumps(ask), {"content-type": "application/json"}
        )
        response = conn.getresponse()
        assert response.status == 200
        out = response.read()
    rebuilt = client_error("anthropic_via_chat", out)
    assert rebuilt == ("timeout_error", MSG_IDLE_TIMEOUT.replace("{}", "1"))
