"""A small Redis client for the checks: one pipelined connection per worker, replies
parsed by hiredis, scripts by their SHA1 (loaded again after a restart flushed them).

Why not a general client: a check is one command on the request path, and the cost that
matters is the worker's CPU per command. An asyncio Protocol that writes the command and
resolves a future from `data_received` costs a fraction of a general client's
connection-pool round trip (benches/cluster_check.py).

Every command is bounded by `timeout`; a timed-out connection is closed (its replies
would come out of order) and the next command opens a new one.
"""

from __future__ import annotations

import asyncio
import hashlib
import ssl
from collections import deque
from typing import Any
from urllib.parse import unquote, urlparse


class StoreConnectionError(ConnectionError):
    """Redis could not be reached, or the connection broke."""


class ReplyError(Exception):
    """Redis answered with an error."""


def encode(args: tuple[Any, ...]) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        if isinstance(arg, bytes):
            data = arg
        elif isinstance(arg, float):
            data = repr(arg).encode()
        else:
            data = str(arg).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


class _Connection(asyncio.Protocol):
    def __init__(self) -> None:
        import hiredis

        self.reader = hiredis.Reader()
        self.error_type = hiredis.ReplyError
        self.waiters: deque[asyncio.Future[Any]] = deque()
        self.transport: Any = None  # uvloop's transports are not asyncio.Transport
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        while True:
            reply = self.reader.gets()
            if reply is False:
                return
            if not self.waiters:  # nothing asked for it: the stream is out of step
                self.close()
                return
            waiter = self.waiters.popleft()
            if waiter.done():
                continue
            if isinstance(reply, self.error_type):
                waiter.set_exception(ReplyError(str(reply)))
            else:
                waiter.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_exception(StoreConnectionError("the Redis connection was lost"))

    def close(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.close()


class Resp:
    """Commands to the Redis at `url` (``redis://[user:password@]host[:port][/db]``, or
    ``rediss://`` for TLS)."""

    def __init__(self, url: str, *, timeout: float = 0.5) -> None:
        parts = urlparse(url)
        if parts.scheme not in ("redis", "rediss"):
            raise ValueError(f"not a redis:// or rediss:// URL: {parts.scheme}://")
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 6379
        self.tls = parts.scheme == "rediss"
        self.username = unquote(parts.username) if parts.username else None
        self.password = unquote(parts.password) if parts.password else None
        path = parts.path.strip("/")
        self.db = int(path) if path else 0
        self.timeout = timeout
        self._conn: _Connection | None = None
        self._connecting: asyncio.Future[_Connection] | None = None
        self._shas: dict[str, str] = {}

    async def _connection(self) -> _Connection:
        conn = self._conn
        if conn is not None and not conn.lost:
            return conn
        if self._connecting is not None:  # another command is connecting: share it
            return await asyncio.shield(self._connecting)
        loop = asyncio.get_running_loop()
        self._connecting = loop.create_future()
        try:
            conn = await self._open()
        except BaseException as exc:
            self._connecting.set_exception(
                exc if isinstance(exc, Exception) else StoreConnectionError("cancelled")
            )
            self._connecting.exception()  # retrieved: no "never retrieved" warning
            self._connecting = None
            raise
        self._connecting.set_result(conn)
        self._connecting = None
        self._conn = conn
        return conn

    async def _open(self) -> _Connection:
        loop = asyncio.get_running_loop()
        context = ssl.create_default_context() if self.tls else None
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(
                    _Connection, self.host, self.port, ssl=context,
                    server_hostname=self.host if context else None,
                ),
                self.timeout,
            )  # fmt: skip
        except (OSError, TimeoutError, asyncio.TimeoutError) as exc:
            raise StoreConnectionError(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        setup: list[tuple[Any, ...]] = []
        if self.password is not None:
            auth = (
                ("AUTH", self.username, self.password) if self.username else ("AUTH", self.password)
            )
            setup.append(auth)
        if self.db:
            setup.append(("SELECT", self.db))
        for command in setup:
            await self._send(conn, command)
        return conn

    async def _send(self, conn: _Connection, args: tuple[Any, ...]) -> Any:
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[Any] = loop.create_future()
        conn.waiters.append(waiter)
        conn.transport.write(encode(args))
        timer = loop.call_later(self.timeout, self._time_out, conn, waiter)
        try:
            return await waiter
        finally:
            timer.cancel()

    def _time_out(self, conn: _Connection, waiter: asyncio.Future[Any]) -> None:
        if not waiter.done():
            waiter.set_exception(TimeoutError(f"Redis did not answer within {self.timeout:g} s"))
            conn.close()  # the late reply would answer the next command

    async def execute(self, *args: Any) -> Any:
        """One command's reply (ReplyError: Redis refused it; StoreConnectionError or
        TimeoutError: not reached). A connection found dead is replaced once."""
        conn = await self._connection()
        try:
            return await self._send(conn, args)
        except StoreConnectionError:
            if not conn.lost:
                raise
            conn = await self._connection()  # it had died since the last command
            return await self._send(conn, args)

    async def script(self, source: str, keys: list[str], args: list[Any]) -> Any:
        """EVALSHA of `source`, loading it when Redis does not know it (a restart)."""
        sha = self._shas.get(source)
        if sha is None:
            sha = self._shas[source] = hashlib.sha1(source.encode()).hexdigest()
        try:
            return await self.execute("EVALSHA", sha, len(keys), *keys, *args)
        except ReplyError as exc:
            if not str(exc).startswith("NOSCRIPT"):
                raise
        await self.execute("SCRIPT", "LOAD", source)
        return await self.execute("EVALSHA", sha, len(keys), *keys, *args)

    async def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
