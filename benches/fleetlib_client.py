"""The fleet benchmark's client: N concurrent paced streams, every event checked and timed.

    python benches/fleetlib_client.py < job.json > result.json

One raw asyncio connection per stream (httptools reads the response framing, as the
proxy's own upstream client does), opened evenly over ``ramp_s`` so the streams' events
spread over the upstream's interval. Every SSE event is parsed (orjson); every content
delta carries the upstream's ``~stream.seq~ns~`` stamp (benches/fleetlib_upstream.py), and
its delivery delay is CLOCK_MONOTONIC at receipt minus the stamp.

A stream is complete when its HTTP/1.1 message ended (the chunked body's last chunk), its
events follow the protocol (Anthropic: message_start first, one text block whose deltas
are the upstream's, message_delta, message_stop last, pings anywhere after the start; Chat:
chunks then ``data: [DONE]``), every data line is JSON, no error event came, and the deltas
are exactly the upstream's ``0 .. events-1`` of one stream, in order. Anything else is
counted by what went wrong: failed (status or transport), truncated (the message or the
deltas ended early), malformed (any other break of the rules).

Measured in the steady window (every stream open, none finished yet): the delays of
events received in it, events per second, the CPU of the proxy's process tree, the
upstream's and the client's own, and the proxy tree's peak RSS (sampled every 250 ms)
above its RSS before the first stream opened. ``keep`` streams' whole bodies are written
to ``keep_dir`` for the orchestrator's full grammar check.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import sys
import time
from array import array
from pathlib import Path
from typing import Any

import httptools
import orjson

import loadlib_proc as proc

MAX_ERRORS = 5
MAX_BODY_KEPT = 16 * 1024 * 1024


def percentiles(values: array[int]) -> dict[str, float | int | None]:
    """p50/p90/p99/p99.9/max of nanosecond values, in milliseconds (nearest rank)."""
    ordered = sorted(values)
    n = len(ordered)

    def at(q: float) -> float | None:
        if not n:
            return None
        return ordered[min(n - 1, max(0, int(q * n + 0.5) - 1))] / 1e6

    return {
        "n": n,
        "p50_ms": at(0.50),
        "p90_ms": at(0.90),
        "p99_ms": at(0.99),
        "p999_ms": at(0.999),
        "max_ms": ordered[-1] / 1e6 if n else None,
    }


def runqueue_wait_s(pids: list[int]) -> float:
    """Seconds the processes' threads spent runnable but waiting for a CPU, so far
    (/proc/<pid>/task/<tid>/schedstat, second field): how much a loaded machine held
    them back."""
    total = 0
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                total += int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[1])
            except (OSError, IndexError, ValueError):
                continue
    return total / 1e9


class Run:
    """What every stream of one job adds to."""

    def __init__(self, job: dict[str, Any]) -> None:
        self.job = job
        self.window = (float("inf"), float("inf"))  # monotonic seconds
        self.delays = array("q")
        self.events_in_window = 0
        self.deltas_total = 0
        self.first_bytes = array("q")
        self.outcomes: dict[str, int] = {}
        self.errors: list[str] = []
        self.open_streams = 0

    def outcome(self, kind: str, detail: str = "") -> None:
        self.outcomes[kind] = self.outcomes.get(kind, 0) + 1
        if detail and len(self.errors) < MAX_ERRORS:
            self.errors.append(f"{kind}: {detail[:400]}")


class Anthropic:
    """The rules of an Anthropic Messages stream carrying one text block."""

    def __init__(self) -> None:
        self.state = "start"  # start -> message -> block -> closed -> delta -> stopped

    def event(self, block: bytes) -> tuple[str | None, str | None]:
        """(the delta text, None) or (None, what broke); (None, None) for framing events."""
        name, data = b"", b""
        for line in block.split(b"\n"):
            if line.startswith(b"event: "):
                name = line[7:]
            elif line.startswith(b"data: "):
                data = line[6:]
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            return None, f"data is not JSON: {block[:200]!r}"
        if not isinstance(obj, dict) or obj.get("type") != name.decode(errors="replace"):
            return None, f"event {name!r} does not match its data: {block[:200]!r}"
        state = self.state
        if name == b"ping" and state != "start" and state != "stopped":
            return None, None
        expected = {
            "start": b"message_start",
            "message": b"content_block_start",
            "closed": b"message_delta",
            "delta": b"message_stop",
        }
        if state == "block":
            if name == b"content_block_delta":
                delta = obj.get("delta") or {}
                if delta.get("type") != "text_delta" or obj.get("index") != 0:
                    return None, f"unexpected delta {block[:200]!r}"
                return str(delta.get("text", "")), None
            if name == b"content_block_stop":
                self.state = "closed"
                return None, None
            return None, f"{name!r} inside the text block"
        if expected.get(state) != name:
            return None, f"{name!r} where {expected.get(state, b'nothing')!r} belongs"
        if (
            name == b"content_block_start"
            and (obj.get("content_block") or {}).get("type") != "text"
        ):
            return None, f"not a text block: {block[:200]!r}"
        self.state = {"start": "message", "message": "block", "closed": "delta"}.get(
            state, "stopped"
        )
        return None, None

    @property
    def ended(self) -> bool:
        return self.state == "stopped"


class Chat:
    """The rules of an OpenAI Chat stream: chunks, then ``[DONE]``."""

    def __init__(self) -> None:
        self.done = False

    def event(self, block: bytes) -> tuple[str | None, str | None]:
        if not block.startswith(b"data: ") or self.done:
            return None, f"unexpected event {block[:200]!r}"
        data = block[6:]
        if data == b"[DONE]":
            self.done = True
            return None, None
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            return None, f"data is not JSON: {block[:200]!r}"
        if "error" in obj or obj.get("object") != "chat.completion.chunk":
            return None, f"not a chunk: {block[:200]!r}"
        choices = obj.get("choices") or []
        if not choices:
            return None, None  # the usage chunk
        content = (choices[0].get("delta") or {}).get("content")
        return (content or None), None

    @property
    def ended(self) -> bool:
        return self.done


class StreamClient(asyncio.Protocol):
    """One request and its streamed response."""

    def __init__(self, run: Run, request: bytes, number: int) -> None:
        self.run = run
        self.request = request
        self.number = number
        self.grammar: Anthropic | Chat = (
            Anthropic() if run.job["protocol"] == "anthropic" else Chat()
        )
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.started = 0
        self.now = 0
        self.pending = b""
        self.status = 0
        self.next_seq = 0
        self.upstream_stream: bytes | None = None
        self.problem: tuple[str, str] | None = None
        self.message_done = False
        self.kept: list[bytes] | None = [] if number < run.job.get("keep", 0) else None
        self.finished = asyncio.get_running_loop().create_future()

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass
        self.started = time.monotonic_ns()
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        self.now = time.monotonic_ns()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.fail("malformed", f"HTTP framing: {exc}")

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.finished.done():
            if self.problem is None and not self.message_done:
                self.problem = ("truncated", f"connection closed after {self.next_seq} deltas")
            self.finished.set_result(None)

    # -- httptools callbacks
    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        if self.status != 200:
            self.fail("failed", f"HTTP {self.status}")
        else:
            self.run.first_bytes.append(self.now - self.started)

    def on_body(self, body: bytes) -> None:
        if self.problem is not None:
            return
        if self.kept is not None and sum(map(len, self.kept)) < MAX_BODY_KEPT:
            self.kept.append(body)
        buffer = self.pending + body
        end = buffer.rfind(b"\n\n")
        if end < 0:
            self.pending = buffer
            return
        self.pending = buffer[end + 2 :]
        run = self.run
        in_window = run.window[0] <= self.now / 1e9 < run.window[1]
        for block in buffer[:end].split(b"\n\n"):
            if block.startswith(b"\n"):
                block = block.lstrip(b"\n")
            text, broken = self.grammar.event(block)
            if broken is not None:
                self.fail("malformed", broken)
                return
            if text is None:
                continue
            _, stream_seq, stamp, _ = text.split("~")
            stream, _, seq = stream_seq.partition(".")
            if self.upstream_stream is None:
                self.upstream_stream = stream.encode()
            if int(seq) != self.next_seq or stream.encode() != self.upstream_stream:
                self.fail("malformed", f"delta {stream_seq} where {self.next_seq} was due")
                return
            self.next_seq += 1
            run.deltas_total += 1
            if in_window:
                run.events_in_window += 1
                run.delays.append(self.now - int(stamp))

    def on_message_complete(self) -> None:
        self.message_done = True
        if self.problem is None:
            if self.pending.strip():
                self.problem = ("truncated", f"body ended inside an event: {self.pending[:200]!r}")
            elif not self.grammar.ended:
                self.problem = ("truncated", "body ended before the terminal event")
            elif self.next_seq != self.run.job["events"]:
                self.problem = ("truncated", f"{self.next_seq} of {self.run.job['events']} deltas")
        if self.transport is not None:
            self.transport.close()

    def fail(self, kind: str, detail: str) -> None:
        if self.problem is None:
            self.problem = (kind, detail)
        if self.transport is not None:
            self.transport.close()


def request_bytes(job: dict[str, Any]) -> bytes:
    body = orjson.dumps(job["body"])
    head = [f"POST {job['path']} HTTP/1.1", f"host: {job['host']}:{job['port']}"]
    head += [f"{k}: {v}" for k, v in job["headers"].items()]
    head += [f"content-length: {len(body)}", "", ""]
    return "\r\n".join(head).encode() + body


async def one(run: Run, request: bytes, number: int, start_at: float) -> None:
    loop = asyncio.get_running_loop()
    await asyncio.sleep(max(0.0, start_at - time.monotonic()))
    stream: StreamClient | None = None
    try:
        _, stream = await asyncio.wait_for(
            loop.create_connection(
                lambda: StreamClient(run, request, number), run.job["host"], run.job["port"]
            ),
            timeout=30.0,
        )
        await asyncio.wait_for(stream.finished, timeout=run.job["stream_timeout_s"])
    except (OSError, asyncio.TimeoutError) as exc:
        if stream is not None and stream.transport is not None:
            stream.transport.close()
        run.outcome("failed", f"{type(exc).__name__}: {exc}")
        return
    if stream.problem is not None:
        run.outcome(*stream.problem)
    else:
        run.outcome("complete")
    if stream.kept is not None:
        keep_dir = Path(run.job["keep_dir"])
        (keep_dir / f"stream-{number}.body").write_bytes(b"".join(stream.kept))


async def fleet(job: dict[str, Any]) -> dict[str, Any]:
    run = Run(job)
    n: int = job["streams"]
    request = request_bytes(job)
    roots: list[int] = job.get("pids") or []
    upstream_roots: list[int] = job.get("upstream_pids") or []
    pids = proc.trees(roots)
    baseline_rss = proc.rss_bytes(pids)
    start = time.monotonic()
    ramp = job["ramp_s"]
    lifetime = job["events"] * job["interval_ms"] / 1000
    # Steady: every stream opened (plus a second), none finished yet (minus half a second).
    window = (start + ramp + job["settle_s"], start + lifetime - 0.5)
    if window[1] - window[0] < 0.5:
        raise ValueError("streams too short for a steady window after the ramp")
    run.window = window
    tasks = [asyncio.ensure_future(one(run, request, i, start + ramp * i / n)) for i in range(n)]

    await asyncio.sleep(max(0.0, window[0] - time.monotonic()))
    pids = proc.trees(roots)  # granian's workers
    upstream_pids = proc.trees(upstream_roots)
    cpu_before = proc.cpu_seconds(pids)
    upstream_before = proc.cpu_seconds(upstream_pids)
    usage_before = resource.getrusage(resource.RUSAGE_SELF)
    waits_before = [runqueue_wait_s(p) for p in (pids, upstream_pids, [os.getpid()])]
    t0 = time.monotonic()
    peak_rss = 0
    while time.monotonic() < window[1]:
        peak_rss = max(peak_rss, proc.rss_bytes(pids))
        await asyncio.sleep(min(0.25, max(0.0, window[1] - time.monotonic())))
    window_s = time.monotonic() - t0
    cpu = proc.cpu_delta(cpu_before, proc.cpu_seconds(pids))
    upstream_cpu = proc.cpu_delta(upstream_before, proc.cpu_seconds(upstream_pids))
    waits = [
        runqueue_wait_s(p) - before
        for p, before in zip((pids, upstream_pids, [os.getpid()]), waits_before, strict=True)
    ]
    usage_after = resource.getrusage(resource.RUSAGE_SELF)
    client_cpu = (usage_after.ru_utime + usage_after.ru_stime) - (
        usage_before.ru_utime + usage_before.ru_stime
    )
    await asyncio.gather(*tasks)
    events = run.events_in_window
    return {
        "kind": "fleet",
        "streams": n,
        "events_per_stream": job["events"],
        "interval_ms": job["interval_ms"],
        "offered_events_per_s": n * 1000 / job["interval_ms"],
        "outcomes": run.outcomes,
        "complete": run.outcomes.get("complete", 0),
        "errors": run.errors,
        "deltas_total": run.deltas_total,
        "window_s": window_s,
        "events_in_window": events,
        "events_per_s": events / window_s,
        "delay": percentiles(run.delays),
        "first_byte": percentiles(run.first_bytes),
        "proxy_cpu_s": cpu,
        "proxy_cpu_share": cpu / window_s,
        "proxy_cpu_us_per_event": cpu * 1e6 / events if events else None,
        "upstream_cpu_share": upstream_cpu / window_s,
        "client_cpu_share": client_cpu / window_s,
        # Seconds per second the threads waited for a CPU while runnable (machine load).
        "proxy_runqueue_wait_share": waits[0] / window_s,
        "upstream_runqueue_wait_share": waits[1] / window_s,
        "client_runqueue_wait_share": waits[2] / window_s,
        "proxy_pids": pids,
        "baseline_rss_bytes": baseline_rss,
        "peak_rss_bytes": peak_rss,
        "rss_per_stream_bytes": (peak_rss - baseline_rss) / n if roots and n else None,
    }


def main() -> int:
    job = orjson.loads(sys.stdin.buffer.read())
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency of hydra-proxy
        result = asyncio.run(fleet(job))
    else:
        result = uvloop.run(fleet(job))
    sys.stdout.buffer.write(orjson.dumps(result))
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
