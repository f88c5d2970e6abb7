"""The fleet benchmark's upstream: an OpenAI Chat server that paces every stream at a fixed
rate and stamps each content delta with the moment it is written.

    python benches/fleetlib_upstream.py --port P --events 300 --interval-ms 50

One SSE event per write (one HTTP/1.1 chunk each), as a model streams tokens. Each content
delta's text is ``~<stream>.<seq>~<ns>~``: the stream's number, the event's index in it
and CLOCK_MONOTONIC in nanoseconds taken just before the write. The client reads the same
clock on receipt (one machine, one clock), so their difference is the delivery delay of
that event; through the proxy it includes the proxy's part.

Pacing is a timing wheel, not a timer per stream: a stream is put in the bucket of the
millisecond its request arrived in, modulo the interval, and one tick per millisecond writes
the next event of every stream in the current bucket (a timer per stream would cost the
upstream a wake-up per event, CPU the proxy under test needs on a small machine). The
first chunk (the role) goes out on arrival; after the last content delta the finish chunk,
the usage chunk and ``[DONE]`` follow on the stream's next ticks.

Stdout gets one line, ``ready <port>``, once listening. Runs until killed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import sys
import time
from typing import Any

import orjson

HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
    b"transfer-encoding: chunked\r\n\r\n"
)
DONE = b"data: [DONE]\n\n"
# A content delta: stream number, then ~stream.seq~monotonic ns~ as its text.
CONTENT = (
    b'data: {"id":"chatcmpl-fleet%d","object":"chat.completion.chunk","created":1700000000,'
    b'"model":"fleet","choices":[{"index":0,"delta":{"content":"~%d.%d~%d~"},'
    b'"finish_reason":null}]}\n\n'
)
MAX_HEAD = 64 * 1024
MAX_BODY = 64 * 1024 * 1024


def chunk(event: bytes) -> bytes:
    """`event` as one HTTP/1.1 chunk."""
    return b"%x\r\n%s\r\n" % (len(event), event)


def sse(obj: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


class Stream:
    """One paced reply on one connection."""

    __slots__ = ("conn", "events", "number", "sent", "usage")

    def __init__(self, conn: Connection, number: int, events: int, usage: bool) -> None:
        self.conn = conn
        self.number = number
        self.events = events
        self.usage = usage
        self.sent = 0  # content deltas written

    def prefix(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse(
            {
                "id": f"chatcmpl-fleet{self.number}",
                "object": "chat.completion.chunk",
                "created": 1700000000,
                "model": "fleet",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )

    def tick(self) -> bool:
        """Write the next event; False once the reply is complete."""
        transport = self.conn.transport
        if transport is None or transport.is_closing():
            return False
        if self.sent < self.events:
            seq = self.sent
            self.sent += 1
            # The stamp is taken last, right before the write.
            event = CONTENT % (self.number, self.number, seq, time.monotonic_ns())
            transport.write(b"%x\r\n%s\r\n" % (len(event), event))
            return True
        tail = self.prefix({}, "stop")
        if self.usage:
            tail += sse(
                {
                    "id": f"chatcmpl-fleet{self.number}",
                    "object": "chat.completion.chunk",
                    "created": 1700000000,
                    "model": "fleet",
                    "choices": [],
                    "usage": {
                        "prompt_tokens": 12,
                        "completion_tokens": self.events,
                        "total_tokens": 12 + self.events,
                    },
                }
            )
        transport.write(chunk(tail) + chunk(DONE) + b"0\r\n\r\n")
        self.conn.reply_done()
        return False


class Wheel:
    """Buckets of streams, one per millisecond of the interval; one tick per millisecond."""

    def __init__(self, interval_ms: int) -> None:
        self.buckets: list[list[Stream]] = [[] for _ in range(interval_ms)]
        self.interval_ms = interval_ms
        self.epoch = time.monotonic()
        self.done_ticks = 0

    def add(self, stream: Stream) -> None:
        # The bucket after the current one: its first content delta is one interval away
        # at most, and never in the tick that is running.
        now_tick = int((time.monotonic() - self.epoch) * 1000)
        self.buckets[(now_tick + 1) % self.interval_ms].append(stream)

    async def run(self) -> None:
        while True:
            target = self.epoch + (self.done_ticks + 1) / 1000
            delay = target - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            # Late ticks are caught up one by one: every stream keeps its own phase.
            now_tick = int((time.monotonic() - self.epoch) * 1000)
            while self.done_ticks < now_tick:
                self.done_ticks += 1
                bucket = self.buckets[self.done_ticks % self.interval_ms]
                if bucket:
                    bucket[:] = [s for s in bucket if s.tick()]


class Connection(asyncio.Protocol):
    """HTTP/1.1 keep-alive: one request at a time, each answered by a paced stream."""

    count = 0

    def __init__(self, wheel: Wheel, events: int) -> None:
        self.wheel = wheel
        self.events = events
        self.transport: asyncio.Transport | None = None
        self.buffer = b""
        self.busy = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self.take_request()

    def take_request(self) -> None:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > MAX_HEAD and self.transport is not None:
                self.transport.close()
            return
        head = self.buffer[:end].lower()
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip() == b"content-length":
                length = int(value.strip())
        if length > MAX_BODY:
            if self.transport is not None:
                self.transport.close()
            return
        if len(self.buffer) < end + 4 + length:
            return
        body = self.buffer[end + 4 : end + 4 + length]
        self.buffer = self.buffer[end + 4 + length :]
        assert self.transport is not None
        if head.startswith(b"get "):  # the readiness probe
            self.transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            if self.buffer:
                self.take_request()
            return
        self.busy = True
        Connection.count += 1
        stream = Stream(self, Connection.count, self.events, b'"include_usage":true' in body)
        self.transport.write(HEAD + chunk(stream.prefix({"role": "assistant", "content": ""})))
        self.wheel.add(stream)

    def reply_done(self) -> None:
        self.busy = False
        if self.buffer:
            self.take_request()


async def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--events", type=int, default=300, help="content deltas per stream")
    p.add_argument("--interval-ms", type=int, default=50, help="between two deltas of a stream")
    args = p.parse_args(argv)
    wheel = Wheel(max(1, args.interval_ms))
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: Connection(wheel, args.events), args.host, args.port, backlog=4096
    )
    port = server.sockets[0].getsockname()[1]
    print(f"ready {port}", flush=True)
    await wheel.run()


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        try:
            import uvloop
        except ImportError:  # pragma: no cover - uvloop is a dependency of hydra-proxy
            asyncio.run(main())
        else:
            uvloop.run(main())
    sys.exit(0)
