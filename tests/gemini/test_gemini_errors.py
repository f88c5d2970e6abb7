"""Gemini HTTP error bodies -> the proxy's errors (gemini.errors)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from hydra_proxy.gemini.errors import gemini_error, retry_delay_seconds
from support.gemini_fixtures import GEMINI, load_json


def test_recorded_429_with_retry_info() -> None:
    raw = (GEMINI / "vercel-google-429-retry-info.json").read_bytes()
    error = gemini_error(429, raw)
    assert error.status == 429
    assert error.error_type == "rate_limit_error"
    assert error.message == "You exceeded your current quota, please check your plan."
    assert error.retry_after == "35"  # retryDelay "34.4s", rounded up
    assert orjson.loads(error.anthropic_body())["error"] == {
        "type": "rate_limit_error",
        "message": error.message,
    }
    assert orjson.loads(error.openai_body())["error"]["type"] == "rate_limit_error"
    # parsed bodies and the list form of non-SSE streams read the same
    assert gemini_error(429, load_json("vercel-google-429-retry-info.json")).retry_after == "35"
    assert gemini_error(429, [load_json("vercel-google-429-retry-info.json")]).retry_after == "35"


def _body(
    code: int, status: str, message: str, details: list[dict[str, Any]] | None = None
) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details is not None:
        error["details"] = details
    return orjson.dumps({"error": error})


@pytest.mark.parametrize(
    ("http", "status", "expected_status", "expected_type"),
    [
        (400, "INVALID_ARGUMENT", 400, "invalid_request_error"),
        (400, "FAILED_PRECONDITION", 400, "invalid_request_error"),
        (401, "UNAUTHENTICATED", 401, "authentication_error"),
        (403, "PERMISSION_DENIED", 403, "permission_error"),
        (404, "NOT_FOUND", 404, "not_found_error"),
        (429, "RESOURCE_EXHAUSTED", 429, "rate_limit_error"),
        (500, "INTERNAL", 500, "api_error"),
        (503, "UNAVAILABLE", 529, "overloaded_error"),
        (504, "DEADLINE_EXCEEDED", 504, "timeout_error"),
    ],
)
def test_status_classes(http: int, status: str, expected_status: int, expected_type: str) -> None:
    error = gemini_error(http, _body(http, status, f"upstream says {status}"))
    assert (error.status, error.error_type) == (expected_status, expected_type)
    assert error.message == f"upstream says {status}"
    assert error.retry_after is None


def test_invalid_api_key_is_an_authentication_error() -> None:
    details = [
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "API_KEY_INVALID",
            "domain": "googleapis.com",
        }
    ]
    error = gemini_error(
        400,
        _body(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", details),
    )
    assert (error.status, error.error_type) == (401, "authentication_error")


def test_bodies_without_a_message() -> None:
    assert gemini_error(502, b"<html>Bad Gateway</html>").message == "Gemini returned HTTP 502"
    error = gemini_error(
        503, orjson.dumps({"error": {"code": 503, "status": "UNAVAILABLE"}}), retry_after="7"
    )
    assert error.message == "Gemini returned HTTP 503 UNAVAILABLE"
    assert error.retry_after == "7"  # the header when there is no RetryInfo
    assert len(gemini_error(400, _body(400, "INVALID_ARGUMENT", "x" * 10_000)).message) == 2000


@pytest.mark.parametrize(
    ("delay", "expected"),
    [("34.4s", "35"), ("0s", "0"), ("60s", "60"), ("1.000000001s", "2"), ("soon", None), (5, None)],
)
def test_retry_delay(delay: Any, expected: str | None) -> None:
    details = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]
    assert retry_delay_seconds(details) == expected
    assert retry_delay_seconds(None) is None
