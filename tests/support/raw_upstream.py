"""The test suite's one upstream on raw sockets, for tests that watch the connections
themselves or must break HTTP at the byte level: how many are open and busy, what each
request carried, a reply scripted byte for byte, paced, endless or cut.

`RawServer` is the server: HTTP/1.1 requests with a Content-Length, read on its own event
loop in a thread (so a test drives the proxy, a real process, with blocking clients while
it counts), each answered by the subclass's `answer`. `RawUpstream` answers with a `Reply`
chosen per request; the fault suite's `FaultyUpstream` (tests/support/faulty_upstream.py) by the
scenario its model names; the error table's by a script. Replies are recorded provider
streams (tests/fixtures) or built from their chunk shapes.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def chat_chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    """One Chat Completions stream chunk, in the recorded gpt-4o shape
    (tests/fixtures/chat/oaipy-gpt4o-text-usage.sse)."""
    chunk = {
        "id": "chatcmpl-raw",
        "object": "chat.completion.chunk",
        "created": 1727346171,
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def chat_json(text: str) -> bytes:
    return orjson.dumps(
        {
            "id": "chatcmpl-raw",
            "object": "chat.completion",
            "created": 1727346171,
            "model": "gpt-4o-2024-08-06",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }
    )


@dataclass
class Reply:
    """What the upstream answers: a status and body, or a stream of SSE pieces (each
    written after `delay` seconds; `endless` repeats the middle piece forever)."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    stream: list[bytes] | None = None
    delay: float = 0.0
    endless: bytes | None = None


def chat_stream(pieces: int, size: int = 40, delay: float = 0.0) -> Reply:
    words = [chat_chunk({"role": "assistant", "content": ""})]
    words += [chat_chunk({"content": "x" * size}) for _ in range(pieces)]
    words += [chat_chunk({}, "stop"), b"data: [DONE]\n\n"]
    return Reply(stream=words, delay=delay, content_type="text/event-stream")


def endless_chat_stream(size: int = 4096) -> Reply:
    return Reply(
        stream=[chat_chunk({"role": "assistant", "content": ""})],
        endless=chat_chunk({"content": "x" * size}),
        content_type="text/event-stream",
    )


def anthropic_stream(delay: float = 0.0) -> Reply:
    """The recorded Anthropic SDK stream, one event per write."""
    data = (FIXTURES / "anthropic" / "sdkpy-basic-text.sse").read_bytes()
    events = [e + b"\n\n" for e in data.replace(b"\r\n", b"\n").split(b"\n\n") if e.strip()]
    return Reply(stream=events, delay=delay, content_type="text/event-stream")


# How long a stall lasts at most: far past every timeout the tests configure, short enough
# that a proxy which never hangs up cannot hold a test run for long.
STALL_S = 20.0

Header = tuple[bytes, bytes]


@dataclass(frozen=True)
class Request:
    """One request as the upstream read it."""

    head: bytes  # the request line and headers, through the blank line
    method: str
    path: str
    headers: dict[str, str]  # names lowercased
    body: bytes

    @property
    def raw(self) -> bytes:
        return self.head + self.body


class Conn:
    """One accepted connection: its streams and whether a response is in progress."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.busy = False

    def write(self, data: bytes) -> None:
        self.writer.write(data)

    async def drain(self) -> None:
        await self.writer.drain()

    async def head(self, status: int, headers: Sequence[Header], reason: bytes = b"") -> None:
        reason = reason or {200: b"OK", 429: b"Too Many Requests"}.get(status, b"Status")
        lines = [b"HTTP/1.1 %d %s" % (status, reason)]
        lines += [k + b": " + v for k, v in headers]
        self.write(b"\r\n".join(lines) + b"\r\n\r\n")
        await self.drain()

    async def chunk(self, data: bytes) -> None:
        if data:
            self.write(b"%x\r\n%s\r\n" % (len(data), data))
            await self.drain()

    async def end_chunks(self) -> None:
        self.write(b"0\r\n\r\n")
        await self.drain()

    async def whole(
        self, status: int, body: bytes, content_type: bytes, extra: Sequence[Header] = ()
    ) -> None:
        headers = [(b"content-type", content_type), (b"content-length", b"%d" % len(body))]
        await self.head(status, [*headers, *extra])
        self.write(body)
        await self.drain()

    async def hold(self) -> None:
        """Say nothing until the proxy hangs up (or STALL_S): a stalled upstream."""
        with contextlib.suppress(TimeoutError, ConnectionError):
            async with asyncio.timeout(STALL_S):
                while await self.reader.read(65536):
                    pass


class RawServer:
    """The server, on its own event loop in a thread; a context manager. A subclass's
    `answer` replies to each request and says whether the connection may serve another."""

    # After the last answer: close the connection (FIN), or reset it as a crashed peer would.
    abort_at_end = False

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._conns: set[Conn] = set()
        self._lock = threading.Lock()
        self.requests: list[Request] = []
        self.accepted = 0
        self.server: asyncio.Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Any:
        self._thread.start()
        self.server = self._call(self._start())
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        self._call(self._stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    async def _start(self) -> asyncio.Server:
        return await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=1 << 20)

    async def _stop(self) -> None:
        """Close the listener and every connection, and end every answer still running."""
        assert self.server is not None
        self.server.close()
        for conn in list(self._conns):
            conn.writer.transport.abort()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def answer(self, conn: Conn, req: Request) -> bool:
        raise NotImplementedError

    # -- counting ------------------------------------------------------------------------

    def requests_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def open_connections(self) -> int:
        return len(self._conns)

    def busy_connections(self) -> int:
        return sum(1 for c in self._conns if c.busy)

    def close_idle(self) -> int:
        """Close every kept-alive connection between requests (the upstream's own
        keep-alive timeout, early); returns how many."""

        async def close() -> int:
            idle = [c for c in self._conns if not c.busy]
            for c in idle:
                c.writer.transport.abort()
            return len(idle)

        closed: int = self._call(close())
        return closed

    def wait_for(self, check: Callable[[], bool], seconds: float = 10.0) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if check():
                return True
            time.sleep(0.02)
        return check()

    # -- serving -------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = Conn(reader, writer)
        self._conns.add(conn)
        with self._lock:
            self.accepted += 1
        try:
            while True:
                req = await self._read(conn)
                if req is None:
                    return
                conn.busy = True
                with self._lock:
                    self.requests.append(req)
                if not await self.answer(conn, req):
                    return
                conn.busy = False
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return
        finally:
            self._conns.discard(conn)
            if self.abort_at_end:
                writer.transport.abort()
            else:
                writer.close()

    async def _read(self, conn: Conn) -> Request | None:
        try:
            head = await conn.reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if line:
                key, _, value = line.partition(":")
                headers[key.strip().lower()] = value.strip()
        body = await conn.reader.readexactly(int(headers.get("content-length", "0")))
        return Request(head, method, path, headers, body)


class RawUpstream(RawServer):
    """Answers each request with the `Reply` that `reply(head, body)` picks."""

    def __init__(
        self, reply: Callable[[bytes, bytes], Reply] = lambda head, body: chat_stream(3)
    ) -> None:
        super().__init__()
        self.reply = reply
        self.bytes_written = 0

    async def answer(self, conn: Conn, req: Request) -> bool:
        await self._answer(conn, self.reply(req.head, req.body))
        return True

    async def _answer(self, conn: Conn, reply: Reply) -> None:
        headers = [(b"content-type", reply.content_type.encode())]
        if reply.stream is None:
            if reply.delay:  # watching for the proxy to drop the request meanwhile
                with contextlib.suppress(TimeoutError):
                    if not await asyncio.wait_for(conn.reader.read(1), reply.delay):
                        raise ConnectionError("the proxy closed the connection")
            await conn.whole(reply.status, reply.body, reply.content_type.encode())
            return
        await conn.head(reply.status, [*headers, (b"transfer-encoding", b"chunked")])

        async def piece(data: bytes) -> None:
            if reply.delay:
                await asyncio.sleep(reply.delay)
            await conn.chunk(data)
            self.bytes_written += len(data)

        for data in reply.stream:
            await piece(data)
        while reply.endless is not None:
            await piece(reply.endless)
        await conn.end_chunks()
