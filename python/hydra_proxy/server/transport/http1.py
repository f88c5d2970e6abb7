"""A lean HTTP/1.1 upstream client: an asyncio.Protocol per connection, framing by httptools.

Why not aiohttp on the streaming path: every upstream chunk there costs a StreamReader
feed, a future and a task switch before the bytes reach the transducer. Here the parser's
body callback hands the (de-chunked, decoded) bytes straight to a sink the relay installs,
so one upstream read becomes one transducer feed and one client send, in the same callback.

Also: a keep-alive pool per origin, TLS with SNI, HTTPS_PROXY/HTTP_PROXY/NO_PROXY (a
CONNECT tunnel for https), bounded response heads and buffered bodies, gzip/deflate
bodies decoded within a bound (`INFLATE_RATIO`: a small compressed body cannot make the
proxy hold or relay gigabytes). The request is written before `send` returns when a pooled connection is
free, so work done after it overlaps with the upstream's.
"""

from __future__ import annotations

import asyncio
import base64
import socket
import ssl
import sys
import time
import urllib.request
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import cast
from urllib.parse import unquote, urlsplit

import httptools

if sys.version_info >= (3, 11):
    _timeout = asyncio.timeout
else:  # pragma: no cover - exercised on 3.10 only
    from async_timeout import timeout as _timeout

MAX_HEAD_BYTES = 64 * 1024
MAX_IDLE_PER_ORIGIN = 256
IDLE_KEEPALIVE_S = 30.0
# The kernel's receive buffer of an upstream socket. Left to autotuning it grows, while the
# upstream is read fast, to net.ipv4.tcp_rmem's maximum (6 MB by default, 32 MB on some
# hosts), and all of it still fills once reading is paused for a slow client: that much
# per stream buffered at the proxy. Fixed, it bounds that to about twice this (the
# kernel's doubling), and still carries ~5 MB/s at 100 ms RTT, far above a model's stream.
UPSTREAM_RECEIVE_BUFFER = 512 * 1024
# Body bytes buffered while nobody has asked for the body yet (between the head and
# stream() or read()); past this the connection is not read until one is called.
MAX_READ_AHEAD = 256 * 1024

# A gzip/deflate body is inflated in pieces of at most INFLATE_STEP bytes, and refused
# (the connection dropped) once its inflated bytes pass INFLATE_ALLOWANCE plus INFLATE_RATIO
# times its compressed bytes: text compresses 5-20 times, a gzip bomb a thousand.
INFLATE_STEP = 64 * 1024
INFLATE_ALLOWANCE = 1024 * 1024
INFLATE_RATIO = 100

Sink = Callable[[bytes], None]


class H1Error(Exception):
    """The upstream connection failed, was refused, or broke the HTTP framing."""


class H1Response:
    """One response: its head (status, headers), then its body, pushed to a sink or buffered."""

    __slots__ = (
        "_chunks",
        "_compressed",
        "_conn",
        "_decoder",
        "_inflated",
        "_limit",
        "_size",
        "done",
        "head",
        "headers",
        "on_end",
        "reused",
        "sink",
        "status",
    )

    def __init__(self, conn: _Connection) -> None:
        loop = asyncio.get_running_loop()
        self._conn: _Connection | None = conn
        self.status = 0
        self.headers: dict[str, str] = {}
        self.head: asyncio.Future[None] = loop.create_future()
        self.done: asyncio.Future[None] = loop.create_future()
        self.sink: Sink | None = None
        self.on_end: Callable[[BaseException | None], None] | None = None
        self._chunks: list[bytes] = []
        self._size = 0
        self._limit = 0
        self._decoder: zlib._Decompress | None = None
        self._compressed = 0
        self._inflated = 0
        self.reused = conn.reused

    # -- body delivery ----------------------------------------------------------------

    def stream(self, sink: Sink, on_end: Callable[[BaseException | None], None]) -> None:
        """Push every body chunk to `sink` from now on (buffered ones first); `on_end` is
        called once, with None at the end of the body or the failure."""
        chunks, self._chunks = self._chunks, []
        self.sink = sink
        self.on_end = on_end
        self.resume_reading()  # paused past MAX_READ_AHEAD; the sink may pause it again
        for chunk in chunks:
            sink(chunk)
        if self.done.done():
            on_end(self.done.exception())

    async def read(
        self, limit: int, *, partial: bool = False, idle_timeout: float | None = None
    ) -> bytes:
        """The whole body, at most `limit` bytes (the rest is dropped with the connection).
        A body cut short raises H1Error, unless `partial` asks for what did arrive; one
        silent for `idle_timeout` seconds raises TimeoutError."""
        self._limit = limit
        if self._size > limit:
            self._truncate()
        self.resume_reading()  # paused past MAX_READ_AHEAD: `limit` bounds it from now on
        try:
            if idle_timeout is None:
                await self.done
            else:
                await self._done_unless_silent(idle_timeout)
        except H1Error:
            if not partial:
                raise
        return b"".join(self._chunks)

    async def _done_unless_silent(self, idle_timeout: float) -> None:
        while True:
            size = self._size
            try:
                await asyncio.wait_for(asyncio.shield(self.done), idle_timeout)
                return
            except TimeoutError:
                if self._size == size:  # not a byte for idle_timeout: a stalled upstream
                    raise

    def _truncate(self) -> None:
        data = b"".join(self._chunks)[: self._limit]
        self._chunks = [data]
        self._size = len(data)
        self.close()
        if not self.done.done():
            self.done.set_result(None)

    def _body(self, data: bytes) -> None:
        if self._decoder is not None:
            self._inflate(self._decoder, data)
            return
        self._deliver(data)

    def _inflate(self, decoder: zlib._Decompress, data: bytes) -> None:
        """Inflate `data` in bounded pieces, each delivered; drop the response past the
        bound (see INFLATE_RATIO)."""
        self._compressed += len(data)
        while True:
            piece = decoder.decompress(data, INFLATE_STEP)
            data = decoder.unconsumed_tail
            if piece:
                self._inflated += len(piece)
                if self._inflated > INFLATE_ALLOWANCE + INFLATE_RATIO * self._compressed:
                    self._refuse(
                        H1Error(
                            f"the upstream's compressed body inflates more than "
                            f"{INFLATE_RATIO} times its size: refused"
                        )
                    )
                    return
                self._deliver(piece)
                if self._conn is None:  # truncated at the read limit, or dropped
                    return
            if not data:
                return

    def _refuse(self, exc: H1Error) -> None:
        self._decoder = None
        self._end(exc)
        self.close()

    def _deliver(self, data: bytes) -> None:
        sink = self.sink
        if sink is not None:
            sink(data)
            return
        self._chunks.append(data)
        self._size += len(data)
        if self._limit:
            if self._size > self._limit:
                self._truncate()
        elif self._size > MAX_READ_AHEAD:
            self.pause_reading()  # nobody reads the body yet: stream() or read() resumes

    def _end(self, exc: BaseException | None) -> None:
        if self.done.done():
            return
        if exc is None and self._decoder is not None:
            # Every input byte was inflated already (in pieces): what is left is small.
            tail = self._decoder.flush()
            if tail:
                self._deliver(tail)
        if exc is None:
            self.done.set_result(None)
        else:
            self.done.set_exception(exc)
            self.done.exception()  # retrieved: a failure nobody awaits is not an error
        if self.on_end is not None:
            self.on_end(exc)

    # -- the connection -----------------------------------------------------------------

    def release(self) -> None:
        """Done with the response: a fully read one gives its connection back to the pool."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.finished(self)
        self._forget_sink()

    def close(self) -> None:
        """Drop the connection (the upstream sees the request cancelled)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.abort()
        self._forget_sink()

    def _forget_sink(self) -> None:
        # The sink and on_end hold their reader's state, which holds this response: a cycle
        # that only the garbage collector would free, with every chunk it references.
        self.sink = self.on_end = None

    # -- flow control (the client reads slower than the upstream writes) ------------------

    def pause_reading(self) -> None:
        """Stop reading the body: TCP flow control then slows the upstream."""
        conn = self._conn
        if conn is not None and conn.transport is not None and not conn.closed:
            conn.transport.pause_reading()

    def resume_reading(self) -> None:
        conn = self._conn
        if conn is not None and conn.transport is not None and not conn.closed:
            conn.transport.resume_reading()


class _Connection(asyncio.Protocol):
    def __init__(self, client: H1Client, origin: str) -> None:
        self.client = client
        self.origin = origin
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.response: H1Response | None = None
        self.head_bytes = 0
        self.complete = False
        self.keep_alive = False
        self.closed = False
        self.idle_since = 0.0
        self.reused = False
        # Body pieces of one read (one per HTTP chunk), handed on as one: one transducer
        # feed and one client send per upstream read, however many chunks it framed.
        self._pieces: list[bytes] = []

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses
        sock = transport.get_extra_info("socket")  # TLS transports pass the TCP socket's
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, UPSTREAM_RECEIVE_BUFFER)

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
            if self._pieces:
                self._flush()
        except httptools.HttpParserUpgrade:  # pragma: no cover - never asked for
            self._fail(H1Error("unexpected protocol upgrade"))
        except httptools.HttpParserCallbackError as exc:
            cause = exc.__context__  # raised by one of the callbacks below
            self._fail(cause if isinstance(cause, H1Error) else H1Error(f"{cause!r}"))
        except httptools.HttpParserError as exc:
            self._fail(H1Error(f"invalid HTTP response: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        try:
            self._lost(exc)
        finally:
            # The parser and the transport refer back to this connection: dropped, so that a
            # closed connection is freed at once, not at the garbage collector's next pass.
            del self.parser
            self.transport = None

    def _lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.client._forget(self)
        response = self.response
        if response is None or self.complete:
            return
        if response.head.done() and not self._framed():
            self.complete = True  # a body delimited by the end of the connection
            response._end(None)
            return
        self._fail(H1Error(f"the upstream closed the connection{f': {exc}' if exc else ''}"))

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.head_bytes += len(name) + len(value) + 4
        if self.head_bytes > MAX_HEAD_BYTES:
            raise H1Error(f"the upstream's response head exceeds {MAX_HEAD_BYTES} bytes")
        assert self.response is not None
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        headers = self.response.headers
        headers[key] = f"{headers[key]}, {text}" if key in headers else text

    def on_headers_complete(self) -> None:
        response = self.response
        assert response is not None
        response.status = self.parser.get_status_code()
        self.keep_alive = self.parser.should_keep_alive()
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding in ("gzip", "x-gzip", "deflate"):
            response._decoder = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib
        if not response.head.done():
            response.head.set_result(None)

    def on_body(self, body: bytes) -> None:
        self._pieces.append(body)

    def on_message_complete(self) -> None:
        self.complete = True
        assert self.response is not None
        if self._pieces:
            self._flush()
        self.response._end(None)

    def _flush(self) -> None:
        pieces, self._pieces = self._pieces, []
        assert self.response is not None
        self.response._body(pieces[0] if len(pieces) == 1 else b"".join(pieces))

    # helpers
    def _framed(self) -> bool:
        headers = self.response.headers if self.response is not None else {}
        return "content-length" in headers or "chunked" in headers.get("transfer-encoding", "")

    def _fail(self, exc: H1Error) -> None:
        response = self.response
        if response is not None:
            if self._pieces:
                self._flush()  # what arrived intact before the failure still counts
            if not response.head.done():
                response.head.set_exception(exc)
                response.head.exception()
            response._end(exc)
        self.abort()

    def begin(self, request: Request) -> H1Response:
        assert self.transport is not None
        self.parser = httptools.HttpResponseParser(self)
        self._pieces = []
        self.head_bytes = 0
        self.complete = False
        self.response = H1Response(self)
        # Head and body as they are: a large body is not copied to be joined to its head.
        self.transport.writelines((request.head, request.body))
        return self.response

    def finished(self, response: H1Response) -> None:
        if self.complete and self.keep_alive and not self.closed and response is self.response:
            self.response = None
            if self.transport is not None:  # paused for a slow client on its last chunk
                self.transport.resume_reading()
            self.client._park(self)
        else:
            self.abort()

    def abort(self) -> None:
        self.closed = True
        self.client._forget(self)
        if self.transport is not None:
            self.transport.abort()


def _proxy_authorization(proxy: str) -> str | None:
    """Basic credentials for a proxy URL with user:password@ in it (HTTPS_PROXY style)."""
    p = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    if p.username is None:
        return None
    raw = f"{unquote(p.username)}:{unquote(p.password or '')}".encode()
    return "Basic " + base64.b64encode(raw).decode("ascii")


class _Tunnel(asyncio.Protocol):
    """The proxy's answer to CONNECT (its head only; TLS takes the connection over)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.head: asyncio.Future[bytes] = loop.create_future()
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        end = self.buffer.find(b"\r\n\r\n")
        if end >= 0 and not self.head.done():
            self.head.set_result(self.buffer[: end + 4])
        elif len(self.buffer) > MAX_HEAD_BYTES and not self.head.done():
            self.head.set_exception(H1Error("the proxy's answer to CONNECT is too long"))

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.head.done():
            self.head.set_exception(H1Error("the proxy closed the connection"))


@dataclass(frozen=True)
class Request:
    origin: str
    host: str
    port: int
    secure: bool
    proxy: str | None
    head: bytes
    body: bytes

    @property
    def wire(self) -> bytes:
        """The request as one piece of bytes (what goes on the wire, in two writes)."""
        return self.head + self.body


class H1Client:
    """Connections per origin (scheme, host, port), kept alive between requests."""

    def __init__(self, *, connect_timeout: float, ssl_context: ssl.SSLContext | None = None):
        self.connect_timeout = connect_timeout
        self.ssl_context = ssl_context or ssl.create_default_context()
        self._idle: dict[str, list[_Connection]] = {}
        self._proxies = urllib.request.getproxies()

    def prepare(self, url: str, headers: Mapping[str, str], body: bytes) -> Request:
        """A POST as bytes on the wire, and where it goes."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise H1Error(f"unsupported upstream URL {url!r}")
        secure = parts.scheme == "https"
        host = parts.hostname
        port = parts.port or (443 if secure else 80)
        proxy = self._proxy_for(parts.scheme, host)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if proxy is not None and not secure:
            target = url  # a plain-HTTP proxy takes the absolute URI
        name = f"[{host}]" if ":" in host else host
        default_port = port == (443 if secure else 80)
        lines = [f"POST {target} HTTP/1.1", f"host: {name if default_port else f'{name}:{port}'}"]
        for key, value in headers.items():
            if "\r" in value or "\n" in value or "\r" in key or "\n" in key:
                raise H1Error(f"header {key!r}: a line break in a header")  # never smuggled
            lines.append(f"{key}: {value}")
        lines.append(f"content-length: {len(body)}")
        if proxy is not None and not secure:
            credentials = _proxy_authorization(proxy)
            if credentials:
                lines.append(f"proxy-authorization: {credentials}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        return Request(f"{parts.scheme}://{name}:{port}", host, port, secure, proxy, head, body)

    def send_now(self, request: Request) -> H1Response | None:
        """Write `request` on a kept-alive connection before returning, if one is free."""
        conn = self._take(request.origin)
        return None if conn is None else conn.begin(request)

    async def send(self, request: Request) -> H1Response:
        """Write `request` (on a new connection if none is free) and return its response,
        whose head may still be on its way."""
        conn = self._take(request.origin)
        if conn is None:
            conn = await self._connect(
                request.origin, request.host, request.port, request.secure, request.proxy
            )
        return conn.begin(request)

    def _proxy_for(self, scheme: str, host: str) -> str | None:
        proxy = self._proxies.get(scheme)
        if not proxy or urllib.request.proxy_bypass(host):
            return None
        return proxy

    def _take(self, origin: str) -> _Connection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            if not conn.closed and now - conn.idle_since < IDLE_KEEPALIVE_S:
                conn.reused = True
                return conn
            conn.abort()
        return None

    def _park(self, conn: _Connection) -> None:
        idle = self._idle.setdefault(conn.origin, [])
        if len(idle) >= MAX_IDLE_PER_ORIGIN:
            conn.abort()
            return
        conn.idle_since = time.monotonic()
        idle.append(conn)

    def _forget(self, conn: _Connection) -> None:
        idle = self._idle.get(conn.origin)
        if idle and conn in idle:
            idle.remove(conn)

    async def _connect(
        self, origin: str, host: str, port: int, secure: bool, proxy: str | None
    ) -> _Connection:
        loop = asyncio.get_running_loop()
        context = self.ssl_context if secure else None
        try:
            async with _timeout(self.connect_timeout):
                if proxy is None:
                    _, conn = await loop.create_connection(
                        lambda: _Connection(self, origin),
                        host,
                        port,
                        ssl=context,
                        server_hostname=host if secure else None,
                    )
                    return conn
                return await self._via_proxy(origin, host, port, context, proxy)
        except TimeoutError:
            raise H1Error(f"connecting to {origin} timed out") from None
        except (OSError, ssl.SSLError) as exc:
            raise H1Error(f"cannot connect to {origin}: {exc}") from exc

    async def _via_proxy(
        self, origin: str, host: str, port: int, context: ssl.SSLContext | None, proxy: str
    ) -> _Connection:
        loop = asyncio.get_running_loop()
        p = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        if p.scheme != "http" or not p.hostname:
            raise H1Error(f"unsupported proxy {p.scheme}://{p.hostname}")
        proxy_port = p.port or 80
        if context is None:  # plain HTTP through the proxy: absolute-URI requests
            _, conn = await loop.create_connection(
                lambda: _Connection(self, origin), p.hostname, proxy_port
            )
            return conn
        # https: a CONNECT tunnel, then TLS to the upstream inside it.
        transport, tunnel = await loop.create_connection(
            lambda: _Tunnel(loop), p.hostname, proxy_port
        )
        authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        connect = f"CONNECT {authority} HTTP/1.1\r\nhost: {authority}\r\n"
        credentials = _proxy_authorization(proxy)
        if credentials:
            connect += f"proxy-authorization: {credentials}\r\n"
        transport.write((connect + "\r\n").encode("latin-1"))
        try:
            head = await tunnel.head
        except BaseException:
            transport.abort()
            raise
        status_line = head.split(b"\r\n", 1)[0].split()
        if len(status_line) < 2 or status_line[1] != b"200":
            transport.abort()
            raise H1Error(f"the proxy refused the tunnel: {head[:200]!r}")
        conn = _Connection(self, origin)
        tls = await loop.start_tls(transport, conn, context, server_hostname=host)
        if tls is None:  # pragma: no cover - start_tls returns None only on close
            raise H1Error("the TLS tunnel closed")
        conn.connection_made(tls)
        return conn

    def close(self) -> None:
        for idle in self._idle.values():
            for conn in list(idle):
                conn.abort()
        self._idle.clear()
