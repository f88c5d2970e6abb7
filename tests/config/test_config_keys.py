"""Key pools: round-robin, rests by cause: a 429's retry-after (bounded) or, without one, a
short backoff growing with each 429 in a row; a rejected key (401, an authentication error
body) longer, logged once with the masked key; a 403/404 about a model or a request never;
the soonest key when all rest. Clock injected."""

from __future__ import annotations

import email.utils
import logging

import pytest

from hydra_proxy.config import Key, KeyPool, Provider, mask, parse_retry_after
from hydra_proxy.config.keys import (
    AUTH_COOLDOWN,
    BACKOFF_FIRST,
    BACKOFF_MAX,
    MAX_RATE_LIMIT_COOLDOWN,
    MIN_RATE_LIMIT_COOLDOWN,
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


def test_retry_after_is_bounded_and_without_one_a_short_growing_backoff() -> None:
    keys = pool(1)
    key = keys.acquire(0.0)
    assert key is not None
    assert keys.report(key, 429, "0", 0.0) == MIN_RATE_LIMIT_COOLDOWN
    assert keys.report(key, 429, "86400", 0.0) == MAX_RATE_LIMIT_COOLDOWN
    # No hint (or an unreadable one): 1, 2, 4 ... s, bounded, never an invented 30 s first.
    backoff = [keys.report(key, 429, hint, 0.0) for hint in (None, "soon", None, None)]
    assert backoff == [BACKOFF_FIRST, 2 * BACKOFF_FIRST, 4 * BACKOFF_FIRST, 8 * BACKOFF_FIRST]
    assert max(keys.report(key, 429, None, 0.0) for _ in range(40)) == BACKOFF_MAX
    # A success starts it over; so does a 429 that says when to come back.
    keys.report(key, 200, None, 0.0)
    assert keys.report(key, 429, None, 0.0) == BACKOFF_FIRST
    assert keys.report(key, 429, "3", 0.0) == 3.0
    assert keys.report(key, 429, None, 0.0) == BACKOFF_FIRST
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
        # Still bad (an authentication error, here with a 403): not logged again.
        assert keys.report(bad, 403, None, AUTH_COOLDOWN + 1, AUTH_403) == AUTH_COOLDOWN
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


AUTH_403 = b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}'
# What upstreams answer for a model or a request the account may not use.
MODEL_REFUSALS = [
    (403, b'{"error":{"message":"You do not have access to model gpt-5-pro","type":'
          b'"invalid_request_error","param":null,"code":"model_not_found"}}'),
    (404, b'{"error":{"message":"The model `gpt-9` does not exist or you do not have access '
          b'to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}'),
    (403, b'{"type":"error","error":{"type":"permission_error","message":"Your API key does '
          b'not have permission to use the specified resource."}}'),
    (403, b'{"error":{"code":403,"message":"Permission denied on resource project x.",'
          b'"status":"PERMISSION_DENIED"}}'),
    (403, b""),
    (404, b"<html><title>404 Not Found</title></html>"),
]  # fmt: skip


@pytest.mark.parametrize(("status", "body"), MODEL_REFUSALS)
def test_a_refused_model_or_request_never_rests_the_key(status: int, body: bytes) -> None:
    keys = pool(2)
    one, two = keys.acquire(0.0), keys.acquire(0.0)
    assert one is not None and two is not None
    assert keys.report(one, status, None, 0.0, body) == 0.0
    assert keys.report(two, status, None, 0.0, body) == 0.0
    assert {keys.acquire(1.0) for _ in range(4)} == {one, two}  # both still serve


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (401, b""),
        (401, b'{"error":{"message":"Incorrect API key provided","code":"invalid_api_key"}}'),
        (403, AUTH_403),
        (400, b'{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT",'
              b'"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo",'
              b'"reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}'),
    ],
)  # fmt: skip
def test_a_rejected_key_rests_long(status: int, body: bytes) -> None:
    keys = pool(2)
    bad = keys.acquire(0.0)
    assert bad is not None
    assert keys.report(bad, status, None, 0.0, body) == AUTH_COOLDOWN
    assert {keys.acquire(10.0).env for _ in range(3)} == {"K2"}  # type: ignore[union-attr]


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
