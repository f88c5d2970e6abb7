"""A session keeps its pool key: KeyPool.acquire by session, and end to end through the
proxy (the mock records which key each request carried)."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from hydra_proxy.config import keys as keys_module
from hydra_proxy.config.keys import Key, KeyPool
from hydra_proxy.mock import MockServer
from hydra_proxy.mock.app import key_hash
from support.servers import ProxyServer

KEY_1, KEY_2, KEY_3 = "sk-pool-key-number-one", "sk-pool-key-number-two", "sk-pool-key-three"


def pool() -> KeyPool:
    return KeyPool("p", [Key(0, "K1", KEY_1), Key(1, "K2", KEY_2), Key(2, "K3", KEY_3)])


def test_a_session_keeps_its_key_while_others_rotate() -> None:
    keys = pool()
    first = keys.acquire(0.0, "session-a")
    assert first is not None
    assert [keys.acquire(0.0, "session-a") for _ in range(5)] == [first] * 5
    others = {keys.acquire(0.0) for _ in range(3)}  # no session: in turn, every key
    assert len(others) == 3
    b = keys.acquire(0.0, "session-b")
    assert b is not None and keys.acquire(1.0, "session-b") is b


def test_a_session_moves_when_its_key_rests_and_stays_on_the_new_one() -> None:
    keys = pool()
    first = keys.acquire(0.0, "s")
    assert first is not None
    assert keys.report(first, 429, "30", 0.0) == 30.0
    moved = keys.acquire(1.0, "s")
    assert moved is not None and moved is not first
    assert keys.acquire(2.0, "s") is moved
    # Rested back: the session stays where it moved (its state is there now).
    assert keys.acquire(40.0, "s") is moved


def test_workers_pick_the_same_key_for_a_session_and_spread_sessions() -> None:
    """Each worker process has its own pool: a session's key is the same in all of them,
    also after a rest moves it, and sessions share the keys about evenly."""
    one, two = pool(), pool()
    sessions = [f"session-{n}" for n in range(300)]
    picked = [one.acquire(0.0, s) for s in sessions]
    assert picked == [two.acquire(0.0, s) for s in sessions]
    counts = {k.env: sum(p is not None and p.env == k.env for p in picked) for k in one.keys}
    assert all(60 <= n <= 140 for n in counts.values()), counts
    first = picked[0]
    assert first is not None
    for keys in (one, two):
        same = next(k for k in keys.keys if k.index == first.index)
        keys.report(same, 429, "30", 0.0)
    moved = one.acquire(1.0, sessions[0]), two.acquire(1.0, sessions[0])
    assert moved[0] is not None and moved[1] is not None
    assert moved[0].index == moved[1].index != first.index


def test_every_key_resting_is_none_for_a_session_too() -> None:
    keys = pool()
    for key in keys.keys:
        keys.report(key, 429, "10", 0.0)
    assert keys.acquire(1.0, "s") is None


def test_the_pool_remembers_a_bounded_number_of_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keys_module, "MAX_SESSIONS", 2)
    keys = pool()
    a = keys.acquire(0.0, "a")
    keys.acquire(0.0, "b")
    keys.acquire(0.0, "c")  # "a" is forgotten: the least recently used
    assert len(keys._sessions) == 2 and "a" not in keys._sessions
    assert a is not None


CONFIG = """
[server]
provider = "pool"

[providers.pool]
kind = "chat"
base_url = "{url}/v1"
api_key_env = ["K1", "K2", "K3"]
"""


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def ask(proxy: ProxyServer, session: str | None) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    headers = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
    if session is not None:
        headers["x-claude-code-session-id"] = session
    body = {"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}
    conn.request("POST", "/v1/messages", orjson.dumps(body), headers)
    response = conn.getresponse()
    response.read()
    return response.status


def test_sessions_keep_their_keys_through_the_proxy(mock: MockServer, tmp_path: Path) -> None:
    mock.clear()
    config = tmp_path / "hydra.toml"
    config.write_text(CONFIG.format(url=mock.url), encoding="utf-8")
    env = {"K1": KEY_1, "K2": KEY_2, "K3": KEY_3}
    hashes = {key_hash(k) for k in (KEY_1, KEY_2, KEY_3)}
    with ProxyServer(mock.url + "/v1", "--config", str(config), env=env) as proxy:
        for _ in range(4):
            for session in ("alpha", "beta", None):
                assert ask(proxy, session) == 200
        sent = [r["key_hashes"]["authorization"] for r in mock.requests()]
        alpha, beta, anonymous = sent[0::3], sent[1::3], sent[2::3]
        assert len(set(alpha)) == 1 and len(set(beta)) == 1, sent
        assert set(sent) <= hashes and len(set(anonymous)) > 1  # no session: in turn

        # alpha's key answers 429: alpha moves to another key, once, and stays there.
        mock.clear()
        mock.script([{"error": {"status": 429, "retry_after": "30"}}])
        for _ in range(3):
            assert ask(proxy, "alpha") == 200
        after = [r["key_hashes"]["authorization"] for r in mock.requests()]
        assert after[0] == alpha[0] and len(after) == 4
        assert after[1] != alpha[0] and after[1:] == [after[1]] * 3
