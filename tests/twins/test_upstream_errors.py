"""Reading upstream HTTP error bodies (hydra_proxy.upstream_errors) without a server: the
hostile and odd bodies the table test does not send."""

from __future__ import annotations

import orjson
import pytest

from hydra_proxy.redaction import SCRUB, Redactor
from hydra_proxy.upstream_errors import MAX_MESSAGE, read_error_body, upstream_http_error
from support.gemini_fixtures import GEMINI


def test_recorded_bodies() -> None:
    """The recorded OpenAI 401 (its type says invalid_request_error) and Gemini 429."""
    recorded = orjson.loads(
        (GEMINI.parent / "responses" / "dd-http401-invalid-api-key.response.json").read_bytes()
    )
    error = upstream_http_error(401, orjson.dumps(recorded["body"]), None, provider="openai")
    assert (error.status, error.error_type, error.code) == (
        401,
        "authentication_error",
        "invalid_api_key",
    )
    assert "Incorrect API key provided" in error.message and "provider 'openai'" in error.message
    gemini = (GEMINI / "vercel-google-429-retry-info.json").read_bytes()
    assert read_error_body(gemini).retry_after == "35"
    assert upstream_http_error(429, gemini, "5").retry_after == "35"


def test_a_huge_message_is_bounded() -> None:
    body = orjson.dumps({"error": {"message": "x" * 1_000_000, "type": "server_error"}})
    error = upstream_http_error(500, body, None, provider="p")
    assert len(error.message) <= MAX_MESSAGE and error.message.endswith("...")


@pytest.mark.parametrize(
    ("body", "form", "message"),
    [
        (b"<HTML><TITLE>Service &amp; Co\n  Unavailable</TITLE>", "html", None),
        (
            b"\xff\xfe not utf-8 \x00 at all\r\nsecond line",
            "text",
            "\ufffd\ufffd not utf-8  at all",
        ),
        (b"   \r\n ", "empty", None),
        (b"null", "other", None),
        (b'"just text"', "text", "just text"),
        (b'[{"error": {"code": 503, "message": "busy", "status": "UNAVAILABLE"}}]', "json", "busy"),
        (b'{"error": "Unauthorized"}', "json", "Unauthorized"),
        (b'{"detail": "Not Found"}', "json", "Not Found"),
        (b'{"error": {"message": 42, "type": ["x"]}}', "json", None),
    ],
)
def test_odd_bodies(body: bytes, form: str, message: str | None) -> None:
    read = read_error_body(body)
    assert (read.form, read.message) == (form, message)


def test_html_title_only() -> None:
    read = read_error_body(b"<HTML><TITLE>Service &amp; Co\n  Unavailable</TITLE><p>secret</p>")
    assert read.title == "Service & Co Unavailable"
    message = upstream_http_error(503, b"<html><p>sk-live-abcdefghijkl</p></html>", None).message
    assert "sk-live" not in message and "HTML page" in message


def test_redact() -> None:
    text = "bad key sk-proj-abcdefgh12345678, Bearer abc.def-ghi_jkl, AIzaSyA1234567890123456789x"
    assert SCRUB.text(text) == "bad key [redacted], [redacted], [redacted]"
    assert SCRUB.text("masked sk-ab***yz stays") == "masked sk-ab***yz stays"
    own = Redactor(["my-own-secret-value"])
    assert own.text("my-own-secret-value here") == "[redacted] here"
    assert own.body(b'{"error": "my-own-secret-value"}') == b'{"error": "[redacted]"}'
    assert SCRUB.body(text.encode()) == SCRUB.text(text).encode()
