"""Key pools: round-robin, cooldowns after 429 (retry-after, bounded) and 401/403 (longer,
logged once with the masked key), the soonest key when all rest. Clock injected."""

from __future__ import annotations

import email.utils
import logging

import pytest

from hydra_proxy.config import Key, KeyPool, Provider, mask, parse_retry_after
from hydra_proxy.config.keys import (
    AUTH_COOLDOWN,
    MAX_RATE_LIMIT_COOLDOWN,
    MIN_RATE_LIMIT_COOLDOWN,
    RATE_LIMIT_COOLDOWN,
)

SECRETS = ["sk-aaaaaaaaaaaaaaaa0001", "sk-bbbbbbbbbbbbbbbb0002", "sk-cccccccccccccccc0003"]


def pool(count: int = 3) -> KeyPool:
    return KeyPool("deepseek", [Key(i, f"K{i + 1}", SECRETS[i]) for i in range(count)])


def test_round_robin() -> None:
    keys = pool()
    assert [keys.acquire(0.0).env for _ in range(7)] == [  # type: ignore[union-attr]
        "K1", "K2", "K3", "K1", "K2", "K3", "K1",
    ]  # fmt: skip


def test_429_rests_a_key_for_retry_after_then_it_returns() -> None:
    keys = pool()
    first = keys.acquire(100.0)
    assert first is not None
    assert keys.report(first, 429, "20", 100.0) == 20.0
    taken = [keys.acquire(105.0) for _ in range(4)]
    assert [k.env for k in taken if k] == ["K2", "K3", "K2", "K3"]
    assert keys.acquire(120.0) is not None  # K1 is back at 100 + 20
    assert {keys.acquire(120.0).env for _ in range(3)} == {"K1", "K2", "K3"}  # type: ignore[union-attr]


def test_retry_after_is_bounded_and_defaulted() -> None:
    keys = pool(1)
    key = keys.acquire(0.0)
    assert key is not None
    assert keys.report(key, 429, None, 0.0) == RATE_LIMIT_COOLDOWN
    assert keys.report(key, 429, "0", 0.0) == MIN_RATE_LIMIT_COOLDOWN
    assert keys.report(key, 429, "86400", 0.0) == MAX_RATE_LIMIT_COOLDOWN
    assert keys.report(key, 429, "soon", 0.0) == RATE_LIMIT_COOLDOWN
    date = email.utils.formatdate(1_000_045.0, usegmt=True)
    assert parse_retry_after(date, now_wall=1_000_000.0) == 45.0
    assert parse_retry_after("1.5") == 1.5 and parse_retry_after("nan") is None


def test_auth_failures_rest_longer_and_are_logged_once_masked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    keys = pool(2)
    bad = keys.acquire(0.0)
    assert bad is not None
    with caplog.at_level(logging.WARNING, logger="hydra_proxy.keys"):
        assert keys.report(bad, 401, None, 0.0) == AUTH_COOLDOWN
        keys.report(bad, 403, None, AUTH_COOLDOWN + 1)  # still bad: not logged again
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "K1 (sk-…0001)" in warnings[0] and "401" in warnings[0]
    assert all(secret not in caplog.text for secret in SECRETS)
    # Only K2 is handed out while K1 rests.
    assert {keys.acquire(10.0).env for _ in range(4)} == {"K2"}  # type: ignore[union-attr]
    # A success makes K1 a normal key again; a later failure is worth a new warning.
    keys.report(bad, 200, None, 2 * AUTH_COOLDOWN + 2)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="hydra_proxy.keys"):
        keys.report(bad, 401, None, 2 * AUTH_COOLDOWN + 3)
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1


def test_upstream_faults_do_not_rest_the_key() -> None:
    keys = pool(1)
    key = keys.acquire(0.0)
    assert key is not None
    for status in (None, 500, 529, 400):
        assert keys.report(key, status, "30", 0.0) == 0.0
    assert keys.acquire(0.0) == key


def test_all_keys_resting_gives_the_soonest() -> None:
    keys = pool(2)
    one, two = keys.acquire(0.0), keys.acquire(0.0)
    assert one is not None and two is not None
    keys.report(one, 429, "50", 0.0)
    keys.report(two, 429, "10", 0.0)
    assert keys.acquire(5.0) is None
    assert keys.soonest(5.0) == (two, 5.0)
    assert keys.acquire(10.0) == two
    empty = KeyPool("ollama", [])
    assert empty.acquire(0.0) is None and empty.soonest(0.0) is None and len(empty) == 0


def test_pool_from_a_provider_and_masking(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("K1", SECRETS[0])
    monkeypatch.setenv("K2", SECRETS[0])  # the same key twice counts once
    monkeypatch.setenv("K3", "")  # empty: no key
    monkeypatch.delenv("K4", raising=False)
    provider = Provider(
        "deepseek",
        "openai",
        "https://api.deepseek.com/v1",
        api_key_envs=("K1", "K2", "K3", "K4"),
        dotenv_keys=(("K4", SECRETS[1]),),
    )
    keys = KeyPool.for_provider(provider)
    assert [(k.env, k.value) for k in keys.keys] == [("K1", SECRETS[0]), ("K4", SECRETS[1])]
    assert SECRETS[0] not in repr(keys) and SECRETS[0] not in repr(keys.keys[0])
    assert str(keys.keys[0]) == "K1 (sk-…0001)"
    assert mask("sk-ant-api03-abcdefghijkl") == "sk-…ijkl"
    assert mask("short-key") == "…"  # too short to show any of it
    assert mask("AIzaSyA-0123456789abcd") == "…abcd"
