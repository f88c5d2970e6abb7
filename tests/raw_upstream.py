"""A scripted upstream on raw sockets, for tests that watch the connections themselves:
how many are open, what each request carried, a stream paced or endless.

Runs its own event loop in a thread, so a test drives the proxy (a real process) with
blocking clients while it counts. Replies are recorded provider streams (tests/fixtures)
or built from their chunk shapes.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from hydra_proxy.mock.server import free_port

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def chat_chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    """One Chat Completions stream chunk, in the recorded gpt-4o shape
    (tests/fixtures/openai/oaipy-gpt4o-text-usage.sse)."""
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


@dataclass
class RawUpstream:
    reply: Callable[[bytes, bytes], Reply] = field(default=lambda head, body: chat_stream(3))
    port: int = field(default_factory=free_port)
    open_connections: int = 0
    accepted: int = 0
    requests: list[bytes] = field(default_factory=list)
    bytes_written: int = 0

    def __post_init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> RawUpstream:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._thread.join(10)

    async def _stop(self) -> None:
        """Close the listener and every connection, then end the loop."""
        self._server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._loop.call_soon(self._loop.stop)

    def requests_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def wait_for(self, check: Callable[[], bool], seconds: float = 10.0) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if check():
                return True
            time.sleep(0.02)
        return check()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", self.port)
        )
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with self._lock:
            self.open_connections += 1
            self.accepted += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length)
                with self._lock:
                    self.requests.append(head + body)
                await self._answer(reader, writer, self.reply(head, body))
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            with self._lock:
                self.open_connections -= 1
            writer.close()

    async def _answer(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, reply: Reply
    ) -> None:
        head = f"HTTP/1.1 {reply.status} X\r\ncontent-type: {reply.content_type}\r\n"
        if reply.stream is None:
            if reply.delay:  # watching for the proxy to drop the request meanwhile
                with contextlib.suppress(TimeoutError):
                    if not await asyncio.wait_for(reader.read(1), reply.delay):
                        raise ConnectionError("the proxy closed the connection")
            writer.write(f"{head}content-length: {len(reply.body)}\r\n\r\n".encode() + reply.body)
            await writer.drain()
            return
        writer.write(f"{head}transfer-encoding: chunked\r\n\r\n".encode())

        async def piece(data: bytes) -> None:
            if reply.delay:
                await asyncio.sleep(reply.delay)
            writer.write(b"%x\r\n%s\r\n" % (len(data), data))
            await writer.drain()
            self.bytes_written += len(data)

        for data in reply.stream:
            await piece(data)
        while reply.endless is not None:
            await piece(reply.endless)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
