"""Fallback chains, key pools, unreachable upstreams, GET /v1/models and SIGHUP reload,
end to end: a real proxy process in front of real mock upstreams."""

from __future__ import annotations

import http.client
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic
import openai
import orjson
import pytest

from hydra_proxy.mock import MockServer
from hydra_proxy.mock.app import key_hash
from hydra_proxy.mock.server import free_port
from support.servers import ProxyServer

KEY_A1 = "sk-provider-a-key-number-one"
KEY_A2 = "sk-provider-a-key-number-two"
KEY_B = "sk-provider-b-key"
KEYS = {"A_KEY_1": KEY_A1, "A_KEY_2": KEY_A2, "B_KEY": KEY_B}
ASK = {"model": "team-model", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture(scope="module")
def mock_a() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(scope="module")
def mock_b() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(mock_a: MockServer, mock_b: MockServer) -> None:
    mock_a.clear()
    mock_b.clear()


def write_config(path: Path, a_url: str, b_url: str, *, a_keys: int = 1, extra: str = "") -> Path:
    keys = ", ".join(f'"A_KEY_{i + 1}"' for i in range(a_keys))
    path.write_text(
        f"""
[providers.a]
kind = "chat"
base_url = "{a_url}/v1"
api_key_env = [{keys}]

[providers.b]
kind = "chat"
base_url = "{b_url}/v1"
api_key_env = "B_KEY"

{extra}
""",
        encoding="utf-8",
    )
    return path


CHAIN = """
[[routes]]
name = "team"
match = "team-*"
provider = "a"
model = "model-a"
fallback = [{ provider = "b", model = "model-b" }]
"""


def post(proxy: ProxyServer, path: str, body: object, headers: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    conn.request(
        "POST", path, orjson.dumps(body), {"content-type": "application/json", **(headers or {})}
    )
    response = conn.getresponse()
    return response.status, dict(response.getheaders()), response.read()


def get(proxy: ProxyServer, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    conn.request("GET", path, headers=headers or {})
    response = conn.getresponse()
    return response.status, response.read()


def access_lines(proxy: ProxyServer, timeout: float = 10.0) -> list[str]:
    """The access-log lines, once the last one is a model request's: the line is written
    after the reply's last byte, so a client may read its reply before the line is there."""
    deadline = time.monotonic() + timeout
    while True:
        lines = [line for line in proxy.log_tail().splitlines() if "hydra_proxy.access" in line]
        if (lines and " POST " in lines[-1]) or time.monotonic() > deadline:
            return lines
        time.sleep(0.05)


def wait_for_log(proxy: ProxyServer, text: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while text not in proxy.log_tail():
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} not in the log:\n{proxy.log_tail()}")
        time.sleep(0.05)


def test_fallback_after_429_streams_one_clean_stream(
    mock_a: MockServer, mock_b: MockServer, impl: str, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "hydra.toml", mock_a.url, mock_b.url, extra=CHAIN)
    args = ("--config", str(config), "--log-level", "info")
    with ProxyServer(mock_a.url + "/v1", *args, impl=impl, env=KEYS) as proxy:
        mock_a.script([{"error": {"status": 429, "message": "slow down", "retry_after": "120"}}])
        mock_b.script([{"text": "Answer from provider b.", "chunk_size": 4}])
        client = anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0)
        with client.messages.stream(**ASK) as stream:  # type: ignore[arg-type]
            events = [event.type for event in stream]
            message = stream.get_final_message()
        # one stream, from b alone: a single message_start, text, one message_stop
        assert events.count("message_start") == 1 and events.count("message_stop") == 1
        assert [b.text for b in message.content if b.type == "text"] == ["Answer from provider b."]
        assert message.model == "team-model" and message.stop_reason == "end_turn"
        (first,) = mock_a.requests()
        (second,) = mock_b.requests()
        assert first["body"]["model"] == "model-a" and second["body"]["model"] == "model-b"
        assert first["key_hashes"] == {"authorization": key_hash(KEY_A1)}
        assert second["key_hashes"] == {"authorization": key_hash(KEY_B)}
        line = access_lines(proxy)[-1]
        assert "POST /v1/messages 200" in line and "route=team" in line
        assert "attempts=a:429,b:200" in line, line
        # a's only key rests for the upstream's retry-after: the next request goes to b
        mock_b.script([{"text": "Again b."}])
        again = client.messages.create(**ASK)  # type: ignore[arg-type]
        assert [b.text for b in again.content if b.type == "text"] == ["Again b."]
        assert len(mock_a.requests()) == 1 and len(mock_b.requests()) == 2
        wait_for_log(proxy, "attempts=a:cooling,b:200")
        assert "attempts=a:cooling,b:200" in access_lines(proxy)[-1]


def test_a_request_error_is_not_retried_elsewhere(
    mock_a: MockServer, mock_b: MockServer, tmp_path: Path
) -> None:
    """400 is the request's fault: the next provider would refuse it too."""
    config = write_config(tmp_path / "hydra.toml", mock_a.url, mock_b.url, extra=CHAIN)
    with ProxyServer(mock_a.url + "/v1", "--config", str(config), env=KEYS) as proxy:
        mock_a.script([{"error": {"status": 400, "message": "bad field"}}])
        status, _, body = post(proxy, "/v1/messages", ASK)
        assert status == 400 and b"bad field" in body
        assert mock_b.requests() == []


def test_key_pool_rotates_and_rests_keys(
    mock_a: MockServer, mock_b: MockServer, tmp_path: Path
) -> None:
    route = '[[routes]]\nmatch = "team-*"\nprovider = "a"\n'
    config = write_config(tmp_path / "hydra.toml", mock_a.url, mock_b.url, a_keys=2, extra=route)
    with ProxyServer(mock_a.url + "/v1", "--config", str(config), env=KEYS) as proxy:
        for _ in range(3):
            status, _, _ = post(proxy, "/v1/messages", ASK)
            assert status == 200
        used = [r["key_hashes"]["authorization"] for r in mock_a.requests()]
        assert used == [key_hash(KEY_A1), key_hash(KEY_A2), key_hash(KEY_A1)]
        # key 2 is rate limited: it rests, the same request is tried once more on key 1,
        # which serves meanwhile
        mock_a.clear()
        mock_a.script([{"error": {"status": 429, "message": "slow", "retry_after": "60"}}])
        for _ in range(2):
            assert post(proxy, "/v1/messages", ASK)[0] == 200
        used = [r["key_hashes"]["authorization"] for r in mock_a.requests()]
        assert used == [key_hash(KEY_A2), key_hash(KEY_A1), key_hash(KEY_A1)]
        # key 1 is rate limited too, with no free key to try: its 429 reaches the client;
        # then both rest: a clean 429 with the soonest retry-after, nothing goes upstream
        mock_a.clear()
        mock_a.script([{"error": {"status": 429, "message": "slow", "retry_after": "30"}}])
        status, headers, _ = post(proxy, "/v1/messages", ASK)
        assert status == 429 and headers.get("retry-after") == "30"
        status, headers, body = post(proxy, "/v1/messages", ASK)
        assert status == 429 and 1 <= int(headers["retry-after"]) <= 30
        error = orjson.loads(body)["error"]
        assert error["type"] == "rate_limit_error" and "provider 'a'" in error["message"]
        assert len(mock_a.requests()) == 1
        assert KEY_A1 not in proxy.log_tail() and KEY_A2 not in proxy.log_tail()


def test_unreachable_upstream_is_a_configuration_error(tmp_path: Path) -> None:
    port = free_port()
    (tmp_path / "hydra.toml").write_text(
        f'[providers.ollama]\nbase_url = "http://127.0.0.1:{port}/v1"\n\n'
        '[[routes]]\nmatch = "*"\nprovider = "ollama"\nmodel = "llama3"\n',
        encoding="utf-8",
    )
    args = ("--config", str(tmp_path / "hydra.toml"), "--log-level", "info")
    with ProxyServer("http://127.0.0.1:9/v1", *args) as proxy:
        # The SDK's own retries (2 by default) obey x-should-retry: false.
        client = anthropic.Anthropic(base_url=proxy.url, api_key="k")
        with pytest.raises(anthropic.APIStatusError) as caught:
            client.messages.create(**ASK)  # type: ignore[arg-type]
        assert caught.value.status_code == 502
        assert caught.value.response.headers["x-should-retry"] == "false"
        message = caught.value.message
        assert f"cannot reach provider 'ollama' at http://127.0.0.1:{port}/v1/chat/completions" in (
            message
        ), message
        lines = access_lines(proxy)
        assert len([x for x in lines if "POST /v1/messages" in x]) == 1, lines
        assert "attempts=ollama:unreachable" in lines[-1]
        log = proxy.log_tail()
        assert "WARNING hydra_proxy.upstream: cannot reach provider 'ollama'" in log, log
        # an OpenAI client hears the same, in its shape
        status, headers, body = post(proxy, "/v1/chat/completions", ASK)
        assert status == 502 and headers.get("x-should-retry") == "false"
        assert "cannot reach provider 'ollama'" in orjson.loads(body)["error"]["message"]


def test_models_listing_in_both_shapes(
    mock_a: MockServer, mock_b: MockServer, tmp_path: Path
) -> None:
    routes = """
[[routes]]
match = "claude-sonnet-*"
provider = "a"
model = "model-a"
spoof_model = "claude-sonnet-4-5"
context_window = 200000
max_output = 64000

[[routes]]
match = "fast"
provider = "b"
"""
    config = write_config(tmp_path / "hydra.toml", mock_a.url, mock_b.url, extra=routes)
    args = ("--config", str(config), "--provider", "a")
    with ProxyServer(mock_a.url + "/v1", *args, env=KEYS) as proxy:
        status, body = get(proxy, "/v1/models", {"anthropic-version": "2023-06-01"})
        listing = orjson.loads(body)
        assert status == 200 and listing["has_more"] is False
        by_id = {m["id"]: m for m in listing["data"]}
        assert set(by_id) == {"claude-sonnet-4-5", "fast"}
        assert by_id["claude-sonnet-4-5"]["type"] == "model"
        assert by_id["claude-sonnet-4-5"]["max_input_tokens"] == 200000
        assert by_id["claude-sonnet-4-5"]["max_tokens"] == 64000
        status, body = get(proxy, "/v1/models")
        openai_listing = orjson.loads(body)
        assert status == 200 and openai_listing["object"] == "list"
        rows = {m["id"]: m for m in openai_listing["data"]}
        assert rows["claude-sonnet-4-5"]["owned_by"] == "a"
        assert rows["claude-sonnet-4-5"]["context_window"] == 200000
        assert rows["fast"]["owned_by"] == "b" and rows["fast"]["object"] == "model"


def test_sighup_reloads_a_good_config_and_refuses_a_bad_one(
    mock_a: MockServer, mock_b: MockServer, tmp_path: Path
) -> None:
    route = '[[routes]]\nmatch = "team-*"\nprovider = "a"\nmodel = "{}"\n'
    config = write_config(
        tmp_path / "hydra.toml", mock_a.url, mock_b.url, extra=route.format("first")
    )
    args = ("--config", str(config), "--log-level", "info")
    with ProxyServer(mock_a.url + "/v1", *args, env=KEYS) as proxy:
        assert proxy.process is not None
        assert post(proxy, "/v1/messages", ASK)[0] == 200
        assert mock_a.requests()[-1]["body"]["model"] == "first"
        write_config(config, mock_a.url, mock_b.url, extra=route.format("second"))
        os.kill(proxy.process.pid, signal.SIGHUP)
        wait_for_log(proxy, "config reloaded from")
        deadline = time.monotonic() + 20
        while mock_a.requests()[-1]["body"]["model"] != "second":
            assert time.monotonic() < deadline, proxy.log_tail()
            assert post(proxy, "/v1/messages", ASK)[0] == 200
        # a bad file: refused with the load-time message (file and line), "second" stays
        config.write_text(config.read_text() + "\n[[route]]\nmatch = 'x'\n", encoding="utf-8")
        os.kill(proxy.process.pid, signal.SIGHUP)
        wait_for_log(proxy, "config reload refused")
        log = proxy.log_tail()
        assert f"{config}:" in log and "[[route]]" in log, log
        time.sleep(1.0)  # the workers granian respawned are serving
        mock_a.clear()
        for _ in range(3):
            assert post(proxy, "/v1/messages", ASK)[0] == 200
        assert {r["body"]["model"] for r in mock_a.requests()} == {"second"}


CROSS = """
[providers.c]
kind = "anthropic"
base_url = "{b_url}"
api_key_env = "B_KEY"

[[routes]]
match = "team-*"
provider = "a"
model = "model-a"
fallback = [{{ provider = "c", model = "claude-c" }}]
"""


def test_a_chain_across_protocols(
    mock_a: MockServer, mock_b: MockServer, impl: str, tmp_path: Path
) -> None:
    """Each attempt is planned for its own provider: a Chat upstream first, then (after a
    503) an Anthropic one, passed through; and a first attempt that answers is relayed from
    the response the chain already holds."""
    extra = CROSS.format(b_url=mock_b.url)
    config = write_config(tmp_path / "hydra.toml", mock_a.url, mock_b.url, extra=extra)
    args = ("--config", str(config), "--log-level", "info")
    with ProxyServer(mock_a.url + "/v1", *args, impl=impl, env=KEYS) as proxy:
        client = anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0)
        mock_a.script([{"text": "Streamed by a.", "chunk_size": 3}, {"text": "Whole from a."}])
        with client.messages.stream(**ASK) as stream:  # type: ignore[arg-type]
            message = stream.get_final_message()
        assert [b.text for b in message.content if b.type == "text"] == ["Streamed by a."]
        wait_for_log(proxy, "attempts=a:200")
        assert "attempts=a:200" in access_lines(proxy)[-1]
        whole = client.messages.create(**ASK)  # type: ignore[arg-type]
        assert [b.text for b in whole.content if b.type == "text"] == ["Whole from a."]
        assert mock_b.requests() == []
        mock_a.script([{"error": {"status": 503, "message": "down"}}] * 2)
        mock_b.script([{"text": "Claude via c."}, {"text": "Claude streams via c."}])
        whole = client.messages.create(**ASK)  # type: ignore[arg-type]
        assert [b.text for b in whole.content if b.type == "text"] == ["Claude via c."]
        with client.messages.stream(**ASK) as stream:  # type: ignore[arg-type]
            message = stream.get_final_message()
        assert [b.text for b in message.content if b.type == "text"] == ["Claude streams via c."]
        passed = mock_b.requests()
        assert [r["path"] for r in passed] == ["/v1/messages", "/v1/messages"]
        assert {r["body"]["model"] for r in passed} == {"claude-c"}
        assert passed[0]["key_hashes"] == {"x-api-key": key_hash(KEY_B)}
        wait_for_log(proxy, "attempts=a:503,c:200")
        assert "attempts=a:503,c:200" in access_lines(proxy)[-1]


def test_routes_on_request_traits(mock_a: MockServer, mock_b: MockServer, tmp_path: Path) -> None:
    """long_context (the estimate, counted only when the rule is reached) and images, for an
    Anthropic and a Chat client; everything else takes the next route."""
    routes = """
[[routes]]
match = "team-*"
images = true
provider = "b"
model = "eyes"

[[routes]]
match = "team-*"
long_context = 200
provider = "b"
model = "long"

[[routes]]
match = "team-*"
provider = "a"
model = "short"
"""
    config = write_config(tmp_path / "hydra.toml", mock_a.url, mock_b.url, extra=routes)
    with ProxyServer(mock_a.url + "/v1", "--config", str(config), env=KEYS) as proxy:
        long_text = "many words in a long prompt " * 100
        image = {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
        }
        chat_image = {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
        }
        cases = [
            ("/v1/messages", ASK["messages"], "a", "short"),
            ("/v1/messages", [{"role": "user", "content": long_text}], "b", "long"),
            (
                "/v1/messages",
                [{"role": "user", "content": [image, {"type": "text", "text": "?"}]}],
                "b",
                "eyes",
            ),
            ("/v1/chat/completions", ASK["messages"], "a", "short"),
            ("/v1/chat/completions", [{"role": "user", "content": long_text}], "b", "long"),
            ("/v1/chat/completions", [{"role": "user", "content": [chat_image]}], "b", "eyes"),
        ]
        for path, messages, provider, model in cases:
            mock_a.clear()
            mock_b.clear()
            status, _, body = post(proxy, path, {**ASK, "messages": messages})
            assert status == 200, body
            mock = mock_a if provider == "a" else mock_b
            (seen,) = mock.requests()
            assert seen["body"]["model"] == model, (path, model)


NEW_KINDS = """
[providers.g]
kind = "gemini"
base_url = "{b_url}/v1beta"
api_key_env = "B_KEY"

[providers.r]
kind = "responses"
base_url = "{b_url}/v1"
api_key_env = "B_KEY"

[[routes]]
match = "team-*"
provider = "a"
model = "model-a"
fallback = [{{ provider = "g", model = "gemini-g" }}]

[[routes]]
match = "codex-*"
provider = "a"
model = "model-a"
fallback = [{{ provider = "r", model = "gpt-r" }}]
"""


def test_gemini_and_responses_providers_as_fallbacks(
    mock_a: MockServer, mock_b: MockServer, impl: str, tmp_path: Path
) -> None:
    """A chain crosses into the new upstream kinds: an Anthropic client whose Chat primary
    answers 503 is served by a Gemini provider (translated, streamed and not), and a
    Responses client's is served by a Responses provider (passed through, model renamed)."""
    extra = NEW_KINDS.format(b_url=mock_b.url)
    config = write_config(tmp_path / "hydra.toml", mock_a.url, mock_b.url, extra=extra)
    args = ("--config", str(config), "--log-level", "info")
    with ProxyServer(mock_a.url + "/v1", *args, impl=impl, env=KEYS) as proxy:
        client = anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0)
        mock_a.script([{"error": {"status": 503, "message": "down"}}] * 3)
        mock_b.script([{"text": "Gemini via g."}, {"text": "Gemini streams via g."}])
        whole = client.messages.create(**ASK)  # type: ignore[arg-type]
        assert [b.text for b in whole.content if b.type == "text"] == ["Gemini via g."]
        with client.messages.stream(**ASK) as stream:  # type: ignore[arg-type]
            message = stream.get_final_message()
        assert [b.text for b in message.content if b.type == "text"] == ["Gemini streams via g."]
        assert message.model == "team-model"
        on_gemini = mock_b.requests()
        assert [r["path"].split("?")[0] for r in on_gemini] == [
            "/v1beta/models/gemini-g:generateContent",
            "/v1beta/models/gemini-g:streamGenerateContent",
        ]
        assert on_gemini[0]["key_hashes"] == {"x-goog-api-key": key_hash(KEY_B)}
        wait_for_log(proxy, "attempts=a:503,g:200")
        assert "provider=g" in access_lines(proxy)[-1]

        mock_b.clear()
        mock_b.script([{"text": "Responses via r."}])
        codex = openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0)
        reply = codex.responses.create(model="codex-mini", input="hi", store=False)
        assert reply.output_text == "Responses via r."
        (passed,) = mock_b.requests()
        assert passed["path"] == "/v1/responses" and passed["body"]["model"] == "gpt-r"
        assert passed["key_hashes"] == {"authorization": key_hash(KEY_B)}
        wait_for_log(proxy, "attempts=a:503,r:200")
        assert "provider=r" in access_lines(proxy)[-1]
