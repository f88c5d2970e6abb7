"""A small Redis client for the checks: one pipelined connection per Redis server and
worker, replies parsed by hiredis, scripts by their SHA1 (loaded again after a restart
flushed them). It reaches one Redis, the primary that Sentinel names (followed across a
failover), or the nodes of a Redis Cluster (MOVED and ASK followed), over TLS and with an
ACL user when the URL says so.

Why not a general client: a check is one command on the request path, and the cost that
matters is the worker's CPU per command. An asyncio Protocol that writes the command and
resolves a future from `data_received` costs less than half of redis-py's asyncio client
per check, at p50 and p99 (benches/redis_clients.py, benches/results/redis_clients.md).

Every connection and every command is bounded by `timeout`; a timed-out connection is
closed (its replies would come out of order) and the next command opens a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ssl
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

SLOTS = 16384


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


def _crc16_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
        table.append(crc & 0xFFFF)
    return table


_CRC16 = _crc16_table()


def key_slot(key: str) -> int:
    """The Redis Cluster slot of `key`: CRC16 (XMODEM) of its hash tag (the text between
    the first ``{`` and the next ``}``, when not empty), else of the whole key."""
    data = key.encode()
    start = data.find(b"{")
    if start >= 0:
        end = data.find(b"}", start + 1)
        if end > start + 1:
            data = data[start + 1 : end]
    crc = 0
    for byte in data:
        crc = ((crc << 8) & 0xFFFF) ^ _CRC16[((crc >> 8) ^ byte) & 0xFF]
    return crc % SLOTS


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


@dataclass(frozen=True)
class Login:
    """How a connection is opened and who it logs in as (the same for every server)."""

    tls: ssl.SSLContext | None = None
    username: str | None = None
    password: str | None = None
    db: int = 0


class Node:
    """One Redis server: a pipelined connection, opened on first use and again after it
    broke."""

    def __init__(self, host: str, port: int, login: Login, timeout: float) -> None:
        self.host, self.port = host, port
        self.login = login
        self.timeout = timeout
        self._conn: _Connection | None = None
        self._connecting: asyncio.Future[_Connection] | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

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
        login = self.login
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(
                    _Connection, self.host, self.port, ssl=login.tls,
                    server_hostname=self.host if login.tls else None,
                ),
                self.timeout,
            )  # fmt: skip
        except (OSError, TimeoutError, asyncio.TimeoutError, ssl.SSLError) as exc:
            raise StoreConnectionError(f"cannot connect to {self.address}: {exc}") from exc
        setup: list[tuple[Any, ...]] = []
        if login.password is not None:
            setup.append(
                ("AUTH", login.username, login.password) if login.username
                else ("AUTH", login.password)
            )  # fmt: skip
        if login.db:
            setup.append(("SELECT", login.db))
        try:
            for command in setup:
                await self._send(conn, command)
        except ReplyError as exc:  # a wrong password or user: this store cannot be used
            conn.close()
            raise StoreConnectionError(f"{self.address} refused the login: {exc}") from None
        except BaseException:
            conn.close()
            raise
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
            waiter.set_exception(
                TimeoutError(f"Redis {self.address} did not answer within {self.timeout:g} s")
            )
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

    async def asking(self, *args: Any) -> Any:
        """`args` after ASKING, written together: the node takes it for a slot it is
        importing (a Redis Cluster resharding)."""
        conn = await self._connection()
        first = self._send(conn, ("ASKING",))
        second = self._send(conn, args)
        results = await asyncio.gather(first, second, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return results[1]

    async def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _parse_moved(message: str) -> tuple[int, str, int] | None:
    """(slot, host, port) of a ``MOVED``/``ASK`` error."""
    parts = message.split()
    if len(parts) != 3 or parts[0] not in ("MOVED", "ASK"):
        return None
    host, _, port = parts[2].rpartition(":")
    return int(parts[1]), host, int(port)


class Resp:
    """Commands to the Redis of `url` (``redis://[user:password@]host[:port][/db]``, or
    ``rediss://`` for TLS, verified against `ca_file` or the system's CAs): that server,
    or the primary that `sentinels` (HOST:PORT, asked with `sentinel_password` when they
    have one) name `service`, or, `cluster`, the nodes
    of the Redis Cluster that server belongs to.

    A command's first key routes it in a cluster (every key of one command is in one
    slot: the callers tag them); a node's MOVED is followed and the slot map read again,
    an ASK is followed once. With Sentinel, a primary that cannot be reached or that
    became a replica (READONLY) is asked of the Sentinels again."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 0.25,
        ca_file: str | None = None,
        sentinels: Sequence[str] = (),
        service: str | None = None,
        sentinel_password: str | None = None,
        cluster: bool = False,
    ) -> None:
        parts = urlparse(url)
        if parts.scheme not in ("redis", "rediss"):
            raise ValueError(f"not a redis:// or rediss:// URL: {parts.scheme}://")
        tls = None
        if parts.scheme == "rediss":
            tls = ssl.create_default_context(cafile=ca_file)
        path = parts.path.strip("/")
        self.login = Login(
            tls,
            unquote(parts.username) if parts.username else None,
            unquote(parts.password) if parts.password else None,
            int(path) if path else 0,
        )
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 6379
        self.timeout = timeout
        self.sentinels = [_address(s) for s in sentinels]
        self.service = service
        self.sentinel_login = Login(password=sentinel_password)
        self.cluster = cluster
        self._nodes: dict[tuple[str, int], Node] = {}
        self._primary: Node | None = None  # Sentinel's answer, until it fails
        self._slots: list[Node | None] = []
        self._refreshing: asyncio.Future[None] | None = None
        self._shas: dict[str, str] = {}

    def _node(self, host: str, port: int) -> Node:
        node = self._nodes.get((host, port))
        if node is None:
            node = self._nodes[(host, port)] = Node(host, port, self.login, self.timeout)
        return node

    # -- where a command goes -------------------------------------------------------------

    async def _target(self, key: str | None) -> Node:
        if self.sentinels:
            if self._primary is None:
                self._primary = await self._ask_sentinels()
            return self._primary
        if self.cluster:
            if not self._slots:
                await self._refresh_slots()
            # A command of no key (PING) goes to a primary of the map, not to the URL's
            # node, which may be the one that failed.
            node = self._slots[key_slot(key) if key is not None else 0]
            return node if node is not None else self._node(self.host, self.port)
        return self._node(self.host, self.port)

    async def _ask_sentinels(self) -> Node:
        """The primary's node, as the first Sentinel to answer names it."""

        async def ask(host: str, port: int) -> tuple[str, int]:
            sentinel = Node(host, port, self.sentinel_login, self.timeout)
            try:
                got = await sentinel.execute("SENTINEL", "get-master-addr-by-name", self.service)
            finally:
                await sentinel.close()
            if not got:
                raise StoreConnectionError(f"Sentinel {host}:{port} knows no {self.service!r}")
            return got[0].decode(), int(got[1])

        asks = [asyncio.ensure_future(ask(h, p)) for h, p in self.sentinels]
        errors: list[BaseException] = []
        try:
            for done in asyncio.as_completed(asks):
                try:
                    host, port = await done
                except (StoreConnectionError, TimeoutError, ReplyError, OSError) as exc:
                    errors.append(exc)
                    continue
                return self._node(host, port)
        finally:
            for pending in asks:
                pending.cancel()
        raise StoreConnectionError(f"no Sentinel named the primary {self.service!r}: {errors[0]}")

    async def _refresh_slots(self) -> None:
        """The slot map, from CLUSTER SLOTS of the first node that answers (one refresh at
        a time; the others wait for it)."""
        if self._refreshing is not None:
            await asyncio.shield(self._refreshing)
            return
        self._refreshing = asyncio.get_running_loop().create_future()
        try:
            await self._read_slots()
            self._refreshing.set_result(None)
        except BaseException as exc:
            self._refreshing.set_exception(exc)
            self._refreshing.exception()
            raise
        finally:
            self._refreshing = None

    async def _read_slots(self) -> None:
        seeds = [self._node(self.host, self.port)]
        seeds += [n for n in self._nodes.values() if n is not seeds[0]]
        error: BaseException | None = None
        for seed in seeds:
            try:
                ranges = await seed.execute("CLUSTER", "SLOTS")
            except (StoreConnectionError, TimeoutError, ReplyError) as exc:
                error = exc
                continue
            table: list[Node | None] = [None] * SLOTS
            for start, end, primary, *_ in ranges:
                host = primary[0].decode() or seed.host
                node = self._node(host, int(primary[1]))
                table[start : end + 1] = [node] * (end - start + 1)
            self._slots = table
            return
        raise StoreConnectionError(f"no Redis Cluster node answered CLUSTER SLOTS: {error}")

    def _forget(self, node: Node) -> None:
        """A node failed: ask the Sentinels, or read the slot map, again next time."""
        if self._primary is node:
            self._primary = None
        if self.cluster:
            self._slots = []

    # -- commands -------------------------------------------------------------------------

    async def execute(self, *args: Any) -> Any:
        """One command's reply; its first argument after the name is its key (routing in a
        cluster). ReplyError: Redis refused it; StoreConnectionError or TimeoutError: not
        reached."""
        return await self._run(args[1] if len(args) > 1 else None, args)

    async def _run(self, key: Any, args: tuple[Any, ...]) -> Any:
        node = await self._target(key if isinstance(key, str) else None)
        try:
            return await node.execute(*args)
        except (StoreConnectionError, TimeoutError):
            self._forget(node)
            if not (self.sentinels or self.cluster):
                raise
            await node.close()
            node = await self._target(key)  # a failover may have named another already
            return await node.execute(*args)
        except ReplyError as exc:
            message = str(exc)
            if message.startswith("READONLY") and self.sentinels:
                self._forget(node)  # the primary became a replica: a failover
                await node.close()
                node = await self._target(key)
                return await node.execute(*args)
            moved = _parse_moved(message) if self.cluster else None
            if moved is None:
                raise
            _, host, port = moved
            target = self._node(host, port)
            if message.startswith("ASK"):
                return await target.asking(*args)
            self._slots = []  # read the map again at the next command
            return await target.execute(*args)

    async def script(self, source: str, keys: list[str], args: list[Any]) -> Any:
        """EVALSHA of `source`, loading it when Redis does not know it (a restart, or a
        node that never ran it)."""
        sha = self._shas.get(source)
        if sha is None:
            sha = self._shas[source] = hashlib.sha1(source.encode()).hexdigest()
        key = keys[0] if keys else None
        command = ("EVALSHA", sha, len(keys), *keys, *args)
        try:
            return await self._run(key, command)
        except ReplyError as exc:
            if "NOSCRIPT" not in str(exc):
                raise
        # EVAL runs it and leaves it cached on whichever node took it.
        return await self._run(key, ("EVAL", source, len(keys), *keys, *args))

    async def close(self) -> None:
        for node in list(self._nodes.values()):
            await node.close()
        if self._refreshing is not None:
            with contextlib.suppress(Exception):
                self._refreshing.cancel()


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"not HOST:PORT: {text!r}")
    return host.strip("[]"), int(port)
