"""Named keys' limits and rights, end to end on the proxy process and the embedded mock:
requests and tokens per minute refused exactly at their bound (429 with retry-after, in
each client protocol), concurrent streams, model rights on the requested and the upstream
name (403), unknown, revoked, expired and rotated keys (401), revocation effective on the
next request, the rotation's grace period, the admin API (and never a secret in a listing,
a log or the database), and HYDRA_PROXY_KEYS still working beside named keys."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hydra_proxy.mock import MockServer
from support.servers import PYTHON_DIR, ProxyServer
from support.team_keys import ADMIN_KEY, call, chat, create, messages, proxy, responses, turn


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(mock: MockServer) -> None:
    mock.clear()


@pytest.fixture
def ledger(tmp_path: Path) -> str:
    return f"sqlite:{tmp_path / 'usage.sqlite3'}"


def test_rpm_refused_exactly_past_the_bound(mock: MockServer, ledger: str, tmp_path: Path) -> None:
    secret = create(ledger, "alice", rpm=3)
    other = create(ledger, "bob", rpm=3)
    with proxy(mock, ledger, tmp_path) as server:
        mock.script([turn() for _ in range(4)])
        assert [call(server.port, "POST", "/v1/messages", messages(), secret).status
                for _ in range(3)] == [200, 200, 200]  # fmt: skip
        refused = call(server.port, "POST", "/v1/messages", messages(), secret)
        assert refused.status == 429
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert refused.json()["error"]["type"] == "rate_limit_error"
        assert (
            "key 'alice'" in refused.message and "limit of 3 requests per minute" in refused.message
        )
        for body, path in ((chat(), "/v1/chat/completions"), (responses(), "/v1/responses")):
            again = call(server.port, "POST", path, body, secret)
            assert again.status == 429 and again.headers["retry-after"]
            assert again.json()["error"]["code"] == "rate_limit_exceeded"
        # Another key is not affected.
        assert call(server.port, "POST", "/v1/messages", messages(), other).status == 200


def test_tpm_settled_from_real_usage(mock: MockServer, ledger: str, tmp_path: Path) -> None:
    # 15 tokens a request: the first two fit under 25 (0, then 15 counted), the third not.
    secret = create(ledger, "alice", tpm=25)
    with proxy(mock, ledger, tmp_path) as server:
        mock.script([turn(5, 10) for _ in range(3)])
        assert call(server.port, "POST", "/v1/messages", messages(), secret).status == 200
        assert call(server.port, "POST", "/v1/messages", messages(), secret).status == 200
        refused = call(server.port, "POST", "/v1/messages", messages(), secret)
        assert refused.status == 429 and "limit of 25 tokens per minute" in refused.message
        assert 1 <= int(refused.headers["retry-after"]) <= 60


def test_concurrent_streams(mock: MockServer, ledger: str, tmp_path: Path) -> None:
    secret = create(ledger, "alice", streams=2)
    with proxy(mock, ledger, tmp_path) as server:
        # Replies slow enough that all four are in flight together on a loaded machine.
        mock.script([turn(ttfb_ms=3000) for _ in range(4)])
        with ThreadPoolExecutor(4) as pool:
            replies = list(
                pool.map(lambda _: call(server.port, "POST", "/v1/messages", messages(), secret),
                         range(4))
            )  # fmt: skip
        statuses = sorted(r.status for r in replies)
        assert statuses == [200, 200, 429, 429]
        assert any("limit of 2 concurrent streams" in r.message for r in replies if r.status == 429)
        mock.clear()
        mock.script([turn()])  # the slots came back
        assert call(server.port, "POST", "/v1/messages", messages(), secret).status == 200


def test_model_rights_on_requested_and_upstream_names(
    mock: MockServer, ledger: str, tmp_path: Path
) -> None:
    # priced-* routes to priced-a, falling back to priced-b: a key allowed only priced-a's
    # upstream model gets no fallback; free-* is not allowed at all.
    secret = create(ledger, "alice", models="priced-*")
    narrow = create(ledger, "bob", models="priced-x,priced-a")
    with proxy(mock, ledger, tmp_path) as server:
        mock.script([turn()])
        assert call(server.port, "POST", "/v1/messages", messages(), secret).status == 200
        for path, body in (("/v1/messages", messages("free-model")),
                           ("/v1/chat/completions", chat("free-model"))):  # fmt: skip
            refused = call(server.port, "POST", path, body, secret)
            assert refused.status == 403
            assert refused.json()["error"]["type"] == "permission_error"
            assert "may not use model 'free-model'" in refused.message
        listed = call(server.port, "GET", "/v1/models", key=narrow).json()["data"]
        assert [m["id"] for m in listed] == ["priced-a"]  # what the key may use only
        everything = call(server.port, "GET", "/v1/models", key=create_plain(ledger)).json()
        assert len(everything["data"]) > 1
        mock.clear()
        mock.script([{"error": {"status": 503}}, turn()])
        cut_off = call(server.port, "POST", "/v1/messages", messages(), narrow)
        assert cut_off.status >= 500  # priced-b, its fallback, is not allowed to it
        assert [r["body"]["model"] for r in mock.requests()] == ["priced-a"]


def create_plain(ledger: str) -> str:
    """A key without model rights (created while the proxy runs: seen on its refresh)."""
    secret = create(ledger, f"plain{time.monotonic_ns()}")
    time.sleep(0.5)
    return secret


def test_unknown_revoked_expired_keys(mock: MockServer, ledger: str, tmp_path: Path) -> None:
    gone = create(ledger, "gone", expires="2020-01-01")
    secret = create(ledger, "alice")
    with proxy(mock, ledger, tmp_path) as server:
        port = server.port
        for key, words in (("hk-not-a-key", "unknown key"), (gone, "expired at 2020-01-01"),
                           (None, "invalid or missing"), ("sk-other", "invalid or missing")):  # fmt: skip
            for path, body in (("/v1/messages", messages()), ("/v1/chat/completions", chat())):
                refused = call(port, "POST", path, body, key)
                assert refused.status == 401, (key, refused.body)
                assert refused.json()["error"]["type"] == "authentication_error"
                assert words in refused.message
        mock.script([turn()])
        assert call(port, "POST", "/v1/messages", messages(), secret).status == 200
        # Revoked through the admin API: refused on the very next request.
        revoked = call(port, "DELETE", "/admin/keys/alice", key=ADMIN_KEY)
        assert revoked.status == 200 and revoked.json()["revoked"]
        refused = call(port, "POST", "/v1/messages", messages(), secret)
        assert refused.status == 401 and "key 'alice' was revoked" in refused.message
        assert len(mock.requests()) == 1


def test_revoked_from_the_command_line(mock: MockServer, ledger: str, tmp_path: Path) -> None:
    secret = create(ledger, "alice")
    with proxy(mock, ledger, tmp_path) as server:
        mock.script([turn()])
        assert call(server.port, "POST", "/v1/messages", messages(), secret).status == 200
        done = subprocess.run(
            [sys.executable, "-m", "hydra_proxy", "keys", "--ledger", ledger, "revoke", "alice"],
            capture_output=True, text=True, env={"PYTHONPATH": str(PYTHON_DIR)}, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        deadline = time.monotonic() + 5  # the worker polls the store every 0.2 s here
        while call(server.port, "GET", "/v1/models", key=secret).status == 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert call(server.port, "POST", "/v1/messages", messages(), secret).status == 401


def test_rotation_grace_period(mock: MockServer, ledger: str, tmp_path: Path) -> None:
    old = create(ledger, "alice")
    with proxy(mock, ledger, tmp_path) as server:
        port = server.port
        rotated = call(port, "POST", "/admin/keys/alice/rotate", {"grace_seconds": 1.5}, ADMIN_KEY)
        assert rotated.status == 200
        new = rotated.json()["secret"]
        assert new.startswith("hk-") and new != old
        mock.script([turn(), turn(), turn()])
        assert call(port, "POST", "/v1/messages", messages(), old).status == 200
        assert call(port, "POST", "/v1/messages", messages(), new).status == 200
        time.sleep(1.6)
        refused = call(port, "POST", "/v1/messages", messages(), old)
        assert refused.status == 401 and "was rotated" in refused.message
        assert call(port, "POST", "/v1/messages", messages(), new).status == 200


def test_admin_api(mock: MockServer, ledger: str, tmp_path: Path) -> None:
    with proxy(mock, ledger, tmp_path) as server:
        port = server.port
        assert call(port, "GET", "/admin/keys").status == 401
        assert call(port, "GET", "/admin/keys", key="hk-guess").status == 401
        created = call(port, "POST", "/admin/keys", {"name": "erin", "budget": 3, "rpm": 2,
                                                     "models": ["claude-*"]}, ADMIN_KEY)  # fmt: skip
        assert created.status == 201, created.body
        secret = created.json()["secret"]
        assert created.json()["budget_usd"] == 3.0 and created.json()["models"] == ["claude-*"]
        assert call(port, "POST", "/admin/keys", {"name": "erin"}, ADMIN_KEY).status == 400
        changed = call(port, "PATCH", "/admin/keys/erin", {"rpm": "none", "models": "priced-*"},
                       ADMIN_KEY)  # fmt: skip
        assert changed.status == 200 and changed.json()["rpm"] is None
        mock.script([turn()])
        assert call(port, "POST", "/v1/messages", messages(), secret).status == 200  # at once
        team = call(port, "PUT", "/admin/keys/_teams/core", {"budget": 10}, ADMIN_KEY)
        assert team.status == 200 and team.json()["budget_usd"] == 10.0
        listing = call(port, "GET", "/admin/keys", key=ADMIN_KEY)
        assert [k["name"] for k in listing.json()["keys"]] == ["erin"]
        assert secret.encode() not in listing.body and b"hash" not in listing.body
        assert call(port, "GET", "/admin/keys/nobody", key=ADMIN_KEY).status == 404
        assert call(port, "GET", "/admin/keys", key=secret).status == 401  # a member is no admin
        log = server.log_tail()
    assert secret not in log and ADMIN_KEY not in log
    database = Path(ledger.removeprefix("sqlite:"))
    stored = b"".join(p.read_bytes() for p in database.parent.glob("usage.sqlite3*"))
    assert secret.encode() not in stored and secret[3:].encode() not in stored


def test_proxy_keys_beside_named_keys(mock: MockServer, ledger: str, tmp_path: Path) -> None:
    secret = create(ledger, "alice")
    with proxy(mock, ledger, tmp_path, HYDRA_PROXY_KEYS="plain-team-key") as server:
        mock.script([turn(), turn()])
        assert call(server.port, "POST", "/v1/messages", messages(), "plain-team-key").status == 200
        assert call(server.port, "POST", "/v1/messages", messages(), secret).status == 200
        assert call(server.port, "POST", "/v1/messages", messages(), "wrong").status == 401


def test_no_store_no_keys(mock: MockServer, tmp_path: Path) -> None:
    """Without a key store and an admin key the proxy answers without keys, as before."""
    ledger = f"sqlite:{tmp_path / 'none.sqlite3'}"
    env = {"HYDRA_USAGE_LEDGER": ledger}
    with ProxyServer(mock.url + "/v1", env=env) as server:
        mock.script([turn()])
        assert call(server.port, "POST", "/v1/messages", messages("free-x")).status == 200
        assert call(server.port, "GET", "/admin/keys", key=ADMIN_KEY).status == 404


def test_key_passthrough_excludes_named_keys(ledger: str, tmp_path: Path) -> None:
    from hydra_proxy.config import Settings
    from hydra_proxy.config.check import startup_problems

    settings = Settings(
        usage_ledger=ledger, key_passthrough=True, signing_key_file=str(tmp_path / "sk")
    )
    assert startup_problems(settings, {}) == []
    create(ledger, "alice")
    problems = startup_problems(settings, {})
    assert [p.message for p in problems if "named keys" in p.message]
    # A public bind is guarded by named keys as by HYDRA_PROXY_KEYS.
    public = Settings(usage_ledger=ledger, host="0.0.0.0", signing_key_file=str(tmp_path / "sk"))
    assert startup_problems(public, {}) == []
    empty = Settings(usage_ledger=f"sqlite:{tmp_path / 'none.sqlite3'}", host="0.0.0.0",
                     signing_key_file=str(tmp_path / "sk"))  # fmt: skip
    assert any("refusing to listen" in p.message for p in startup_problems(empty, {}))
