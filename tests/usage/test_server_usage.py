"""Usage accounting end to end: real streams through the proxy process, then its ledger rows,
its Prometheus counters and its access-log lines, against the usage in the fixtures."""

from __future__ import annotations

import base64
import http.client
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from hydra_proxy import cli
from hydra_proxy.mock import MockServer
from hydra_proxy.tokens import text_tokens
from hydra_proxy.usage.backends import open_ledger
from hydra_proxy.usage.record import Tokens, UsageRecord, client_key_id
from hydra_proxy.usage.upstream_usage import tokens_from_anthropic, tokens_from_chat
from support.implementations import IMPLEMENTATIONS, NATIVE_MISSING, _native
from support.servers import ProxyServer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CHAT_REPLAY = "chat/oaipy-gpt4o-text-usage.sse"
ANTHROPIC_REPLAY = "anthropic/sdkpy-basic-text.sse"
ANTHROPIC_KEY = "sk-ant-upstream-SECRET"


def fixture_events(name: str) -> list[dict[str, Any]]:
    out = []
    for line in (FIXTURES / name).read_bytes().split(b"\n"):
        if line.startswith(b"data:") and line[5:].strip() != b"[DONE]":
            out.append(orjson.loads(line[5:]))
    return out


def chat_fixture_tokens(name: str) -> Tokens:
    usage = [e["usage"] for e in fixture_events(name) if e.get("usage")]
    return tokens_from_chat(usage[-1])


def anthropic_fixture_tokens(name: str) -> Tokens:
    merged: dict[str, Any] = {}
    for event in fixture_events(name):
        if event["type"] == "message_start":
            merged.update(event["message"]["usage"])
        elif "usage" in event:
            merged.update(event["usage"])
    return tokens_from_anthropic(merged)


def without_usage(name: str) -> str:
    """The recorded Chat stream with its usage chunk taken out: an upstream that reports none."""
    events = (FIXTURES / name).read_text("utf-8").split("\n\n")
    return "\n\n".join(e for e in events if '"usage":{' not in e)


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer(fixtures=FIXTURES) as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(mock: MockServer) -> None:
    mock.clear()


def start_proxy(mock: MockServer, ledger: str, *args: str, impl: str = "auto") -> ProxyServer:
    env = {
        "HYDRA_USAGE_LEDGER": ledger,
        "HYDRA_PASSTHROUGH": "true",  # claude-* to the mock's Anthropic API, bytes unchanged
        "HYDRA_ANTHROPIC_BASE_URL": mock.url,
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
    }
    return ProxyServer(mock.url + "/v1", "--log-level", "info", *args, impl=impl, env=env)


def post(proxy: ProxyServer, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
    """(status, request id, whole body)."""
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    headers = {"content-type": "application/json"}
    if path == "/v1/messages":
        headers["anthropic-version"] = "2023-06-01"
    conn.request("POST", path, orjson.dumps(body), headers)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, response.getheader("x-request-id") or "", data


def messages(model: str, *, stream: bool) -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": 100,
        "stream": stream,
        "messages": [{"role": "user", "content": "Say hello."}],
    }


def chat(model: str, *, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "stream": stream,
        "messages": [{"role": "user", "content": "Say hello."}],
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


def metrics(proxy: ProxyServer) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    conn.request("GET", "/metrics")
    response = conn.getresponse()
    assert response.status == 200
    text = response.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def settled_metrics(
    proxy: ProxyServer, count: int
) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """The metrics once `count` requests are counted: a record is observed after the reply's
    last byte, so a scrape right after the last reply may precede the last records (bounded
    wait; the caller asserts the exact totals)."""
    deadline = time.monotonic() + 10
    while True:
        samples = metrics(proxy)
        if total(samples, "hydra_requests_total") >= count or time.monotonic() > deadline:
            return samples
        time.sleep(0.1)


def total(
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)


def rows(ledger: str) -> dict[str, UsageRecord]:
    return {r.request_id: r for r in open_ledger(ledger, start=False).query()}


def log_line(proxy: ProxyServer, request_id: str) -> dict[str, str]:
    proxy.log.seek(0)
    for line in proxy.log.read().decode("utf-8", "replace").splitlines():
        if f"id={request_id}" in line:
            return dict(re.findall(r" (\w+)=(\S+)", line))
    raise AssertionError(f"no access-log line for {request_id}")


def tokens_of(rec: UsageRecord) -> Tokens:
    return Tokens(rec.input_tokens, rec.output_tokens, rec.cache_read_tokens)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_every_kind_of_request_gets_its_record(mock: MockServer, tmp_path: Path, impl: str) -> None:
    if impl == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    chat_tokens = chat_fixture_tokens(CHAT_REPLAY)
    anthropic_tokens = anthropic_fixture_tokens(ANTHROPIC_REPLAY)
    ids: dict[str, str] = {}
    with start_proxy(mock, ledger, impl=impl) as proxy:

        def run(name: str, turn: dict[str, Any], path: str, body: dict[str, Any]) -> bytes:
            mock.script([turn])
            _, ids[name], data = post(proxy, path, body)
            assert ids[name], name
            return data

        # Translated streams, both directions (relay).
        run(
            "relay-anthropic",
            {"replay": CHAT_REPLAY},
            "/v1/messages",
            messages("gpt-4o", stream=True),
        )
        run(
            "relay-chat",
            {"replay": ANTHROPIC_REPLAY},
            "/v1/chat/completions",
            chat("claude-3-opus", stream=True),
        )
        # Passed through, both protocols (forward).
        run(
            "forward-chat",
            {"replay": CHAT_REPLAY},
            "/v1/chat/completions",
            chat("gpt-4o", stream=True),
        )
        run(
            "forward-anthropic",
            {"replay": ANTHROPIC_REPLAY},
            "/v1/messages",
            messages("claude-3-opus", stream=True),
        )
        # Non-streamed, translated.
        run(
            "json",
            {
                "text": "hi",
                "usage": {"prompt_tokens": 120, "completion_tokens": 9, "cached_tokens": 100},
            },
            "/v1/messages",
            messages("gpt-4o", stream=False),
        )
        # A cut stream, and an upstream that reports no usage.
        run(
            "cut",
            {
                "text": "Hello there, a longer reply.",
                "chunk_size": 3,
                "cut": True,
                "usage": {"prompt_tokens": 50, "completion_tokens": 7},
            },
            "/v1/messages",
            messages("gpt-4o", stream=True),
        )
        run(
            "no-usage",
            {"raw": without_usage(CHAT_REPLAY)},
            "/v1/messages",
            messages("gpt-4o", stream=True),
        )
        # Errors before the first byte: the upstream's, and the proxy's own (no route).
        run(
            "early-error",
            {
                "error": {
                    "status": 429,
                    "type": "rate_limit_exceeded",
                    "message": "Slow down",
                    "retry_after": "30",
                }
            },
            "/v1/messages",
            messages("gpt-4o", stream=True),
        )
        _, ids["bad-request"], _ = post(proxy, "/v1/messages", {"model": "gpt-4o", "messages": 3})
        samples = metrics(proxy)
    records = rows(ledger)  # after a clean shutdown: nothing lost

    assert set(records) >= set(ids.values())
    got = {name: records[rid] for name, rid in ids.items()}
    for name in ("relay-anthropic", "forward-chat"):
        assert tokens_of(got[name]) == chat_tokens, name
    for name in ("relay-chat", "forward-anthropic"):
        assert tokens_of(got[name]) == anthropic_tokens, name
    for name in ("relay-anthropic", "relay-chat", "forward-chat", "forward-anthropic", "json"):
        rec = got[name]
        assert (rec.status, rec.error_type, rec.estimated) == (200, None, False), name
        assert rec.ttfb_ms is not None and 0 < rec.ttfb_ms <= rec.latency_ms, name
    assert got["relay-anthropic"].protocol == "anthropic" and got["relay-chat"].protocol == "chat"
    assert (
        got["forward-anthropic"].provider == "anthropic"
        and got["forward-chat"].provider == "openai"
    )
    assert got["relay-anthropic"].stream and not got["json"].stream
    assert tokens_of(got["json"]) == Tokens(input=20, output=9, cache_read=100)
    assert got["cut"].estimated and got["cut"].error_type is not None
    # Cut before its counts: what the client was sent before the cut, and the estimate.
    assert 0 < got["cut"].output_tokens <= text_tokens("Hello there, a longer reply.")
    assert got["cut"].input_tokens > 0
    # No counts at all: the text the client was sent, counted by the proxy.
    replayed = "".join(
        choice["delta"].get("content") or ""
        for event in fixture_events(CHAT_REPLAY)
        for choice in event.get("choices", ())
    )
    assert got["no-usage"].estimated
    assert got["no-usage"].output_tokens == text_tokens(replayed) > 0
    assert got["no-usage"].input_tokens > 0  # the proxy's estimate
    assert (got["early-error"].status, got["early-error"].error_type) == (429, "rate_limit_error")
    assert got["early-error"].ttfb_ms is not None
    assert (got["bad-request"].status, got["bad-request"].error_type) == (
        400,
        "invalid_request_error",
    )
    assert got["relay-anthropic"].cost_usd is not None and got["relay-anthropic"].cost_usd > 0

    # The counters say the same as the ledger.
    assert total(samples, "hydra_requests_total") == len(ids)
    assert total(samples, "hydra_requests_total", status="429") == 1
    for kind in ("input", "output", "cache_read"):
        assert total(samples, "hydra_tokens_total", kind=kind) == sum(
            getattr(r, f"{kind}_tokens") for r in got.values()
        ), kind
    assert total(samples, "hydra_requests_estimated_usage_total") == 2
    assert total(samples, "hydra_open_streams") == 0

    # The access-log lines name the model, the provider, the usage and the real error.
    line = log_line(proxy, ids["relay-anthropic"])
    assert (line["model"], line["provider"], line["stream"]) == ("gpt-4o", "openai", "1")
    assert (int(line["in"]), int(line["out"])) == (chat_tokens.input, chat_tokens.output)
    assert "error" not in line and line["stop"] == "end_turn"
    line = log_line(proxy, ids["json"])
    assert (line["model"], line["provider"], line["in"], line["out"], line["cache_read"]) == (
        "gpt-4o",
        "openai",
        "20",
        "9",
        "100",
    )
    line = log_line(proxy, ids["forward-anthropic"])
    assert (line["model"], line["provider"]) == ("claude-3-opus", "anthropic")
    assert (int(line["in"]), int(line["out"])) == (anthropic_tokens.input, anthropic_tokens.output)
    line = log_line(proxy, ids["early-error"])
    assert line["error"] == "rate_limit_error" and line["model"] == "gpt-4o"
    assert log_line(proxy, ids["no-usage"])["estimated"] == "1"


def load(proxy: ProxyServer, count: int) -> None:
    """`count` streamed requests from 8 threads (any worker may take each); the caller
    scripts the mock's replies."""

    def one(_: int) -> int:
        return post(proxy, "/v1/messages", messages("gpt-4o", stream=True))[0]

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(one, range(count))) == [200] * count


def check_adds_up(records: dict[str, UsageRecord], count: int) -> None:
    expected = chat_fixture_tokens(CHAT_REPLAY)
    assert len(records) == count
    assert sum(r.output_tokens for r in records.values()) == count * expected.output


def test_two_workers_add_up_on_sqlite(
    mock: MockServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    count = 40
    with start_proxy(mock, ledger, "--workers", "2") as proxy:
        mock.script([{"replay": CHAT_REPLAY}] * count)
        load(proxy, count)
        samples = settled_metrics(proxy, count)
    assert total(samples, "hydra_requests_total") == count
    assert (
        total(samples, "hydra_tokens_total", kind="output")
        == count * chat_fixture_tokens(CHAT_REPLAY).output
    )
    check_adds_up(rows(ledger), count)
    # The usage command reports the same.
    assert cli.main(["usage", "--ledger", ledger, "--by", "model", "--json"]) == 0
    report = orjson.loads(capsys.readouterr().out)
    assert [(r["key"], r["requests"]) for r in report["rows"]] == [("gpt-4o", count)]
    assert report["total"]["output_tokens"] == count * chat_fixture_tokens(CHAT_REPLAY).output
    assert cli.main(["usage", "--ledger", ledger, "--by", "day"]) == 0
    table = capsys.readouterr().out  # a table, one row per UTC day
    assert time.strftime("%Y-%m-%d", time.gmtime()) in table and str(count) in table


def test_a_worker_whose_accounting_cannot_start_stops_the_server(
    mock: MockServer, tmp_path: Path
) -> None:
    """Not a worker that serves on counting nothing (granian keeps serving when the app's
    lifespan raises: with two workers, a scrape then sums one worker's share)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    proxy = start_proxy(mock, f"sqlite:{blocker / 'usage.sqlite3'}", "--workers", "2")
    with pytest.raises(RuntimeError, match="cannot open the SQLite ledger"), proxy:
        pass


psycopg = pytest.importorskip("psycopg", reason="psycopg not installed (extra 'postgres')")


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    from support.postgres_server import postgres_server, wait_ready, why_unavailable

    missing = why_unavailable()
    if missing is not None:
        pytest.skip(missing)
    with postgres_server() as url:
        wait_ready(url)
        yield url


def test_two_workers_add_up_on_postgres(mock: MockServer, postgres: str) -> None:
    with psycopg.connect(postgres, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS hydra_usage")
    count = 40
    with start_proxy(mock, postgres, "--workers", "2") as proxy:
        mock.script([{"replay": CHAT_REPLAY}] * count)
        load(proxy, count)
        assert total(settled_metrics(proxy, count), "hydra_requests_total") == count
    check_adds_up(rows(postgres), count)


def test_two_proxies_add_up_in_one_postgres_ledger(mock: MockServer, postgres: str) -> None:
    with psycopg.connect(postgres, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS hydra_usage")
    count = 30
    with start_proxy(mock, postgres) as one, start_proxy(mock, postgres) as two:
        mock.script([{"replay": CHAT_REPLAY}] * (2 * count))
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda p: load(p, count), (one, two)))
    check_adds_up(rows(postgres), 2 * count)


def get(
    proxy: ProxyServer, path: str, headers: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, data


def test_dashboard_and_metrics_behind_the_proxy_keys(mock: MockServer, tmp_path: Path) -> None:
    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    key = "team-key-1"
    env = {"HYDRA_USAGE_LEDGER": ledger, "HYDRA_PROXY_KEYS": f"other-key,{key}"}
    with ProxyServer(mock.url + "/v1", env=env) as proxy:
        mock.script([{"replay": CHAT_REPLAY}])
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
        conn.request(
            "POST",
            "/v1/messages",
            orjson.dumps(messages("gpt-4o", stream=True)),
            {"content-type": "application/json", "x-api-key": key},
        )
        response = conn.getresponse()
        assert response.status == 200
        response.read()
        request_id = response.getheader("x-request-id")
        basic = "Basic " + base64.b64encode(f"me:{key}".encode()).decode()
        wrong = "Basic " + base64.b64encode(b"me:not-a-key").decode()
        # The page and its assets hold no data: public; the data needs a key.
        for path in ("/dashboard", "/dashboard/static/dashboard.js"):
            assert get(proxy, path, {})[0] == 200
        for headers in ({}, {"authorization": wrong}):
            status, got, _ = get(proxy, "/dashboard/data.json", headers)
            assert status == 401 and "www-authenticate" not in got
        status, got, page = get(proxy, "/dashboard", {})
        assert b"dashboard.js" in page
        assert status == 200 and got["content-type"].startswith("text/html")
        assert got["content-security-policy"].startswith("default-src 'self'")
        # data.json reads the ledger: the record is there once the writer's batch is in.
        deadline = time.monotonic() + 10
        while True:
            status, got, body = get(proxy, "/dashboard/data.json", {"authorization": basic})
            assert status == 200 and got["content-type"] == "application/json"
            doc = orjson.loads(body)
            if doc["records"] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert [r["request_id"] for r in doc["latest"]] == [request_id]
        assert get(proxy, "/metrics", {})[0] == 401
        status, _, text = get(proxy, "/metrics", {"authorization": f"Bearer {key}"})
        assert status == 200 and b"hydra_requests_total" in text
    records = rows(ledger)
    assert records[request_id].key_id == client_key_id(key)
    assert key not in (tmp_path / "usage.sqlite3").read_bytes().decode("latin-1")
