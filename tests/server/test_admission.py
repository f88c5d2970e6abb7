"""Admission control end to end (server/checks/admission.py): a real proxy process
with a bound on concurrent upstream streams, in front of a paced mock upstream.

- 4x more agent sessions than the provider bound: every request served, in round-robin
  order across sessions (one session's burst does not delay the others);
- refusals past the queue-time and queue-depth bounds: 429 rate_limit_error with
  retry-after, as each official SDK sees it (Anthropic Messages, OpenAI Chat, Responses);
- slots given back on client disconnect (streaming and queued) and on upstream errors,
  counted: after each, the bound's whole capacity is still there;
- the per-client-key bound, and a full provider falling through its fallback chain.
"""

from __future__ import annotations

import asyncio
import http.client
import re
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anthropic
import openai
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from hydra_proxy.config import ConfigError, describe, load
from hydra_proxy.mock import MockServer
from hydra_proxy.server.checks.admission import (
    MAX_RETRY_AFTER,
    MIN_RETRY_AFTER,
    Admission,
    Gate,
    Refused,
    limits_of,
    session_of,
)
from support.claude_code import require_claude, run_claude
from support.servers import ProxyServer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

CC_SESSION = "x-claude-code-session-id"  # Claude Code (tests/fixtures/claude-code/)
CODEX_SESSION = "session-id"  # Codex (tests/fixtures/codex/request-exec-first-turn.headers.json)
BOUND = 2
STREAM_EVENTS = 100  # the mock's canned reply: this many deltas ...
EVENT_MS = 15  # ... this far apart: one stream holds its slot ~1.5-2 s


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer("--chunks", str(STREAM_EVENTS), "--delay-ms", str(EVENT_MS)) as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(mock: MockServer) -> None:
    mock.clear()


def admission_env(**values: object) -> dict[str, str]:
    env = {"HYDRA_RETRIES": "0"}
    env.update({f"HYDRA_{k.upper()}": str(v) for k, v in values.items()})
    return env


def tagged(tag: str) -> str:
    return f"agent request {tag}"


def anthropic_body(tag: str) -> dict[str, Any]:
    return {
        "model": "gpt-4o",
        "max_tokens": 64,
        "stream": True,
        "messages": [{"role": "user", "content": tagged(tag)}],
    }


def responses_body(tag: str) -> dict[str, Any]:
    return {"model": "gpt-4o", "stream": True, "input": tagged(tag)}


def stream(
    proxy: ProxyServer, path: str, body: dict[str, Any], headers: dict[str, str]
) -> tuple[int, float, bytes]:
    """POST and read the whole reply: (status, seconds to the response head, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=60)
    started = time.monotonic()
    conn.request(
        "POST",
        path,
        orjson.dumps(body),
        {"content-type": "application/json", "anthropic-version": "2023-06-01", **headers},
    )
    response = conn.getresponse()
    waited = time.monotonic() - started
    data = response.read()
    conn.close()
    return response.status, waited, data


def served_order(mock: MockServer) -> list[str]:
    """The tags of the requests the upstream got, in the order it got them."""
    order = []
    for request in mock.requests():
        found = re.search(r"agent request ([\w-]+)", orjson.dumps(request["body"]).decode())
        if found:
            order.append(found.group(1))
    return order


def wait_until(condition: Any, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def access_lines(proxy: ProxyServer) -> list[str]:
    return [line for line in proxy.log_tail().splitlines() if "hydra_proxy.access" in line]


def metric(proxy: ProxyServer, name: str, **labels: str) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


def test_four_times_more_sessions_than_the_bound_are_served_round_robin(
    mock: MockServer, impl: str
) -> None:
    env = admission_env(provider_streams=BOUND, queue_timeout=60)
    with ProxyServer(mock.url + "/v1", "--log-level", "info", impl=impl, env=env) as proxy:
        sessions = 4 * BOUND
        # Two holders take both slots for 4 s and 5 s (scripted turns; every later request
        # gets the canned ~2 s reply): the two chains of later grants stay 1 s apart.
        pool = ThreadPoolExecutor(max_workers=sessions + 8)
        mock.script([{"text": "x" * n, "chunk_size": 1, "delay_ms": 20} for n in (200, 250)])
        holders = [pool.submit(stream, proxy, "/v1/messages", anthropic_body("h0"), {})]
        wait_until(lambda: served_order(mock) == ["h0"], "the first holder upstream")
        holders.append(pool.submit(stream, proxy, "/v1/messages", anthropic_body("h1"), {}))
        wait_until(lambda: len(served_order(mock)) == 2, "the second holder upstream")
        # Session 0 bursts 5 requests, then sessions 1..7 send one each; half are Claude
        # Code (Messages), half Codex (Responses). Each arrives after the previous queued.
        arrivals = [("s0", i) for i in range(5)] + [(f"s{i}", 0) for i in range(1, sessions)]
        futures = {}
        for queued, (session, n) in enumerate(arrivals, start=1):
            tag = f"{session}-{n}"
            if int(session[1:]) % 2 == 0:
                call = ("/v1/messages", anthropic_body(tag), {CC_SESSION: session})
            else:
                call = ("/v1/responses", responses_body(tag), {CODEX_SESSION: session})
            futures[tag] = pool.submit(stream, proxy, *call)
            wait_until(
                lambda q=queued: metric(proxy, "hydra_admission_queue_depth") == q,  # type: ignore[misc]
                f"{tag} in the queue",
            )
        results = {tag: f.result() for tag, f in futures.items()}
        for h in holders:
            assert h.result()[0] == 200
        pool.shutdown()

        assert all(status == 200 for status, _, _ in results.values()), results
        for tag, (_, _, body) in results.items():  # each stream is complete
            assert body.rstrip().endswith(b'message_stop\ndata: {"type":"message_stop"}') or (
                b"response.completed" in body
            ), tag
        # Round robin: every session's first request before session 0's second.
        expected = ["s0-0", *(f"s{i}-0" for i in range(1, sessions)), "s0-1", "s0-2", "s0-3"]
        expected.append("s0-4")
        waits = {tag: round(w, 2) for tag, (_, w, _) in results.items()}
        assert served_order(mock) == ["h0", "h1", *expected], waits
        # The access log has each queued request's depth and wait.
        wait_until(lambda: len(access_lines(proxy)) >= len(arrivals) + 2, "the access log")
        queued_lines = [line for line in access_lines(proxy) if " queue=" in line]
        assert len(queued_lines) == len(arrivals)
        depths = sorted(int(re.search(r" queue=(\d+)", line).group(1)) for line in queued_lines)  # type: ignore[union-attr]
        assert depths == list(range(len(arrivals)))
        assert all(float(re.search(r"wait_ms=([\d.]+)", x).group(1)) > 0 for x in queued_lines)  # type: ignore[union-attr]
        assert metric(proxy, "hydra_admission_wait_seconds_count") == len(arrivals)
        assert metric(proxy, "hydra_admission_queue_depth") == 0


def hold_slot(
    proxy: ProxyServer, mock: MockServer, headers: dict[str, str] | None = None
) -> threading.Thread:
    """A stream that keeps one slot for ~4 s (the next scripted turn: 200 paced deltas)."""
    mock.script([{"text": "x" * 200, "chunk_size": 1, "delay_ms": 20}])
    thread = threading.Thread(
        target=stream,
        args=(proxy, "/v1/messages", anthropic_body("holder"), headers or {}),
        daemon=True,
    )
    thread.start()
    return thread


def test_past_the_queue_time_bound_each_sdk_gets_a_429_with_retry_after(
    mock: MockServer, impl: str
) -> None:
    env = admission_env(provider_streams=1, queue_timeout=0.3)
    with ProxyServer(mock.url + "/v1", "--log-level", "info", impl=impl, env=env) as proxy:
        holder = hold_slot(proxy, mock)
        wait_until(lambda: len(served_order(mock)) == 1, "the holder upstream")

        claude = anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0)
        with pytest.raises(anthropic.RateLimitError) as refused:
            claude.messages.create(
                model="gpt-4o",
                max_tokens=64,
                messages=[{"role": "user", "content": tagged("sdk-anthropic")}],
                stream=True,
            )
        assert refused.value.status_code == 429
        assert isinstance(refused.value.body, dict)
        assert refused.value.body["error"]["type"] == "rate_limit_error"
        assert "wait timed out" in refused.value.body["error"]["message"]
        assert int(refused.value.response.headers["retry-after"]) >= 1

        chat = openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0)
        with pytest.raises(openai.RateLimitError) as chat_refused:
            chat.chat.completions.create(
                model="gpt-4o",
                messages=[{"role": "user", "content": tagged("sdk-chat")}],
                stream=True,
            )
        assert chat_refused.value.status_code == 429
        assert int(chat_refused.value.response.headers["retry-after"]) >= 1
        assert isinstance(chat_refused.value.body, dict)
        assert "wait timed out" in chat_refused.value.body["message"]

        with pytest.raises(openai.RateLimitError) as responses_refused:
            chat.responses.create(model="gpt-4o", input=tagged("sdk-responses"), stream=True)
        assert responses_refused.value.status_code == 429
        assert int(responses_refused.value.response.headers["retry-after"]) >= 1

        # No refused request reached the upstream; the holder's stream was not disturbed.
        assert served_order(mock) == ["holder"]
        # The SDK's own retries wait out each retry-after until the holder's slot is free.
        patient = anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=10)
        reply = patient.messages.create(
            model="gpt-4o", max_tokens=64, messages=[{"role": "user", "content": tagged("sdk")}]
        )
        assert reply.content
        assert served_order(mock) == ["holder", "sdk"]
        holder.join(30)
        assert metric(proxy, "hydra_admission_rejections_total", reason="queue_timeout") > 3


def test_past_the_queue_depth_bound_the_refusal_is_immediate(mock: MockServer, impl: str) -> None:
    env = admission_env(provider_streams=1, queue_depth=1, queue_timeout=60)
    with ProxyServer(mock.url + "/v1", impl=impl, env=env) as proxy:
        holder = hold_slot(proxy, mock)
        wait_until(lambda: len(served_order(mock)) == 1, "the holder upstream")
        waiter = threading.Thread(
            target=stream,
            args=(proxy, "/v1/messages", anthropic_body("waiter"), {CC_SESSION: "w"}),
            daemon=True,
        )
        waiter.start()
        wait_until(lambda: metric(proxy, "hydra_admission_queue_depth") == 1, "the waiter")
        chat = openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0)
        with pytest.raises(openai.RateLimitError) as refused:
            chat.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": tagged("third")}]
            )
        assert isinstance(refused.value.body, dict)
        assert "queue is full" in refused.value.body["message"]
        assert int(refused.value.response.headers["retry-after"]) >= 1
        holder.join(30)
        waiter.join(30)
        assert served_order(mock) == ["holder", "waiter"]
        assert metric(proxy, "hydra_admission_rejections_total", reason="queue_full") == 1


def open_and_drop(proxy: ProxyServer, tag: str, *, read_first: bool) -> None:
    """Send a streamed request on a raw socket and close it: after the first bytes of the
    reply (`read_first`), or while it still waits."""
    sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=30)
    body = orjson.dumps(anthropic_body(tag))
    sock.sendall(
        b"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"anthropic-version: 2023-06-01\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
    )
    if read_first:
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
    sock.close()


def test_slots_are_given_back_on_disconnect_and_on_upstream_errors(
    mock: MockServer, impl: str
) -> None:
    """Bound 1 and a queue time far below one whole upstream stream: a slot kept by a
    dropped stream or a failed exchange would turn every later request into a 429."""
    env = admission_env(provider_streams=1, queue_timeout=1)
    with ProxyServer(mock.url + "/v1", "--log-level", "info", impl=impl, env=env) as proxy:
        rounds = 3
        for i in range(rounds):
            open_and_drop(proxy, f"dropped-{i}", read_first=True)
            mock.script([{"text": "ok"}])
            status, _, _ = stream(proxy, "/v1/messages", anthropic_body(f"next-{i}"), {})
            assert status == 200, f"round {i}: {proxy.log_tail()}"
        for i in range(rounds):
            mock.script([{"error": {"status": 500, "message": "upstream exploded"}}])
            status, _, body = stream(proxy, "/v1/messages", anthropic_body(f"error-{i}"), {})
            assert status == 500 and b"upstream exploded" in body
        # A client that leaves while it waits leaves the queue (it is never served).
        holder = hold_slot(proxy, mock)
        wait_until(lambda: served_order(mock)[-1:] == ["holder"], "the holder upstream")
        open_and_drop(proxy, "gave-up", read_first=False)
        wait_until(lambda: metric(proxy, "hydra_admission_queue_depth") == 0, "the queue")
        holder.join(30)
        mock.script([{"text": "ok"}])
        status, _, _ = stream(proxy, "/v1/messages", anthropic_body("last"), {})
        assert status == 200
        order = served_order(mock)
        assert "gave-up" not in order
        assert order[-1] == "last"
        assert metric(proxy, "hydra_admission_rejections_total") == 0


def test_the_client_key_bound_queues_one_key_not_the_others(mock: MockServer, impl: str) -> None:
    env = {
        **admission_env(key_streams=1, queue_timeout=0.3),
        "HYDRA_PROXY_KEYS": "team-key-one,team-key-two",
    }
    with ProxyServer(mock.url + "/v1", impl=impl, env=env) as proxy:
        holder = hold_slot(proxy, mock, {"x-api-key": "team-key-one"})
        wait_until(lambda: len(served_order(mock)) == 1, "the holder upstream")
        one = anthropic.Anthropic(base_url=proxy.url, api_key="team-key-one", max_retries=0)
        with pytest.raises(anthropic.RateLimitError) as refused:
            one.messages.create(
                model="gpt-4o", max_tokens=64, messages=[{"role": "user", "content": "x"}]
            )
        assert isinstance(refused.value.body, dict)
        assert "client key" in refused.value.body["error"]["message"]
        two = anthropic.Anthropic(base_url=proxy.url, api_key="team-key-two", max_retries=0)
        reply = two.messages.create(
            model="gpt-4o", max_tokens=64, messages=[{"role": "user", "content": tagged("two")}]
        )
        assert reply.content
        holder.join(30)


def test_a_full_provider_falls_through_to_the_next_in_its_chain(
    mock: MockServer, impl: str, tmp_path: Path
) -> None:
    with MockServer() as other:
        config = tmp_path / "hydra.toml"
        config.write_text(
            f"""
[providers.busy]
kind = "chat"
base_url = "{mock.url}/v1"
api_key_optional = true

[providers.spare]
kind = "chat"
base_url = "{other.url}/v1"
api_key_optional = true

[[routes]]
match = "team-*"
provider = "busy"
fallback = ["spare"]

[admission]
queue_timeout = 0.3

[admission.providers]
busy = 1
""",
            encoding="utf-8",
        )
        args = ("--config", str(config), "--log-level", "info")
        with ProxyServer(mock.url + "/v1", *args, impl=impl, env=admission_env()) as proxy:
            body = {**anthropic_body("holder"), "model": "team-a"}
            holder = threading.Thread(
                target=stream, args=(proxy, "/v1/messages", body, {}), daemon=True
            )
            holder.start()
            wait_until(lambda: len(served_order(mock)) == 1, "the holder upstream")
            status, _, _ = stream(
                proxy, "/v1/messages", {**anthropic_body("spilled"), "model": "team-a"}, {}
            )
            assert status == 200
            assert served_order(other) == ["spilled"]
            wait_until(lambda: "busy:full" in proxy.log_tail(), "the access log")
            assert "attempts=busy:full,spare:200" in proxy.log_tail()
            holder.join(30)
            # A 429 falls back: busy's slot is given back as spare's is taken, so the next
            # request has busy's slot again (a kept one would make it "busy:full").
            mock.script([{"error": {"status": 429, "message": "slow down"}}])
            for tag in ("after-429", "busy-again"):
                body = {**anthropic_body(tag), "model": "team-a"}
                assert stream(proxy, "/v1/messages", body, {})[0] == 200
            wait_until(lambda: proxy.log_tail().count("attempts=") >= 4, "the access log")
            attempts = re.findall(r"attempts=(\S+)", proxy.log_tail())
            assert attempts[-2:] == ["busy:429,spare:200", "busy:200"]
            assert served_order(other) == ["spilled", "after-429"]


# --- the gate itself, in process -------------------------------------------------------


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_the_gate_serves_sessions_round_robin_and_each_session_in_order() -> None:
    async def scenario() -> list[str]:
        gate = Gate("provider 'p'", 1, 100)
        loop = asyncio.get_running_loop()
        first = await gate.take("busy", loop.time() + 60)
        served: list[str] = []

        async def agent(session: str, n: int) -> None:
            slot = await gate.take(session, loop.time() + 60)
            served.append(f"{session}{n}")
            await asyncio.sleep(0)
            slot.release()

        tasks = [asyncio.ensure_future(agent("a", i)) for i in range(3)]
        tasks += [asyncio.ensure_future(agent(s, 0)) for s in "bcd"]
        tasks.append(asyncio.ensure_future(agent("b", 1)))
        await asyncio.sleep(0)
        assert gate.waiting == 7
        first.release()
        await asyncio.gather(*tasks)
        assert (gate.active, gate.waiting, gate.sessions) == (0, 0, {})
        return served

    assert run(scenario()) == ["a0", "b0", "c0", "d0", "a1", "b1", "a2"]


def test_a_cancelled_waiter_leaves_the_queue_and_a_slot_granted_to_it_goes_back() -> None:
    async def scenario() -> None:
        gate = Gate("provider 'p'", 1, 100)
        loop = asyncio.get_running_loop()
        held = await gate.take("x", loop.time() + 60)
        gone = asyncio.ensure_future(gate.take("gone", loop.time() + 60))
        await asyncio.sleep(0)
        gone.cancel()  # queued, then cancelled: out of the queue
        await asyncio.gather(gone, return_exceptions=True)
        assert gate.waiting == 0 and gate.sessions == {}
        # Granted and cancelled in the same loop turn: the slot comes back at once.
        racing = asyncio.ensure_future(gate.take("racer", loop.time() + 60))
        await asyncio.sleep(0)
        held.release()  # grants the racer's waiter ...
        racing.cancel()  # ... whose task is cancelled before it runs
        await asyncio.gather(racing, return_exceptions=True)
        assert racing.cancelled()
        assert (gate.active, gate.waiting) == (0, 0)
        again = await gate.take("next", loop.time() + 60)
        again.release()
        again.release()  # idempotent
        assert gate.active == 0

    run(scenario())


def test_the_gate_refuses_past_its_deadline_and_past_its_depth() -> None:
    async def scenario() -> None:
        gate = Gate("provider 'p'", 1, 1)
        loop = asyncio.get_running_loop()
        held = await gate.take("x", loop.time() + 60)
        waiting = asyncio.ensure_future(gate.take("w", loop.time() + 0.05))
        await asyncio.sleep(0)
        with pytest.raises(Refused) as full:
            await gate.take("y", loop.time() + 60)
        assert full.value.reason == "queue_full"
        with pytest.raises(Refused) as late:
            await waiting
        assert late.value.reason == "queue_timeout"
        assert MIN_RETRY_AFTER <= late.value.retry_after <= MAX_RETRY_AFTER
        assert (gate.active, gate.waiting, gate.refused) == (1, 0, 2)
        held.release()
        assert gate.active == 0

    run(scenario())


def test_session_ids_come_from_claude_code_and_codex_headers() -> None:
    claude = orjson.loads((FIXTURES / "claude-code" / "request-plain.json").read_bytes())
    codex = orjson.loads((FIXTURES / "codex" / "request-exec-first-turn.headers.json").read_bytes())

    def scope(headers: dict[str, str]) -> dict[str, Any]:
        raw = [(k.lower().encode(), str(v).encode()) for k, v in headers.items()]
        return {"headers": raw, "client": ("10.0.0.7", 5000)}

    assert session_of(scope(claude["headers"]), "k1") == (
        "s:" + claude["headers"]["X-Claude-Code-Session-Id"]
    )
    assert session_of(scope(codex), None) == "s:" + codex["session-id"]
    assert session_of(scope({}), "1a2b3c4d") == "k:1a2b3c4d"
    assert session_of(scope({}), None) == "p:10.0.0.7"


def test_the_admission_table_is_validated_with_file_and_line(tmp_path: Path) -> None:
    config = tmp_path / "hydra.toml"
    config.write_text(
        """[server]
port = 3456

[admission]
provider_streams = -1
queue_timeout = 0
when_full = "wait"
qeue_depth = 3

[admission.providers]
openai = 8
nobody = 2
anthropic = "many"
""",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as problems:
        load({"config": str(config)}, {})
    text = str(problems.value)
    for expected in (
        "hydra.toml:5: [admission] provider_streams",
        "hydra.toml:6: [admission] queue_timeout",
        "hydra.toml:7:",
        "hydra.toml:8: unknown keys in [admission]: 'qeue_depth'",
        "did you mean 'queue_depth'?",
        "hydra.toml:12: [admission.providers] names an unknown provider 'nobody'",
        "hydra.toml:13: [admission.providers] anthropic must be a whole number",
    ):
        assert expected in text, text


def test_admission_settings_layer_flag_over_variable_over_file(tmp_path: Path) -> None:
    config = tmp_path / "hydra.toml"
    config.write_text(
        "[admission]\nprovider_streams = 4\nkey_streams = 2\nqueue_timeout = 5\n"
        'when_full = "queue"\n[admission.providers]\nopenai = 8\n',
        encoding="utf-8",
    )
    settings = load(
        {"config": str(config), "provider_streams": 16},
        {"HYDRA_KEY_STREAMS": "3", "HYDRA_QUEUE_DEPTH": "9"},
    )
    limits = limits_of(settings)
    assert (limits.provider_streams, limits.key_streams, limits.queue_depth) == (16, 3, 9)
    assert (limits.queue_timeout, limits.when_full) == (5, "queue")
    assert (limits.provider_limit("openai"), limits.provider_limit("groq")) == (8, 16)
    assert (
        "admission: 16 (openai 8) streams per provider, 3 per client key, across the workers;"
        in (describe(settings))
    )
    assert "admission: unbounded" in describe(load({}, {}))
    with pytest.raises(ConfigError, match="HYDRA_QUEUE_DEPTH=-2"):
        load({}, {"HYDRA_QUEUE_DEPTH": "-2"})
    assert not Admission(limits_of(load({}, {}))).active  # the default: unbounded


@pytest.mark.e2e
def test_claude_code_waits_out_the_429_and_retries(mock: MockServer) -> None:
    """The real client: Claude Code, refused while the only slot is held, retries after
    retry-after and finishes once the holder lets go."""
    claude = require_claude()
    env = admission_env(provider_streams=1, queue_timeout=0.3)
    with ProxyServer(mock.url + "/v1", "--log-level", "info", env=env) as proxy:
        mock.script([{"text": "x" * 3000, "chunk_size": 1, "delay_ms": 20}])  # a minute
        holder = socket.create_connection(("127.0.0.1", proxy.port), timeout=30)
        body = orjson.dumps(anthropic_body("holder"))
        holder.sendall(
            b"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            b"anthropic-version: 2023-06-01\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
        )
        assert holder.recv(65536).startswith(b"HTTP/1.1 200")
        with ThreadPoolExecutor(max_workers=1) as pool:
            running = pool.submit(run_claude, claude, "Say hello.", proxy.url, max_turns=1)

            def refused() -> bool:
                return any(" POST /v1/messages 429 " in line for line in access_lines(proxy))

            wait_until(refused, "Claude Code's first request refused", timeout=120)
            holder.close()  # the slot frees: Claude Code's next try gets it
            run = running.result()
        assert run.returncode == 0 and not run.result().get("is_error"), run.report()
        lines = [line for line in access_lines(proxy) if " POST /v1/messages " in line]
        statuses = [line.split(" POST /v1/messages ")[1].split()[0] for line in lines]
        assert "429" in statuses and statuses[-1] == "200", statuses
        assert all("rate_limit_error" in x for x in lines if " POST /v1/messages 429 " in x)
