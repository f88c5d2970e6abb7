"""A named key's limits hold on every model-request entry of the app (MODEL_ENTRIES: Messages,
Chat, Responses, both Gemini methods of both API versions), end to end on the proxy
process (both transducer implementations) and the embedded mock: model rights (403),
requests per minute and concurrent streams (429), the budget (refused once spent, never
more than one request's worth past it); count_tokens of both protocols passes the key's
rights and counts against its rpm; every model listing shows only what the key may use."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from hydra_proxy.mock import MockServer
from hydra_proxy.server.app import MODEL_ENTRIES, ModelEntry
from support import entries
from support.implementations import IMPLEMENTATIONS, NATIVE_MISSING, _native
from support.servers import ProxyServer
from support.team_keys import call, cost, create, ledger_rows, proxy, turn

# Key names per entry: each test's key is its own, created before the proxy starts.
NAMES = {entry.path: f"e{i}" for i, entry in enumerate(MODEL_ENTRIES)}
KEYS: dict[str, dict[str, Any]] = {
    "rights": {"models": "priced-*"},
    "rpm": {"rpm": 2},
    "streams": {"streams": 1},
    # One request reserves about $0.80 (at its fallback's prices: its ~8 input tokens at two
    # cents, 16 output tokens at four) and costs $0.25 (5 in, 10 out at the first attempt's):
    # three fit under $1.50, the fourth ($0.75 spent) must not.
    "budget": {"budget": 1.5},
    # A request reserves about 25 tokens (its input's bound, 16 of output) and uses 15.
    "tpm": {"tpm": 60},
}


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def rig(
    request: pytest.FixtureRequest, mock: MockServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ProxyServer, str, dict[str, str]]]:
    """A proxy on its own ledger (a budget is seeded from it), and its keys' secrets."""
    if request.param == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    directory = tmp_path_factory.mktemp("entries")
    ledger = f"sqlite:{directory / 'usage.sqlite3'}"
    found = {
        f"{check}-{name}": create(ledger, f"{check}-{name}", **options)
        for check, options in KEYS.items()
        for name in NAMES.values()
    }
    found["narrow"] = create(ledger, "narrow", models="priced-x,priced-a")
    for path in COUNTERS:
        found[path] = create(ledger, f"counter{len(found)}", rpm=2, models="priced-*")
    with proxy(mock, ledger, directory, impl=request.param) as running:
        yield running, ledger, found


@pytest.fixture
def server(rig: tuple[ProxyServer, str, dict[str, str]]) -> ProxyServer:
    return rig[0]


@pytest.fixture
def secrets(rig: tuple[ProxyServer, str, dict[str, str]]) -> tuple[str, dict[str, str]]:
    return rig[1], rig[2]


def key(secrets: tuple[str, dict[str, str]], check: str, entry: ModelEntry) -> str:
    return secrets[1][f"{check}-{NAMES[entry.path]}"]


def ask(server: ProxyServer, entry: ModelEntry, secret: str, model: str = "priced-x") -> Any:
    path, body = entry.request(model, stream=entry.streams is None)
    if entry.protocol == "chat":
        body["stream_options"] = {"include_usage": True}
    return call(server.port, "POST", path, body, secret)


def refusal(entry: ModelEntry, reply: Any) -> dict[str, Any]:
    return entries.error_of(entry.request("m")[0], reply.json())


@pytest.mark.parametrize("entry", entries.ENTRIES)
def test_model_rights(
    server: ProxyServer, mock: MockServer, secrets: tuple[str, dict[str, str]], entry: ModelEntry
) -> None:
    mock.clear()
    refused = ask(server, entry, key(secrets, "rights", entry), "free-model")
    assert refused.status == 403
    assert "may not use model 'free-model'" in refusal(entry, refused)["message"]
    assert not mock.requests()
    mock.script([turn()])
    assert ask(server, entry, key(secrets, "rights", entry)).status == 200


@pytest.mark.parametrize("entry", entries.ENTRIES)
def test_requests_per_minute(
    server: ProxyServer, mock: MockServer, secrets: tuple[str, dict[str, str]], entry: ModelEntry
) -> None:
    mock.clear()
    mock.script([turn() for _ in range(3)])
    secret = key(secrets, "rpm", entry)
    statuses = [ask(server, entry, secret).status for _ in range(3)]
    assert statuses[:2] == [200, 200] and statuses[2] == 429
    assert len(mock.requests()) == 2
    # The refusal is recorded as one: its cause, no spend, no model it never asked.
    rows = ledger_rows(secrets[0], f"rpm-{NAMES[entry.path]}", 3)
    assert [(r.refusal, r.cost_usd) for r in rows if r.status == 429] == [("rpm", 0.0)]
    assert all(r.refusal is None for r in rows if r.status == 200)
    (refused,) = [r for r in rows if r.status == 429]
    assert refused.target_model == "" and refused.requested_model == "priced-x"


@pytest.mark.parametrize("entry", entries.ENTRIES)
def test_concurrent_streams(
    server: ProxyServer, mock: MockServer, secrets: tuple[str, dict[str, str]], entry: ModelEntry
) -> None:
    mock.clear()
    mock.script([turn(ttfb_ms=800) for _ in range(3)])
    secret = key(secrets, "streams", entry)
    with ThreadPoolExecutor(3) as pool:
        replies = list(pool.map(lambda _: ask(server, entry, secret), range(3)))
    assert sorted(r.status for r in replies) == [200, 429, 429]
    mock.clear()
    mock.script([turn()])
    assert ask(server, entry, secret).status == 200  # the slot came back


@pytest.mark.parametrize("entry", entries.ENTRIES)
def test_budget(
    server: ProxyServer, mock: MockServer, secrets: tuple[str, dict[str, str]], entry: ModelEntry
) -> None:
    mock.clear()
    mock.script([turn(5, 10) for _ in range(5)])
    secret = key(secrets, "budget", entry)
    statuses = [ask(server, entry, secret).status for _ in range(5)]
    assert statuses[:3] == [200, 200, 200]
    # Each protocol's exhausted-quota answer (team/refusals.py; Gemini's FAILED_PRECONDITION).
    assert all(s in (402, 429, 400) for s in statuses[3:])
    rows = ledger_rows(secrets[0], f"budget-{NAMES[entry.path]}", 5)
    spent = [r.cost_usd for r in rows if r.status == 200]
    assert spent == [pytest.approx(cost("priced-a", 5, 10))] * 3


COUNTERS = [p.replace("{model}", "{}") for p in entries.COUNT_PATHS]


@pytest.mark.parametrize("path", COUNTERS, ids=["messages", "gemini"])
def test_count_tokens_passes_rights_and_rpm(
    server: ProxyServer, secrets: tuple[str, dict[str, str]], path: str
) -> None:
    secret = secrets[1][path]
    gemini = path.startswith("/v1beta/")
    body: dict[str, Any] = entries.body_for("/v1beta/models/x:countTokens" if gemini else path)

    def count(model: str) -> Any:
        return call(server.port, "POST", path.format(model), {**body, "model": model}, secret)

    refused = count("free-model")
    assert refused.status == 403
    assert "may not use model 'free-model'" in refused.json()["error"]["message"]
    first, second, third = (count("priced-x") for _ in range(3))
    assert [first.status, second.status] == [200, 200]  # count_tokens: its own rpm key
    assert third.status == 429


def test_every_listing_shows_only_what_the_key_may_use(
    server: ProxyServer, secrets: tuple[str, dict[str, str]]
) -> None:
    narrow = secrets[1]["narrow"]
    openai = call(server.port, "GET", "/v1/models", key=narrow).json()["data"]
    gemini = call(server.port, "GET", "/v1beta/models", key=narrow).json()["models"]
    assert [m["id"] for m in openai] == ["priced-a"]
    assert [m["name"] for m in gemini] == ["models/priced-a"]
    assert call(server.port, "GET", "/v1beta/models/free-a", key=narrow).status == 404
    everything = call(server.port, "GET", "/v1beta/models", key=secrets[1]["rpm-e0"]).json()
    assert len(everything["models"]) > 1


@pytest.mark.parametrize("entry", entries.ENTRIES)
def test_tokens_per_minute_reserve_before_they_settle(
    server: ProxyServer, mock: MockServer, secrets: tuple[str, dict[str, str]], entry: ModelEntry
) -> None:
    # Twelve at once, each in flight for 0.6 s: only those whose reservations fit get in
    # (all twelve did when tpm counted settled tokens only).
    mock.clear()
    mock.script([turn(5, 10, ttfb_ms=600) for _ in range(12)])
    secret = key(secrets, "tpm", entry)
    with ThreadPoolExecutor(12) as pool:
        replies = list(pool.map(lambda _: ask(server, entry, secret), range(12)))
    admitted = sum(r.status == 200 for r in replies)
    assert 2 <= admitted <= 4
    assert all(r.status == 429 for r in replies if r.status != 200)
    assert admitted * 15 <= 60 + 15  # past the limit by at most one request's worth
