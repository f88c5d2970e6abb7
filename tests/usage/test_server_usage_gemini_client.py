"""Gemini API clients in the usage ledger and metrics, like every other client: streamed
and not, translated and with proxy keys (a Gemini client's key is its x-goog-api-key),
recorded with protocol ``gemini`` and the upstream's counts."""

from __future__ import annotations

import http.client
from pathlib import Path

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families
from test_server_usage import CHAT_REPLAY, chat_fixture_tokens, tokens_of, total

from hydra_proxy.mock import MockServer
from hydra_proxy.usage.backends import open_ledger
from hydra_proxy.usage.record import Tokens, client_key_id
from support.implementations import IMPLEMENTATIONS, NATIVE_MISSING, _native
from support.servers import ProxyServer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MODEL = "gemini-3.1-pro-preview"
KEY = "team-gemini-key-1"


def post(proxy: ProxyServer, path: str) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    body = {"contents": [{"role": "user", "parts": [{"text": "Say hello."}]}]}
    conn.request(
        "POST",
        path,
        orjson.dumps(body),
        {"content-type": "application/json", "x-goog-api-key": KEY},
    )
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status, response.getheader("x-request-id") or ""


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_gemini_requests_get_their_records(tmp_path: Path, impl: str) -> None:
    if impl == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    env = {"HYDRA_USAGE_LEDGER": ledger, "HYDRA_PROXY_KEYS": KEY}
    usage = {"prompt_tokens": 120, "completion_tokens": 9, "cached_tokens": 100}
    with (
        MockServer(fixtures=FIXTURES) as mock,
        ProxyServer(mock.url + "/v1", impl=impl, env=env) as proxy,
    ):
        mock.script([{"replay": CHAT_REPLAY}, {"text": "Hello.", "usage": usage}])
        stream_status, stream_id = post(
            proxy, f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"
        )
        json_status, json_id = post(proxy, f"/v1beta/models/{MODEL}:generateContent")
        assert (stream_status, json_status) == (200, 200)
        samples = metrics_with_key(proxy)
    records = {r.request_id: r for r in open_ledger(ledger, start=False).query()}
    streamed, whole = records[stream_id], records[json_id]
    for record in (streamed, whole):
        assert record.protocol == "gemini" and record.status == 200 and record.error_type is None
        assert record.requested_model == MODEL and not record.estimated
        assert record.key_id == client_key_id(KEY.encode())
    assert tokens_of(streamed) == chat_fixture_tokens(CHAT_REPLAY)
    assert tokens_of(whole) == Tokens(input=20, output=9, cache_read=100)
    assert streamed.stream and not whole.stream
    assert total(samples, "hydra_requests_total", protocol="gemini") >= 1


def metrics_with_key(proxy: ProxyServer) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """The metrics scrape, behind the proxy keys (the key as a bearer token)."""
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    conn.request("GET", "/metrics", headers={"authorization": f"Bearer {KEY}"})
    response = conn.getresponse()
    assert response.status == 200
    text = response.read().decode()
    conn.close()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_a_route_for_gemini_clients(tmp_path: Path) -> None:
    """`client = "gemini"` routes Gemini clients on their own: here to Anthropic, while the
    same model name from a Chat client goes to the Chat upstream."""
    with MockServer(fixtures=FIXTURES) as mock:
        (tmp_path / "hydra.toml").write_text(
            f"""
[providers.claude]
kind = "anthropic"
base_url = "{mock.url}"
api_key_optional = true

[[routes]]
match = "*"
client = "gemini"
provider = "claude"
model = "claude-sonnet-4-5"
""",
            encoding="utf-8",
        )
        args = ("--config", str(tmp_path / "hydra.toml"))
        with ProxyServer(mock.url + "/v1", *args, env={"HYDRA_PROXY_KEYS": KEY}) as proxy:
            mock.script([{"text": "from claude"}, {"text": "from chat"}])
            assert post(proxy, f"/v1beta/models/{MODEL}:generateContent")[0] == 200
            assert mock.requests()[-1]["path"] == "/v1/messages"
            assert mock.requests()[-1]["body"]["model"] == "claude-sonnet-4-5"
            conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
            body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
            headers = {"content-type": "application/json", "authorization": f"Bearer {KEY}"}
            conn.request("POST", "/v1/chat/completions", orjson.dumps(body), headers)
            assert conn.getresponse().status == 200
            conn.close()
            assert mock.requests()[-1]["path"] == "/v1/chat/completions"
