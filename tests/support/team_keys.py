"""Helpers of the named-key tests: a proxy with a key store, known prices and two
providers on the embedded mock (the second a fallback), and requests in each protocol."""

from __future__ import annotations

import http.client
import time
from pathlib import Path
from typing import Any

import orjson

from hydra_proxy.mock import MockServer
from hydra_proxy.team import manage
from hydra_proxy.team.store import open_key_store
from hydra_proxy.usage.backends import open_ledger
from support.servers import ProxyServer

ADMIN_KEY = "admin-KEY-for-tests-0123456789"
# USD per million tokens: one input token of priced-a costs exactly one cent.
PRICES = {"priced-a": (10_000, 20_000), "priced-b": (20_000, 40_000), "cheap-a": (1, 2)}

CONFIG = """
[providers.a]
kind = "chat"
base_url = "{mock}/v1"
api_key_optional = true

[providers.b]
kind = "chat"
base_url = "{mock}/v1"
api_key_optional = true

[[routes]]
name = "priced"
match = "priced-*"
provider = "a"
model = "priced-a"
fallback = [{{ provider = "b", model = "priced-b" }}]

[[routes]]
name = "cheap"
match = "cheap-*"
provider = "a"
model = "cheap-a"

[[routes]]
name = "free"
match = "free-*"
provider = "a"
"""


def config(mock: MockServer, directory: Path) -> Path:
    path = directory / "hydra.toml"
    text = CONFIG.format(mock=mock.url)
    for model, (inp, out) in PRICES.items():
        text += f'\n[pricing."{model}"]\ninput = {inp}\noutput = {out}\n'
    path.write_text(text)
    return path


def cost(model: str, prompt: int, completion: int) -> float:
    inp, out = PRICES[model]
    return (prompt * inp + completion * out) / 1_000_000


def create(ledger: str, name: str, **options: Any) -> str:
    """A new key in the store of `ledger`; its secret."""
    store = open_key_store(ledger)
    try:
        return manage.create(store, name, time.time(), **options)[1]
    finally:
        store.close()


def proxy(
    mock: MockServer, ledger: str, directory: Path, impl: str = "auto", **env: str
) -> ProxyServer:
    environ = {
        "HYDRA_USAGE_LEDGER": ledger,
        "HYDRA_CONFIG": str(config(mock, directory)),
        "HYDRA_ADMIN_KEY": ADMIN_KEY,
        "HYDRA_KEYS_REFRESH": "0.2",
        "HYDRA_RETRIES": "0",
        **env,
    }
    return ProxyServer(mock.url + "/v1", "--log-level", "info", impl=impl, env=environ)


def turn(prompt: int = 5, completion: int = 10, **extra: Any) -> dict[str, Any]:
    return {
        "text": "hello there",
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
        **extra,
    }


class Reply:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def json(self) -> Any:
        return orjson.loads(self.body)

    @property
    def message(self) -> str:
        error = self.json()["error"]
        return str(error["message"])


def call(
    port: int,
    method: str,
    path: str,
    body: Any = None,
    key: str | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    sent = {"content-type": "application/json", **(headers or {})}
    if key is not None:
        sent["x-api-key"] = key
    if path.startswith("/v1/messages"):
        sent["anthropic-version"] = "2023-06-01"
    elif path.startswith("/v1beta/") and key is not None:  # a Gemini client's own header
        sent["x-goog-api-key"] = sent.pop("x-api-key")
    conn.request(method, path, None if body is None else orjson.dumps(body), sent)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, data)


def messages(
    model: str = "priced-x", *, stream: bool = True, max_tokens: int = 10
) -> dict[str, Any]:
    return {"model": model, "max_tokens": max_tokens, "stream": stream,
            "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip


def chat(model: str = "priced-x", *, stream: bool = True, max_tokens: int = 10) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "stream": stream,
                            "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


def responses(model: str = "priced-x", *, max_tokens: int = 10) -> dict[str, Any]:
    return {"model": model, "max_output_tokens": max_tokens, "stream": True, "store": False,
            "input": "hi"}  # fmt: skip


def ledger_rows(ledger: str, key_name: str, wait_for: int) -> list[Any]:
    """The ledger's rows of a key, once it holds `wait_for` of them (written in batches)."""
    reader = open_ledger(ledger, start=False)
    deadline = time.monotonic() + 10
    while True:
        rows = reader.query(key_name=key_name)
        if len(rows) >= wait_for or time.monotonic() > deadline:
            return rows
        time.sleep(0.05)
