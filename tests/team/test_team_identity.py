"""Members from an identity provider: JWTs the tests sign with RSA and EC keys they make,
verified against a JWKS file or URL, accepted on every model entry of the app as a named
key is (with the record's or the team's limits, in the ledger under the member's name),
refused in each client protocol's error shape when expired, from another issuer, for
another audience, badly signed, unsigned (alg none) or HMAC-signed with the public key;
admins by a claim, audited under their name; the key set fetched again for a new key id,
rate-limited against made-up ones, bounded in size and time."""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

jwt = pytest.importorskip("jwt", reason="PyJWT not installed (extra 'identity')")
pytest.importorskip("cryptography", reason="cryptography not installed (extra 'identity')")

from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec, rsa  # noqa: E402

from hydra_proxy.config import ConfigError, load  # noqa: E402
from hydra_proxy.mock import MockServer  # noqa: E402
from hydra_proxy.server import app  # noqa: E402
from hydra_proxy.team import identity, manage  # noqa: E402
from hydra_proxy.team.store import open_key_store  # noqa: E402
from support.team_keys import (  # noqa: E402
    ADMIN_KEY,
    call,
    chat,
    config,
    ledger_rows,
    messages,
    proxy,
    responses,
    turn,
)

ISSUER = "https://login.example.test/"
AUDIENCE = "hydra-proxy"


class Signer:
    """A key pair of one algorithm, its public half as a JWK."""

    def __init__(self, algorithm: str, kid: str) -> None:
        self.algorithm, self.kid = algorithm, kid
        if algorithm == "RS256":
            self.private: Any = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            jwk = jwt.algorithms.RSAAlgorithm.to_jwk(self.private.public_key(), as_dict=True)
        else:
            self.private = ec.generate_private_key(ec.SECP256R1())
            jwk = jwt.algorithms.ECAlgorithm.to_jwk(self.private.public_key(), as_dict=True)
        self.jwk = {**jwk, "kid": kid, "use": "sig", "alg": algorithm}

    def token(self, member: str = "bob", team: str | None = "core", **claims: Any) -> str:
        now = int(time.time())
        body: dict[str, Any] = {"iss": ISSUER, "aud": AUDIENCE, "sub": member, "iat": now,
                                "exp": now + 600, **claims}  # fmt: skip
        if team is not None:
            body["team"] = team
        body = {k: v for k, v in body.items() if v is not None}
        return str(jwt.encode(body, self.private, self.algorithm, headers={"kid": self.kid}))

    def public_pem(self) -> bytes:
        return bytes(
            self.private.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )


SIGNERS = {"RS256": Signer("RS256", "rsa-1"), "ES256": Signer("ES256", "ec-1")}
STRANGER = Signer("RS256", "rsa-1")  # another key under a listed key id


def jwks(*signers: Signer) -> bytes:
    return orjson.dumps({"keys": [s.jwk for s in signers]})


IDENTITY = """
[identity]
jwks = "{jwks}"
issuer = "{issuer}"
audience = "{audience}"
team_claim = "team"
admin_claim = "groups"
admin_value = "proxy-admins"
"""


def with_identity(mock: MockServer, directory: Path, source: str) -> Path:
    path = directory / "identity.toml"  # not the proxy helper's own file: it rewrites that
    path.write_text(
        config(mock, directory).read_text()
        + IDENTITY.format(jwks=source, issuer=ISSUER, audience=AUDIENCE)
    )
    return path


# Every model entry of the app, from its own table: (method, path, protocol).
MODEL_ENTRIES = [(e.method, e.request("priced-x")[0], e.protocol) for e in app.MODEL_ENTRIES]
BODIES = {
    "anthropic": lambda model: messages(model, stream=False),
    "chat": lambda model: chat(model, stream=False),
    "responses": lambda model: responses(model),
    "gemini": lambda model: {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "generationConfig": {"maxOutputTokens": 10},  # a budget reserves its max output
    },
}


def refusal(protocol: str, reply: Any) -> tuple[str, str]:
    """(error kind, message) of a refusal, read as the entry's clients read it: each
    protocol's own error shape."""
    doc = reply.json()
    if protocol == "anthropic":
        assert doc["type"] == "error", doc
        return doc["error"]["type"], doc["error"]["message"]
    if protocol == "gemini":
        assert set(doc["error"]) >= {"code", "message", "status"}, doc
        assert doc["error"]["code"] == reply.status
        return doc["error"]["status"], doc["error"]["message"]
    assert "type" not in doc and set(doc["error"]) >= {"message", "type", "code"}, doc
    return doc["error"]["type"], doc["error"]["message"]


def request(port: int, entry: tuple[str, str, str], model: str, token: str) -> Any:
    method, path, protocol = entry
    if protocol == "gemini":
        path = path.replace("priced-x", model)
        return call(port, method, path, BODIES[protocol](model), headers={"x-goog-api-key": token})
    return call(
        port, method, path, BODIES[protocol](model), headers={"authorization": f"Bearer {token}"}
    )


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(scope="module")
def served(mock: MockServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, str]]:
    """A proxy taking tokens signed by either key of a JWKS file: (its port, its ledger).
    The store has team core (a budget) and a record for alice (priced models only)."""
    directory = tmp_path_factory.mktemp("identity")
    ledger = f"sqlite:{directory / 'usage.sqlite3'}"
    store = open_key_store(ledger)
    try:
        manage.set_team(store, "core", budget=100)
        manage.create(store, "alice", time.time(), team="core", models="priced-*")
    finally:
        store.close()
    source = directory / "jwks.json"
    source.write_bytes(jwks(*SIGNERS.values()))
    cfg = with_identity(mock, directory, str(source))
    with proxy(mock, ledger, directory, HYDRA_CONFIG=str(cfg)) as server:
        yield server.port, ledger


def test_entry_table_covers_every_protocol() -> None:
    assert {p for _, _, p in MODEL_ENTRIES} == set(BODIES)


def test_tokens_are_members_on_every_entry(mock: MockServer, served: tuple[int, str]) -> None:
    port, ledger = served
    count = 0
    for entry in MODEL_ENTRIES:
        for signer in SIGNERS.values():
            mock.script([turn(5, 10)])
            reply = request(port, entry, "priced-x", signer.token("bob", "core"))
            assert reply.status == 200, (entry, signer.algorithm, reply.body)
            count += 1
    # A member with no record is counted under its name and its team.
    rows = ledger_rows(ledger, "bob", count)
    assert len(rows) == count and {r.team for r in rows} == {"core"}
    listed = call(
        port, "GET", "/v1/models", headers={"authorization": f"Bearer {SIGNERS['RS256'].token()}"}
    )
    assert listed.status == 200


@pytest.mark.parametrize("entry", [pytest.param(e, id=e[1]) for e in MODEL_ENTRIES])
def test_a_members_record_holds_for_its_token(
    mock: MockServer, served: tuple[int, str], entry: tuple[str, str, str]
) -> None:
    """alice's record allows priced models only, and puts her in core: her token too."""
    port, ledger = served
    token = SIGNERS["ES256"].token("alice", "elsewhere")
    before = len(ledger_rows(ledger, "alice", 0))
    mock.script([turn(5, 10)])
    assert request(port, entry, "priced-x", token).status == 200
    denied = request(port, entry, "cheap-x", token)
    assert denied.status == 403, denied.body
    kind, message = refusal(entry[2], denied)
    assert kind in ("permission_error", "PERMISSION_DENIED") and "'alice'" in message
    rows = ledger_rows(ledger, "alice", before + 1)
    assert {r.team for r in rows} == {"core"}


def test_a_revoked_record_refuses_its_token(served: tuple[int, str]) -> None:
    port, _ = served
    assert (
        call(port, "POST", "/admin/keys", {"name": "frank", "team": "core"}, ADMIN_KEY).status
        == 201
    )
    token = SIGNERS["RS256"].token("frank", "core")
    assert call(port, "DELETE", "/admin/keys/frank", key=ADMIN_KEY).status == 200
    time.sleep(0.5)  # the other workers' refresh interval (0.2 s)
    for entry in MODEL_ENTRIES:
        reply = request(port, entry, "priced-x", token)
        assert reply.status == 401, (entry, reply.body)
        assert "key 'frank' was revoked" in refusal(entry[2], reply)[1]


def _b64(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def _refused_tokens() -> dict[str, tuple[str, int, str]]:
    """Each bad token, the status it gets and what its refusal says."""
    rsa_signer = SIGNERS["RS256"]
    past = int(time.time()) - 3600
    header = {"kid": "rsa-1"}
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "bob", "team": "core", "exp": past + 7200}
    unsigned = jwt.encode(claims, None, "none", headers=header)
    # Signed by hand: PyJWT itself refuses a public key as an HMAC secret.
    signing_input = b".".join(
        _b64(orjson.dumps(part)) for part in ({"alg": "HS256", "typ": "JWT", **header}, claims)
    )
    mac = hmac.new(rsa_signer.public_pem(), signing_input, hashlib.sha256).digest()
    hmac_confused = (signing_input + b"." + _b64(mac)).decode()
    return {
        "expired": (rsa_signer.token(exp=past, iat=past - 60), 401, "expired"),
        "wrong issuer": (rsa_signer.token(iss="https://evil.test/"), 401, "not issued by"),
        "wrong audience": (rsa_signer.token(aud="another-app"), 401, "not for this proxy"),
        "bad signature": (STRANGER.token(), 401, "signature does not verify"),
        "alg none": (unsigned, 401, "algorithm 'none'"),
        "HMAC with the public key": (hmac_confused, 401, "algorithm 'HS256'"),
        "no exp": (rsa_signer.token(exp=None), 401, "exp"),
        "unknown team": (rsa_signer.token("dave", "nowhere"), 403, "team 'nowhere' has no record"),
        "no team": (rsa_signer.token("dave", None), 403, "names no team"),
        "bad member name": (rsa_signer.token("a b"), 401, "claim 'sub'"),
        "garbage": ("eyJhbGciOi.x.y", 401, "not a readable token"),
    }


def test_bad_tokens_refused_in_each_protocol(mock: MockServer, served: tuple[int, str]) -> None:
    port, _ = served
    cases = _refused_tokens()
    mock.clear()
    for entry in MODEL_ENTRIES:
        protocol = entry[2]
        for what, (token, status, says) in cases.items():
            reply = request(port, entry, "priced-x", token)
            assert reply.status == status, (entry, what, reply.body)
            kind, message = refusal(protocol, reply)
            assert says in message, (entry, what, message)
            expected = {401: ("authentication_error", "UNAUTHENTICATED"),
                        403: ("permission_error", "PERMISSION_DENIED")}[status]  # fmt: skip
            assert kind in expected, (entry, what, kind)
    assert mock.requests() == []  # nothing refused went upstream


def test_admins_by_claim_audited_by_name(served: tuple[int, str]) -> None:
    port, _ = served
    admin = SIGNERS["ES256"].token("carol", "core", groups=["staff", "proxy-admins"])
    member = SIGNERS["ES256"].token("bob", "core", groups=["staff"])
    assert call(port, "GET", "/admin/keys", key=member).status == 401
    assert call(port, "GET", "/admin/keys", key=admin).status == 200
    made = call(port, "POST", "/admin/keys", {"name": "erin", "rpm": 3}, admin)
    assert made.status == 201
    entries = call(port, "GET", "/admin/audit", key=admin).json()["entries"]
    newest = entries[0]
    assert (newest["actor"], newest["action"], newest["subject"]) == (
        "jwt:carol", "key.create", "key:erin")  # fmt: skip
    assert call(port, "GET", "/metrics", key=admin).status == 200
    assert call(port, "GET", "/metrics", key=member).status == 403


class KeySetServer:
    """A JWKS served over HTTP on loopback, counting its fetches."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.fetches = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.fetches += 1
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(outer.body)))
                self.end_headers()
                self.wfile.write(outer.body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jwks.json"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_key_set_url_refreshed_on_new_key_and_rate_limited(
    mock: MockServer, tmp_path: Path
) -> None:
    store_ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    store = open_key_store(store_ledger)
    try:
        manage.set_team(store, "core", budget=100)
    finally:
        store.close()
    served = KeySetServer(jwks(SIGNERS["RS256"]))
    try:
        cfg = with_identity(mock, tmp_path, served.url)
        entry = MODEL_ENTRIES[0]
        with proxy(mock, store_ledger, tmp_path, HYDRA_CONFIG=str(cfg)) as server:
            port = server.port
            mock.script([turn(5, 10)])
            assert request(port, entry, "priced-x", SIGNERS["RS256"].token()).status == 200
            fetched = served.fetches
            assert fetched >= 1
            # The provider adds a key and signs with it: the first request waits (503 with
            # retry-after), the key set is fetched again, the retry is served.
            served.body = jwks(SIGNERS["RS256"], SIGNERS["ES256"])
            new = SIGNERS["ES256"].token()
            first = request(port, entry, "priced-x", new)
            assert first.status in (503, 529) and first.headers["retry-after"] == "1", first.body
            deadline = time.monotonic() + 10
            while True:
                mock.script([turn(5, 10)])
                retried = request(port, entry, "priced-x", new)
                if retried.status == 200 or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert retried.status == 200, retried.body
            refetched = served.fetches
            assert refetched > fetched
            # Made-up key ids: refused, and the key set is not fetched again for them.
            for n in range(5):
                made_up = Signer("ES256", f"made-up-{n}").token()
                reply = request(port, entry, "priced-x", made_up)
                assert reply.status == 401 and "does not list" in refusal(entry[2], reply)[1]
            time.sleep(0.5)  # several refresh ticks
            assert served.fetches == refetched
    finally:
        served.close()


def test_key_set_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    served = KeySetServer(b'{"keys": [' + b" " * identity.MAX_JWKS_BYTES + b"]}")
    try:
        with pytest.raises(identity.IdentityError, match="over 1048576 bytes"):
            identity.Identity(identity.IdentityConfig(served.url, ISSUER, AUDIENCE)).load()
    finally:
        served.close()

    class Drip(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            for _ in range(50):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.05)

        def log_message(self, *args: Any) -> None:
            pass

    slow = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Drip)
    threading.Thread(target=slow.serve_forever, daemon=True).start()
    monkeypatch.setattr(identity, "FETCH_TIMEOUT", 0.5)
    try:
        url = f"http://127.0.0.1:{slow.server_address[1]}/"
        with pytest.raises(identity.IdentityError, match=r"over 0\.5 s"):
            identity.Identity(identity.IdentityConfig(url, ISSUER, AUDIENCE)).load()
    finally:
        slow.shutdown()
        slow.server_close()


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ('jwks = "{jwks}"\naudience = "a"', "[identity] needs issuer"),
        ('jwks = "{jwks}"\nissuer = "i"', "[identity] needs audience"),
        (
            'jwks = "http://idp.example.com/jwks"\nissuer = "i"\naudience = "a"',
            "must come over https",
        ),
        ('jwks = "/nonexistent/jwks.json"\nissuer = "i"\naudience = "a"', "no such file"),
        ('jwks = "{jwks}"\nissuer = "i"\naudience = "a"\nadmin_claim = "g"', "go together"),
        (
            'jwks = "{jwks}"\nissuer = "i"\naudience = "a"\nmember_clam = "x"',
            "did you mean 'member_claim'",
        ),
    ],
)
def test_identity_config_refusals_say_where(tmp_path: Path, table: str, says: str) -> None:
    source = tmp_path / "jwks.json"
    source.write_bytes(jwks(SIGNERS["RS256"]))
    path = tmp_path / "hydra.toml"
    path.write_text('[server]\nprovider = "openai"\n\n[identity]\n' + table.format(jwks=source))
    with pytest.raises(ConfigError) as refused:
        load({"config": str(path)}, env={})
    text = str(refused.value)
    assert says in text and f"{path}:" in text, text
