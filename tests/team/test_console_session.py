"""The console's session over HTTP: a key exchanged for an HttpOnly, SameSite=Strict cookie;
changes through the admin API need the session's anti-forgery header; a session ends with
its credential (a member revoked or rotated) and cannot be forged or stretched; who may see
what (admin, member, viewer, an open proxy)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hydra_proxy.mock import MockServer
from hydra_proxy.server.endpoints.console import SignInThrottle
from hydra_proxy.team import manage
from hydra_proxy.team.store import open_key_store
from hydra_proxy.usage.dashboard import session
from support.servers import ProxyServer
from support.team_keys import ADMIN_KEY, Reply, call, create, messages, proxy, turn


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def sign_in(port: int, key: str) -> tuple[Reply, dict[str, str]]:
    """The sign-in's reply, and the headers a later request of its session sends."""
    reply = call(port, "POST", "/dashboard/session", {"key": key})
    if reply.status != 200:
        return reply, {}
    cookie = reply.headers["set-cookie"].split(";", 1)[0]
    return reply, {"cookie": cookie, "x-hydra-csrf": reply.json()["csrf"]}


def test_session_cookies_cannot_be_forged_or_stretched() -> None:
    key = session.session_key(b"k" * 32)
    value, made = session.issue(key, "member", "alice", "bound", 1000.0)
    assert session.verify(key, value, 1001.0) == made
    assert session.verify(key, value, 1000.0 + session.LIFETIME) is None  # over
    assert session.verify(session.session_key(b"x" * 32), value, 1001.0) is None
    head, _, sig = value.split(".")
    other, _ = session.issue(key, "admin", None, "bound", 1000.0)
    assert session.verify(key, f"{head}.{other.split('.')[1]}.{sig}", 1001.0) is None
    assert session.verify(key, value + "x", 1001.0) is None
    assert session.verify(key, "v1..", 1001.0) is None
    header = f"a=b; {session.COOKIE}={value}; c=d".encode()
    assert session.cookie_value(header) == value
    assert session.csrf_ok(made, made.csrf.encode())
    assert not session.csrf_ok(made, None) and not session.csrf_ok(made, b"0" * 32)
    text = session.set_cookie(value, secure=True).decode()
    assert text.endswith("; Path=/; Max-Age=28800; HttpOnly; SameSite=Strict; Secure")


def test_failed_sign_ins_are_throttled_per_address() -> None:
    throttle = SignInThrottle(limit=3, window=60.0, addresses=2)
    for i in range(3):
        assert throttle.wait("10.0.0.1", 100.0 + i) == 0
        throttle.failed("10.0.0.1", 100.0 + i)
    assert throttle.wait("10.0.0.1", 103.0) == 57
    assert throttle.wait("10.0.0.2", 103.0) == 0  # another address is not held up
    assert throttle.wait("10.0.0.1", 160.5) == 0  # the first failure is a minute old
    throttle.failed("10.0.0.2", 104.0)
    throttle.failed("10.0.0.3", 105.0)  # past two addresses the oldest is forgotten
    assert throttle.wait("10.0.0.1", 106.0) == 0


def test_admin_session_changes_need_the_csrf_header(mock: MockServer, tmp_path: Path) -> None:
    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    alice = create(ledger, "alice", team="core", budget=5)
    with proxy(mock, ledger, tmp_path) as server:
        port = server.port
        page = call(port, "GET", "/dashboard")
        assert page.status == 200 and b"console.js" in page.body
        assert page.headers["content-security-policy"].startswith("default-src 'self';")
        assert page.headers["x-frame-options"] == "DENY"
        assert call(port, "GET", "/dashboard/session").status == 401
        assert call(port, "GET", "/dashboard/data.json").status == 401
        wrong, _ = sign_in(port, "hk-not-a-key")
        assert wrong.status == 401 and "unknown key" in wrong.message
        assert sign_in(port, "not-a-key-at-all")[0].message.endswith("not a key of this proxy)")
        reply, admin = sign_in(port, ADMIN_KEY)
        assert reply.status == 200
        who = reply.json()
        assert who["role"] == "admin" and who["admin_api"] is True and len(who["csrf"]) == 32
        attrs = reply.headers["set-cookie"].split("; ")
        assert attrs[0].startswith(session.COOKIE + "=") and ADMIN_KEY not in attrs[0]
        assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= set(attrs)
        assert "Secure" not in attrs  # plain HTTP on loopback; over TLS it is set
        assert ADMIN_KEY.encode() not in reply.body
        cookie_only = {"cookie": admin["cookie"]}
        # Reading needs only the session; a change needs its header too.
        assert call(port, "GET", "/admin/keys", headers=cookie_only).status == 200
        change = {"budget": 7}
        refused = call(port, "PATCH", "/admin/keys/alice", change, headers=cookie_only)
        assert refused.status == 403 and "x-hydra-csrf" in refused.message
        forged = {**cookie_only, "x-hydra-csrf": "0" * 32}
        assert call(port, "PATCH", "/admin/keys/alice", change, headers=forged).status == 403
        done = call(port, "PATCH", "/admin/keys/alice", change, headers=admin)
        assert done.status == 200 and done.json()["budget_usd"] == 7.0
        # What a cross-site form can send: no JSON content type, no header.
        form = {**cookie_only, "content-type": "application/x-www-form-urlencoded"}
        assert call(port, "POST", "/admin/keys", {"name": "x"}, headers=form).status == 400
        assert call(port, "POST", "/admin/keys", {"name": "x"}, headers=cookie_only).status == 403
        created = call(port, "POST", "/admin/keys", {"name": "carol"}, headers=admin)
        assert created.status == 201 and created.json()["secret"].startswith("hk-")
        # A tampered cookie is nobody.
        tampered = {"cookie": admin["cookie"][:-2] + "xx", "x-hydra-csrf": admin["x-hydra-csrf"]}
        assert call(port, "GET", "/dashboard/session", headers=tampered).status == 401
        assert call(port, "GET", "/admin/keys", headers=tampered).status == 401
        # A member's session sees only its own data and never the admin API.
        reply, member = sign_in(port, alice)
        assert reply.json()["role"] == "member" and reply.json()["name"] == "alice"
        mine = reply.json()["member"]
        assert mine["budget_usd"] == 7.0 and mine["left_usd"] == 7.0 and mine["team"] == "core"
        assert call(port, "GET", "/admin/keys", headers=member).status == 401
        mock.script([turn(5, 10)])
        assert call(port, "POST", "/v1/messages", messages(), alice).status == 200
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            doc = call(port, "GET", "/dashboard/data.json", headers=member).json()
            if doc["records"]:
                break
            time.sleep(0.1)
        assert doc["scope"] == "alice" and [r["member"] for r in doc["latest"]] == ["alice"]
        # Rotating the member's key ends its sessions; so does signing out (the cookie).
        assert call(port, "POST", "/admin/keys/alice/rotate", {}, headers=admin).status == 200
        time.sleep(0.1)
        assert call(port, "GET", "/dashboard/session", headers=member).status == 401
        out = call(port, "DELETE", "/dashboard/session", headers=admin)
        assert out.status == 200 and "Max-Age=0" in out.headers["set-cookie"]
        # Guessing: an address may fail 10 times a minute, then even the right key waits.
        guesses = [sign_in(port, "hk-guess")[0].status for _ in range(9)]
        assert guesses == [401] * 8 + [429]  # two failed above
        held, _ = sign_in(port, ADMIN_KEY)
        assert held.status == 429 and int(held.headers["retry-after"]) > 0
        assert "too many failed sign-ins" in held.message
        log = server.log_text()
    assert ADMIN_KEY not in log and alice not in log


def test_a_session_holds_across_workers_until_its_member_is_revoked(
    mock: MockServer, tmp_path: Path
) -> None:
    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    bob = create(ledger, "bob")
    with proxy(mock, ledger, tmp_path, HYDRA_PROXY_WORKERS="2") as server:
        _, member = sign_in(server.port, bob)
        _, admin = sign_in(server.port, ADMIN_KEY)
        for _ in range(8):  # new connections: both workers answer, each knows the session
            assert call(server.port, "GET", "/dashboard/session", headers=member).status == 200
            assert call(server.port, "GET", "/admin/keys", headers=admin).status == 200
        assert call(server.port, "DELETE", "/admin/keys/bob", headers=admin).status == 200
        time.sleep(1.0)  # the other worker reloads the keys (HYDRA_KEYS_REFRESH 0.2 s)
        for _ in range(4):
            assert call(server.port, "GET", "/dashboard/session", headers=member).status == 401
        assert server.log_text().count("worker ready") == 2
        again, _ = sign_in(server.port, bob)
        assert again.status == 401 and "revoked" in again.message


def test_viewer_and_open_consoles(mock: MockServer, tmp_path: Path) -> None:
    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    env = {"HYDRA_USAGE_LEDGER": ledger, "HYDRA_PROXY_KEYS": "team-key-1"}
    with ProxyServer(mock.url + "/v1", env=env) as server:
        reply, viewer = sign_in(server.port, "team-key-1")
        assert reply.json()["role"] == "viewer" and reply.json()["admin_api"] is False
        assert call(server.port, "GET", "/dashboard/data.json", headers=viewer).status == 200
        assert call(server.port, "GET", "/admin/keys", headers=viewer).status == 404
    with ProxyServer(mock.url + "/v1", env={"HYDRA_USAGE_LEDGER": ledger}) as server:
        who = call(server.port, "GET", "/dashboard/session")
        assert who.status == 200 and who.json()["role"] == "open"
        assert call(server.port, "GET", "/dashboard/data.json").status == 200


def test_with_the_ledger_off_the_admin_still_manages_keys(mock: MockServer, tmp_path: Path) -> None:
    # The keys live in the default SQLite file (the proxy's own home).
    with proxy(mock, "off", tmp_path) as server:
        reply, admin = sign_in(server.port, ADMIN_KEY)
        assert reply.json()["ledger"] is False
        assert call(server.port, "GET", "/dashboard/data.json", headers=admin).status == 404
        created = call(server.port, "POST", "/admin/keys", {"name": "dave"}, headers=admin)
        assert created.status == 201
        assert call(server.port, "GET", "/admin/keys", headers=admin).json()["keys"][0]["name"] == (
            "dave"
        )


def test_identity_tokens_sign_in_until_they_expire(mock: MockServer, tmp_path: Path) -> None:
    """An admin by the token's claim manages keys from the console, audited by name; a
    member of the team with no key record sees their page; each session ends with its token."""
    pytest.importorskip("jwt", reason="PyJWT not installed (extra 'identity')")
    from test_team_identity import SIGNERS, jwks, with_identity

    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    store = open_key_store(ledger)
    try:
        manage.set_team(store, "core", budget=100)
        manage.create(store, "alice", time.time(), team="core")
    finally:
        store.close()
    source = tmp_path / "jwks.json"
    source.write_bytes(jwks(*SIGNERS.values()))
    cfg = with_identity(mock, tmp_path, str(source))
    signer = SIGNERS["ES256"]
    admin_token = signer.token("carol", "core", groups=["proxy-admins"])
    with proxy(mock, ledger, tmp_path, HYDRA_CONFIG=str(cfg)) as server:
        reply, admin = sign_in(server.port, admin_token)
        assert reply.status == 200 and reply.json()["role"] == "admin"
        max_age = int(reply.headers["set-cookie"].split("Max-Age=")[1].split(";")[0])
        assert 0 < max_age <= 600  # the token's own lifetime, not the session's 8 hours
        assert admin_token not in reply.headers["set-cookie"]
        done = call(server.port, "PATCH", "/admin/keys/alice", {"rpm": 9}, headers=admin)
        assert done.status == 200
        newest = call(server.port, "GET", "/admin/audit", headers=admin).json()["entries"][0]
        assert (newest["actor"], newest["action"]) == ("jwt:carol (console)", "key.set")
        reply, member = sign_in(server.port, signer.token("dave", "core", groups=["staff"]))
        who = reply.json()
        assert (who["role"], who["name"], who["member"]["team"]) == ("member", "dave", "core")
        assert who["member"]["team_limits"]["budget_usd"] == 100.0
        assert call(server.port, "GET", "/admin/keys", headers=member).status == 401
        expired = signer.token(
            "carol", "core", groups=["proxy-admins"], exp=int(time.time()) - 3600
        )
        late, _ = sign_in(server.port, expired)
        assert late.status == 401 and "expired" in late.message
