"""Fault injection, client side: clients that hang up mid-stream, read slowly, upload
slowly, or send bad bodies and bad keys, for Anthropic Messages, Chat and Responses
clients on both transducer implementations. Each gets a well-formed reply or a well-formed
error in its own protocol, and nothing is left behind in the proxy afterwards (file
descriptors, asyncio tasks, upstream connections: tests/support/leaks.py).
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import anthropic
import openai
import orjson
import pytest

from support.fault_rig import MAX_BODY_BYTES, PROXY_KEY, Rig, rig
from support.faulty_clients import hang_up_after, read_slowly, slow_loris, wire
from support.faulty_upstream import FLOOD_BYTES, UPSTREAM_KEY
from support.implementations import IMPLEMENTATIONS, NATIVE_MISSING
from support.wellformed import PATHS, Client, Received, call, judge, request_body

# Small limits, so the cases run quickly (server/checks/limits.py).
BODY_TIMEOUT = 1.0
LIMITS_ENV = {"HYDRA_BODY_TIMEOUT": str(BODY_TIMEOUT), "HYDRA_MAX_JSON_DEPTH": "64"}
AUTH = {"x-api-key": PROXY_KEY}
CLIENTS: list[Client] = ["anthropic", "chat", "responses"]
# Where each client protocol's model goes: the other protocol (a translation).
UPSTREAM_FOR = {"anthropic": "chat", "chat": "anth", "responses": "chat"}


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def faults(request: pytest.FixtureRequest) -> Iterator[Rig]:
    if request.param == "native" and NATIVE_MISSING:
        pytest.skip(NATIVE_MISSING)
    with rig(request.param, proxy_keys=True, env=LIMITS_ENV) as r:
        yield r


def model_for(client: Client, scenario: str = "ok") -> str:
    return f"{UPSTREAM_FOR[client]}-{scenario}"


# -- bad bodies --------------------------------------------------------------------------


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def bad_bodies(client: Client) -> dict[str, bytes]:
    model = model_for(client).encode()
    good = orjson.loads(request_body(client, model.decode(), stream=False))
    return {
        "truncated_json": request_body(client, model.decode(), stream=False)[:-7],
        "not_json": b"model=gpt-4o&messages=hi",
        "array": b'[{"model": "' + model + b'"}]',
        "string": b'"hello"',
        "null": b"null",
        "empty": b"",
        "invalid_utf8": request_body(client, model.decode(), stream=False).replace(
            b'"hi"', b'"h\xff\xfei"'
        ),
        "lone_surrogate": request_body(client, model.decode(), stream=False).replace(
            b'"hi"', b'"\\ud800"'
        ),
        "nested_5000": orjson.dumps({**good, "metadata": None})[:-1]
        + b',"x":'
        + _nested(5000)
        + b"}",
        "model_not_string": orjson.dumps({**good, "model": 42}),
        "missing_model": orjson.dumps({k: v for k, v in good.items() if k != "model"}),
        **(
            {
                "input_not_list_or_string": orjson.dumps({**good, "input": 7}),
                "stream_not_bool": orjson.dumps({**good, "stream": "yes"}),
            }
            if client == "responses"
            else {
                "messages_not_list": orjson.dumps({**good, "messages": "hi"}),
                "message_not_object": orjson.dumps({**good, "messages": ["hi"]}),
                "max_tokens_not_int": orjson.dumps({**good, "max_tokens": "many"}),
                "content_wrong_type": orjson.dumps(
                    {**good, "messages": [{"role": "user", "content": 5}]}
                ),
                "role_unknown": orjson.dumps(
                    {**good, "messages": [{"role": "wizard", "content": "hi"}]}
                ),
                "stream_not_bool": orjson.dumps({**good, "stream": "yes"}),
            }
        ),
    }


BAD_BODY_NAMES = sorted(set(bad_bodies("anthropic")) | set(bad_bodies("responses")))


def test_bad_bodies_get_400_in_the_clients_protocol(faults: Rig) -> None:
    """Every malformed body, for every client protocol, at once: a well-formed 400
    invalid_request_error, nothing sent upstream, nothing leaked."""
    cases = [(c, name, body) for c in CLIENTS for name, body in bad_bodies(c).items()]
    before = faults.leaks.settle()
    sent_before = len(faults.upstream.requests)

    def one(case: tuple[Client, str, bytes]) -> str | None:
        client, name, body = case
        try:
            got = call(faults.port, PATHS[client], body, AUTH)
            outcome = judge(client, got, secrets=(UPSTREAM_KEY, PROXY_KEY))
            assert outcome.status == 400, outcome
            assert outcome.error_type == "invalid_request_error", outcome
        except AssertionError as exc:
            return f"{client} {name}: {exc}"
        return None

    with ThreadPoolExecutor(16) as pool:
        failures = [f for f in pool.map(one, cases) if f is not None]
    faults.leaks.assert_back_to(before)
    assert not failures, "\n".join(failures)
    assert len(faults.upstream.requests) == sent_before, "a bad body went upstream"


@pytest.mark.parametrize("client", CLIENTS)
def test_oversized_body_is_413(faults: Rig, client: Client) -> None:
    before = faults.leaks.settle()
    padding = "x" * (MAX_BODY_BYTES + 1024)
    body = request_body(client, model_for(client), stream=False, text=padding)
    got = call(faults.port, PATHS[client], body, AUTH)
    outcome = judge(client, got, secrets=(UPSTREAM_KEY,))
    assert outcome.status == 413, outcome
    faults.leaks.assert_back_to(before)


@pytest.mark.parametrize(
    "client",
    [
        "anthropic",
        "chat",
    ],
)
def test_oversized_body_error_type(faults: Rig, client: Client) -> None:
    padding = "x" * (MAX_BODY_BYTES + 1024)
    body = request_body(client, model_for(client), stream=False, text=padding)
    got = call(faults.port, PATHS[client], body, AUTH)
    error = orjson.loads(got.body)["error"]
    if client == "anthropic":
        assert error["type"] == "request_too_large"
    else:
        assert (error["type"], error["code"]) == ("invalid_request_error", "request_too_large")


@pytest.mark.parametrize(
    "case",
    [
        "wrong_content_type",
        "nested_200",
    ],
)
@pytest.mark.parametrize("client", ["anthropic", "chat"])
def test_limits_waiting_on_e_limits(faults: Rig, client: Client, case: str) -> None:
    before = faults.leaks.settle()
    body = request_body(client, model_for(client), stream=False)
    headers = dict(AUTH)
    if case == "wrong_content_type":
        headers["content-type"] = "text/plain"
    else:
        body = body[:-1] + b',"metadata":{"x":' + _nested(200) + b"}}"
    got = call(faults.port, PATHS[client], body, headers)
    outcome = judge(client, got, secrets=(UPSTREAM_KEY,))
    faults.leaks.assert_back_to(before)
    assert outcome.status == 400 and outcome.error_type == "invalid_request_error", outcome


# -- keys ----------------------------------------------------------------------------------


def test_missing_and_wrong_keys_are_401_for_the_sdks(faults: Rig) -> None:
    """The official SDKs raise their authentication error; the presented key is never
    echoed; nothing goes upstream. (The SDK clients are closed before the count: their
    kept-alive connections are the client's, not a leak.)"""
    before = faults.leaks.settle()
    sent_before = len(faults.upstream.requests)
    wrong = "sk-wrong-proxy-key-1234567890"
    url = faults.proxy.url
    with (
        anthropic.Anthropic(base_url=url, api_key=wrong, max_retries=0) as ant,
        pytest.raises(anthropic.AuthenticationError) as caught,
    ):
        ant.messages.create(
            model="chat-ok", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.status_code == 401 and wrong not in caught.value.response.text
    assert caught.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]
    with openai.OpenAI(base_url=url + "/v1", api_key=wrong, max_retries=0) as oai:
        with pytest.raises(openai.AuthenticationError) as caught_oai:
            oai.chat.completions.create(
                model="anth-ok", messages=[{"role": "user", "content": "hi"}], stream=True
            )
        assert caught_oai.value.status_code == 401
        assert wrong not in caught_oai.value.response.text
        with pytest.raises(openai.AuthenticationError):
            oai.responses.create(model="chat-ok", input="hi")
    for client in CLIENTS:  # no key at all
        got = call(faults.port, PATHS[client], request_body(client, model_for(client), stream=True))
        outcome = judge(client, got)
        assert (outcome.status, outcome.error_type) == (401, "authentication_error"), outcome
    # the right key as a bearer token (the OpenAI SDK's way) passes
    with openai.OpenAI(base_url=url + "/v1", api_key=PROXY_KEY, max_retries=0) as ok:
        reply = ok.chat.completions.create(
            model="anth-ok", messages=[{"role": "user", "content": "hi"}]
        )
    assert reply.choices[0].message.content
    faults.leaks.assert_back_to(before)
    assert len(faults.upstream.requests) == sent_before + 1


# -- clients that go away, or read slowly ------------------------------------------------


@pytest.mark.parametrize(
    ("client", "prefix", "marker"),
    [
        ("anthropic", "chat", b"text_delta"),
        ("chat", "anth", b'"content":"Hello'),
        ("responses", "chat", b"output_text.delta"),
        ("anthropic", "anth", b"text_delta"),  # passthrough (forward)
    ],
)
def test_disconnect_mid_stream_cancels_the_upstream_at_once(
    faults: Rig, client: Client, prefix: str, marker: bytes
) -> None:
    """The upstream stream has 4 s left when the client hangs up: its connection must be
    closed by the proxy well before that (within 2 s), then nothing else is held."""
    before = faults.leaks.settle()
    model = f"{prefix}-slow.{faults.impl}"
    body = request_body(client, model, stream=True)
    seen = hang_up_after(faults.port, wire(PATHS[client], body, AUTH), marker)
    assert marker in seen
    faults.leaks.assert_upstream_released(timeout=2.0)
    faults.leaks.assert_back_to(before)


@pytest.mark.parametrize(
    ("client", "prefix", "scenario"),
    [
        ("anthropic", "chat", "slow"),  # the reply's body trickles for 4 s
        ("chat", "anth", "slow"),
        ("anthropic", "anth", "slow"),  # passthrough
        ("anthropic", "chat", "stall_head"),  # no head yet (first_byte_timeout is 0.5 s)
    ],
)
def test_disconnect_while_waiting_for_a_whole_reply(
    faults: Rig, client: Client, prefix: str, scenario: str
) -> None:
    """A client of a non-streamed request that hangs up while the upstream still works:
    the upstream request is dropped at once, not read to its end."""
    before = faults.leaks.settle()
    body = request_body(client, f"{prefix}-{scenario}.{faults.impl}", stream=False)
    hang_up_after(faults.port, wire(PATHS[client], body, AUTH), b"", wait=0.25)
    faults.leaks.assert_upstream_released(timeout=2.0)
    faults.leaks.assert_back_to(before)


def test_sdk_stream_closed_early(faults: Rig) -> None:
    """An SDK user who stops iterating (closing the stream) frees everything too."""
    before = faults.leaks.settle()
    url = faults.proxy.url
    ant = anthropic.Anthropic(base_url=url, api_key=PROXY_KEY, max_retries=0)
    with (
        ant,
        ant.messages.stream(
            model="chat-slow.sdk", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        ) as stream,
    ):
        for event in stream:
            if event.type == "content_block_delta":
                break
    with openai.OpenAI(base_url=url + "/v1", api_key=PROXY_KEY, max_retries=0) as oai:
        chunks = oai.chat.completions.create(
            model="anth-slow.sdk", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        for chunk in chunks:
            if chunk.choices and chunk.choices[0].delta.content:
                break
        chunks.close()
    faults.leaks.assert_upstream_released(timeout=2.0)
    faults.leaks.assert_back_to(before)


def test_slow_reader_is_bounded(faults: Rig) -> None:
    """Clients (Anthropic and Chat, at once) reading 20 KB/s of a 32 MB reply: the proxy
    takes no more of the upstream than it can hand on (TCP backpressure, or it ends the
    stream), so its memory does not grow by the reply. Measured at the upstream: what the
    proxy had read of the flood when the client had read for 2.5 s (socket buffers hold a
    few MB, not 16)."""
    before = faults.leaks.settle()

    def one(client: Client) -> str | None:
        model = f"{UPSTREAM_FOR[client]}-flood.{faults.impl}"
        body = request_body(client, model, stream=True)
        read = read_slowly(
            faults.port, wire(PATHS[client], body, AUTH), seconds=2.5, bytes_per_second=20_000
        )
        taken = faults.upstream.flooded.get(model, 0)
        if read == 0 or taken >= FLOOD_BYTES // 2:
            return f"{client}: the proxy read {taken} bytes for a client that took {read}"
        return None

    with ThreadPoolExecutor(2) as pool:
        failures = [f for f in pool.map(one, ["anthropic", "chat"]) if f is not None]
    faults.leaks.assert_back_to(before, timeout=5.0)
    assert not failures, "\n".join(failures)


# -- slow uploads --------------------------------------------------------------------------


def test_slow_loris_upload_times_out(faults: Rig) -> None:
    """Headers, then a byte every 0.1 s (Anthropic and Chat clients at once): past
    body_timeout each gets a well-formed 408 (OpenAI code request_timeout) instead of
    holding the worker."""
    before = faults.leaks.settle()

    def one(client: Client) -> str | None:
        body = request_body(client, model_for(client), stream=False)
        got = slow_loris(
            faults.port, PATHS[client], body, AUTH, interval=0.1, wait=BODY_TIMEOUT + 1.5
        )
        if got is None:
            return f"{client}: no answer, the upload is still being waited for"
        outcome = judge(client, got, secrets=(UPSTREAM_KEY,))
        if outcome.status != 408:
            return f"{client}: {outcome}"
        if client == "chat" and orjson.loads(got.body)["error"]["code"] != "request_timeout":
            return f"{client}: {got.body!r}"
        return None

    with ThreadPoolExecutor(2) as pool:
        failures = [f for f in pool.map(one, ["anthropic", "chat"]) if f is not None]
    faults.leaks.assert_back_to(before, timeout=3.0)
    assert not failures, "\n".join(failures)


def test_slow_upload_within_the_limits_is_served(faults: Rig) -> None:
    """A slow but steady upload that ends in time is a normal request (the guard against
    slow loris must not cut honest slow clients): a byte every 2 ms."""
    before = faults.leaks.settle()
    body = request_body("anthropic", "chat-ok.slowupload", stream=False)
    got = slow_loris(faults.port, "/v1/messages", body, AUTH, interval=0.002, wait=10)
    assert got is not None
    assert got.status == 200, got
    faults.leaks.assert_back_to(before)


# -- shutdown ------------------------------------------------------------------------------


def test_sigterm_ends_running_streams_well_formed(impl: str) -> None:
    """Streams (Anthropic and Chat clients) with 4 s to go when the proxy gets SIGTERM,
    with 1 s of grace: each ends well-formed, a whole reply or an error event, never a
    cut transfer."""
    with rig(impl, proxy_keys=True, shutdown_grace=1.0) as r:
        started = threading.Barrier(3, timeout=10)

        def one(client: Client) -> Received:
            body = request_body(client, f"{UPSTREAM_FOR[client]}-slow.shutdown", stream=True)
            conn = http.client.HTTPConnection("127.0.0.1", r.port, timeout=15)
            conn.request("POST", PATHS[client], body, {"content-type": "application/json", **AUTH})
            response = conn.getresponse()
            head = {k.lower(): v for k, v in response.getheaders()}
            data = response.read1(65536)  # the stream has begun
            started.wait()
            try:
                data += response.read()
                broken = False
            except (http.client.IncompleteRead, OSError) as exc:
                data += getattr(exc, "partial", b"")
                broken = True
            conn.close()
            return Received(response.status, head, data, broken)

        with ThreadPoolExecutor(2) as pool:
            futures = [pool.submit(one, c) for c in ("anthropic", "chat")]
            started.wait()
            r.proxy.terminate()
            results = [f.result() for f in futures]
        for client, got in zip(("anthropic", "chat"), results, strict=True):
            assert not got.broken, f"{client}: the stream was cut"
            outcome = judge(client, got, secrets=(UPSTREAM_KEY,))
            assert outcome.complete or outcome.error_type is not None, outcome
