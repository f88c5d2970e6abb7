"""Usage from every upstream protocol, end to end: recorded replies with reasoning tokens
(DeepSeek's Chat stream, gpt-5 on the Responses API, Gemini 2.5 thinking) through the proxy,
translated and passed through, streamed and not; then the ledger rows and the Prometheus
counters against the usage the recordings report. Both transducer implementations."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_server_usage import log_line, messages, metrics, post, rows, total

from hydra_proxy.mock import MockServer
from hydra_proxy.usage.record import Tokens, UsageRecord
from hydra_proxy.usage.upstream_usage import (
    tokens_from_chat,
    tokens_from_gemini,
    tokens_from_responses,
)
from support.gemini_fixtures import load_json, stream_chunks
from support.implementations import IMPLEMENTATIONS, NATIVE_MISSING, _native
from support.servers import ProxyServer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
DEEPSEEK = "chat/vercel-deepseek-reasoning-content.jsonl"
GPT5_STREAM = "responses/pydantic-gpt5-stream-reasoning-function-call.sse"
GPT5_REPLY = "responses/pydantic-gpt5-reasoning-function-call-replay.1.response.json"
GEMINI_STREAM = "gemini/pydantic-gemini25pro-stream-thought-parts.sse"
GEMINI_REPLY = "gemini/vercel-google-reasoning.json"


def chat_usage(name: str) -> Tokens:
    lines = (FIXTURES / name).read_bytes().splitlines()
    usages = [orjson.loads(line)["usage"] for line in lines if b'"usage":{' in line]
    return tokens_from_chat(usages[-1])


def responses_stream_usage(name: str) -> Tokens:
    events = [
        orjson.loads(line[5:])
        for line in (FIXTURES / name).read_bytes().splitlines()
        if line.startswith(b"data:")
    ]
    (done,) = [e for e in events if e["type"] == "response.completed"]
    return tokens_from_responses(done["response"]["usage"])


def responses_reply_usage(name: str) -> Tokens:
    return tokens_from_responses(orjson.loads((FIXTURES / name).read_bytes())["body"]["usage"])


def gemini_stream_usage(name: str) -> Tokens:
    chunks = stream_chunks(name.removeprefix("gemini/"))
    return tokens_from_gemini([c for c in chunks if "usageMetadata" in c][-1]["usageMetadata"])


def gemini_reply_usage(name: str) -> Tokens:
    return tokens_from_gemini(load_json(name.removeprefix("gemini/"))["usageMetadata"])


def config(mock_url: str) -> str:
    return f"""
[providers.deepseek]
kind = "chat"
base_url = "{mock_url}/v1"
api_key_optional = true

[providers.gpt]
kind = "responses"
base_url = "{mock_url}/v1"
api_key_optional = true

[providers.gem]
kind = "gemini"
base_url = "{mock_url}/v1beta"
api_key_optional = true

[[routes]]
match = "deepseek-*"
provider = "deepseek"

[[routes]]
match = "gpt-5*"
provider = "gpt"

[[routes]]
match = "gemini-*"
provider = "gem"
"""


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer(fixtures=FIXTURES) as server:
        yield server


def chat(model: str, *, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "stream": stream,
        "messages": [{"role": "user", "content": "Say hello."}],
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


def responses(model: str, *, stream: bool) -> dict[str, Any]:
    return {"model": model, "stream": stream, "input": "Say hello."}


# name: (replayed fixture, client path, request body, the fixture's own usage)
CASES: dict[str, tuple[str, str, dict[str, Any], Tokens]] = {
    "deepseek-stream-translated": (
        DEEPSEEK, "/v1/messages", messages("deepseek-reasoner", stream=True), chat_usage(DEEPSEEK)
    ),
    "deepseek-stream-passthrough": (
        DEEPSEEK, "/v1/chat/completions", chat("deepseek-reasoner", stream=True),
        chat_usage(DEEPSEEK),
    ),
    "gpt5-stream-translated": (
        GPT5_STREAM, "/v1/messages", messages("gpt-5", stream=True),
        responses_stream_usage(GPT5_STREAM),
    ),
    "gpt5-stream-to-chat": (
        GPT5_STREAM, "/v1/chat/completions", chat("gpt-5", stream=True),
        responses_stream_usage(GPT5_STREAM),
    ),
    "gpt5-stream-passthrough": (
        GPT5_STREAM, "/v1/responses", responses("gpt-5", stream=True),
        responses_stream_usage(GPT5_STREAM),
    ),
    "gpt5-json-translated": (
        GPT5_REPLY, "/v1/messages", messages("gpt-5", stream=False),
        responses_reply_usage(GPT5_REPLY),
    ),
    "gpt5-json-passthrough": (
        GPT5_REPLY, "/v1/responses", responses("gpt-5", stream=False),
        responses_reply_usage(GPT5_REPLY),
    ),
    "gemini-stream-translated": (
        GEMINI_STREAM, "/v1/messages", messages("gemini-2.5-pro", stream=True),
        gemini_stream_usage(GEMINI_STREAM),
    ),
    "gemini-stream-to-responses": (
        GEMINI_STREAM, "/v1/responses", responses("gemini-2.5-pro", stream=True),
        gemini_stream_usage(GEMINI_STREAM),
    ),
    "gemini-json-translated": (
        GEMINI_REPLY, "/v1/chat/completions", chat("gemini-2.5-pro", stream=False),
        gemini_reply_usage(GEMINI_REPLY),
    ),
}  # fmt: skip


def tokens_of(rec: UsageRecord) -> Tokens:
    return Tokens(
        rec.input_tokens,
        rec.output_tokens,
        rec.cache_read_tokens,
        rec.cache_write_tokens,
        rec.reasoning_tokens,
    )


def test_the_recordings_report_reasoning() -> None:
    """The cases test something: every recording's own usage has reasoning tokens."""
    for name, (_, _, _, tokens) in CASES.items():
        assert 0 < tokens.reasoning <= tokens.output, name


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    from support.postgres_server import postgres_server, wait_ready, why_unavailable

    pytest.importorskip("psycopg", reason="psycopg not installed (extra 'postgres')")
    missing = why_unavailable()
    if missing is not None:
        pytest.skip(missing)
    with postgres_server() as url:
        wait_ready(url)
        yield url


@pytest.mark.parametrize(
    ("impl", "backend"), [(impl, "sqlite") for impl in IMPLEMENTATIONS] + [("native", "postgres")]
)
def test_usage_of_every_upstream_protocol(
    mock: MockServer, tmp_path: Path, impl: str, backend: str, request: pytest.FixtureRequest
) -> None:
    if impl == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    mock.clear()
    if backend == "postgres":
        ledger: str = request.getfixturevalue("postgres_url")
    else:
        ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    (tmp_path / "hydra.toml").write_text(config(mock.url), encoding="utf-8")
    args = ("--config", str(tmp_path / "hydra.toml"), "--log-level", "info")
    env = {"HYDRA_USAGE_LEDGER": ledger}
    ids: dict[str, str] = {}
    with ProxyServer(mock.url + "/v1", *args, impl=impl, env=env) as proxy:
        for name, (fixture, path, body, _) in CASES.items():
            mock.script([{"replay": fixture}])
            status, ids[name], _ = post(proxy, path, body)
            assert status == 200 and ids[name], name
        samples = metrics(proxy)  # one worker: its own scrape flushes its counts first
    records = rows(ledger)

    got = {name: records[rid] for name, rid in ids.items()}
    for name, (_, _, _, tokens) in CASES.items():
        rec = got[name]
        assert tokens_of(rec) == tokens, name
        assert (rec.status, rec.error_type, rec.estimated) == (200, None, False), name
    assert (
        got["gpt5-json-passthrough"].provider == "gpt" and not got["gpt5-json-passthrough"].stream
    )
    assert got["gemini-stream-to-responses"].protocol == "responses"
    line = log_line(proxy, ids["gemini-stream-translated"])  # the access log says it too
    assert int(line["reasoning"]) == CASES["gemini-stream-translated"][3].reasoning

    # The counters say the same as the ledger, reasoning included.
    assert total(samples, "hydra_requests_total") == len(CASES)
    for kind in ("input", "output", "cache_read", "reasoning"):
        assert total(samples, "hydra_tokens_total", kind=kind) == sum(
            getattr(r, f"{kind}_tokens") for r in got.values()
        ), kind
    assert total(samples, "hydra_tokens_total", kind="reasoning", provider="gem") == (
        gemini_stream_usage(GEMINI_STREAM).reasoning * 2
        + gemini_reply_usage(GEMINI_REPLY).reasoning
    )
    assert total(samples, "hydra_requests_estimated_usage_total") == 0
