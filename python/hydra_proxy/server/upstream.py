"""The upstream client policy: retries before the first byte, bounded error bodies, the
first-byte timeout; on the lean HTTP/1.1 client (http1.py), one per worker.

Only HTTP concerns live here (connections, timeouts, retry policy, bounded error bodies);
what the bytes mean is the transducers' business.
"""

from __future__ import annotations

import asyncio
import logging
import random
import sys
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

from ..config import Settings
from ..upstream_errors import body_retry_after
from .http1 import H1Client, H1Error, H1Response, Request

if sys.version_info >= (3, 11):
    _timeout = asyncio.timeout
else:  # pragma: no cover - exercised on 3.10 only
    from async_timeout import timeout as _timeout

log = logging.getLogger("hydra_proxy.upstream")

# Statuses worth another try before anything was sent to the client.
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})
MAX_ERROR_BODY = 64 * 1024
# A longer retry-after (the Retry-After header, or a Gemini body's RetryInfo) is passed to
# the client rather than waited out here.
MAX_RETRY_AFTER = 5.0


class UpstreamHTTPError(Exception):
    """The upstream answered with an error status; `body` is at most MAX_ERROR_BODY bytes."""

    def __init__(self, status: int, body: bytes, retry_after: str | None) -> None:
        super().__init__(f"upstream HTTP {status}")
        self.status = status
        self.body = body
        self.retry_after = retry_after


class UpstreamUnavailable(Exception):
    """The upstream could not be reached or did not answer in time."""

    def __init__(self, message: str, *, timeout: bool = False) -> None:
        super().__init__(message)
        self.timeout = timeout


def _retry_delay(attempt: int, retry_after: str | None) -> float | None:
    """Seconds to wait before the next attempt, or None when it is not worth waiting."""
    if retry_after is not None:
        try:
            seconds: float = float(retry_after)
        except ValueError:
            return None
        return seconds if 0 <= seconds <= MAX_RETRY_AFTER else None
    backoff: float = min(0.25 * (2**attempt), 2.0) * (0.5 + random.random() / 2)
    return backoff


def _local_refusal(url: str, exc: H1Error) -> bool:
    """A connection refused on this machine: a local server (Ollama, vLLM) that is not
    running, a configuration error that no retry fixes."""
    if not isinstance(exc.__cause__, ConnectionRefusedError):
        return False
    host = urllib.parse.urlsplit(url).hostname or ""
    return host == "localhost" or host.startswith("127.") or host == "::1"


@dataclass(frozen=True)
class Attempt:
    request: Request
    response: H1Response | None
    """Already written, when a kept-alive connection was free."""


class Upstream:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._client: H1Client | None = None

    def client(self) -> H1Client:
        if self._client is None:
            self._client = H1Client(connect_timeout=self._settings.connect_timeout)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def start(self, url: str, headers: Mapping[str, str], body: bytes) -> Attempt:
        """The request, written at once when a kept-alive connection is free: what runs
        next overlaps with the upstream's work. `post` then completes the attempt."""
        try:
            request = self.client().prepare(url, headers, body)
        except H1Error as exc:
            raise UpstreamUnavailable(f"cannot reach the upstream: {exc}") from exc
        return Attempt(request, self.client().send_now(request))

    async def post(
        self,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        attempt_: Attempt | None = None,
        *,
        retries: int | None = None,
    ) -> H1Response:
        """POST and return a 200 response whose body is still to come.

        Retries connection failures and retryable statuses with backoff (nothing has been
        sent to the client yet), at most `retries` times (default: the settings'; 0 when a
        fallback chain has a next attempt). Raises UpstreamHTTPError or UpstreamUnavailable.
        """
        settings = self._settings
        retries = settings.retries if retries is None else retries
        started = attempt_ or self.start(url, headers, body)
        request, first = started.request, started.response
        attempt = 0
        while True:
            response: H1Response | None = first
            first = None
            try:
                if response is None:
                    response = await self.client().send(request)
                async with _timeout(settings.first_byte_timeout):
                    await response.head
            except TimeoutError as exc:
                if response is not None:
                    response.close()
                raise UpstreamUnavailable(
                    f"the upstream did not answer within {settings.first_byte_timeout:g} s",
                    timeout=True,
                ) from exc
            except H1Error as exc:
                if response is not None and response.reused:
                    continue  # a kept-alive connection the upstream had closed: not an attempt
                if attempt < retries and not _local_refusal(url, exc):
                    backoff = _retry_delay(attempt, None) or 0.0
                    log.info("upstream connection failed (%s); retrying in %.2fs", exc, backoff)
                    attempt += 1
                    await asyncio.sleep(backoff)
                    continue
                raise UpstreamUnavailable(f"cannot reach the upstream: {exc}") from exc
            except BaseException:
                if response is not None:
                    response.close()
                raise
            if response.status == 200:
                return response
            retry_after = response.headers.get("retry-after")
            try:
                error_body = await response.read(
                    MAX_ERROR_BODY, partial=True, idle_timeout=settings.idle_timeout
                )
            except (H1Error, TimeoutError):  # cut, or stalled: the status still tells
                error_body = b""
            finally:
                response.release()
            if retry_after is None:  # Gemini says when to retry in its body only
                retry_after = body_retry_after(error_body)
            if response.status in RETRY_STATUSES and attempt < retries:
                delay = _retry_delay(attempt, retry_after)
                if delay is not None:  # else the client gets the status and retry-after
                    log.info("upstream HTTP %d; retrying in %.2fs", response.status, delay)
                    attempt += 1
                    await asyncio.sleep(delay)
                    continue
            raise UpstreamHTTPError(response.status, error_body, retry_after)
