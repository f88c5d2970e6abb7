"""The load generator: N concurrent streaming clients (aiohttp on uvloop) that timestamp
every SSE event. Runs in its own process, apart from the servers it measures:

    python benches/loadlib_client.py < jobs.json > results.json

stdin holds a JSON list of jobs, run one after another; stdout gets one result per job.

A ``throughput`` job is a closed loop: ``concurrency`` workers each send a request, read
the whole stream, and send the next, until ``warmup_s + window_s`` have passed (and at most
``max_requests`` were started). Only the measurement window (after the warm-up) counts:
requests completed in it, events received in it, first bytes and inter-event gaps seen in
it, and the CPU time the measured processes spent in it (read from /proc at its edges).
Requests still running at the window's end get ``drain_s`` more to finish (not counted,
but still checked for completeness), then are cut.

A ``hold`` job opens ``streams`` long streams at once, waits until each has received its
first event (at most ``open_timeout_s``), holds them ``hold_s`` seconds, then drops them;
the RSS of the measured process tree is sampled throughout.

A stream is complete when it ends with the protocol's terminal event (``message_stop`` for
Anthropic, ``data: [DONE]`` for OpenAI) and carried no error event.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import resource
import sys
import time
from array import array
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

import loadlib_proc as proc

MAX_GAP_SAMPLES = 4_000_000
MAX_ERROR_SAMPLES = 5
TERMINAL = {"anthropic": (b"message_stop",), "chat": (b"data: [DONE]",)}
# One per content delta (text, reasoning or tool arguments) in each protocol: every upstream
# delta becomes exactly one client delta, whatever framing events surround it, so their
# spacing compares across protocols. (The OpenAI marker also matches an empty role chunk's
# "content":"", which is subtracted.)
DELTA_MARKS = {"anthropic": b"event: content_block_delta", "chat": b'"content":"'}
EMPTY_DELTA = {"anthropic": b"\x00never\x00", "chat": b'"content":""'}
ERROR_MARKS = {"anthropic": (b"event: error",), "chat": (b'{"error"', b'"error":{')}


def percentile(sorted_values: list[float] | array[float], q: float, zeros: int = 0) -> float:
    """The q-quantile (0..1, nearest rank) of ``zeros`` zeros plus ``sorted_values``."""
    n = len(sorted_values) + zeros
    if n == 0:
        return float("nan")
    rank = min(n - 1, max(0, int(q * n + 0.5) - 1)) if q > 0 else 0
    if rank < zeros:
        return 0.0
    return float(sorted_values[rank - zeros])


def summarize(values: list[float] | array[float], zeros: int = 0) -> dict[str, Any]:
    ordered = sorted(values)
    return {
        "n": len(ordered) + zeros,
        "p50": percentile(ordered, 0.50, zeros),
        "p90": percentile(ordered, 0.90, zeros),
        "p99": percentile(ordered, 0.99, zeros),
        "max": float(ordered[-1]) if ordered else (0.0 if zeros else float("nan")),
    }


@dataclass
class Stats:
    window_start: float = 0.0
    window_end: float = float("inf")
    started: int = 0
    completed: int = 0  # complete streams that ended inside the window
    completed_total: int = 0  # complete streams, window or not
    complete_stream_events: int = 0  # events of those streams (all of them, window or not)
    incomplete: int = 0  # EOF without the terminal event, or with an error event
    failed: int = 0  # HTTP status != 200 or a transport error
    cut: int = 0  # still running when the job ended (not an error)
    events: int = 0  # SSE events received inside the window
    deltas: int = 0  # content deltas inside the window: one per upstream event relayed
    body_bytes: int = 0
    ttfb: list[float] = field(default_factory=list)
    ttft: list[float] = field(default_factory=list)  # to the first content delta
    gaps: array[float] = field(default_factory=lambda: array("d"))
    zero_gaps: int = 0
    delta_gaps: array[float] = field(default_factory=lambda: array("d"))
    zero_delta_gaps: int = 0
    gaps_truncated: bool = False
    errors: list[str] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)

    def error(self, text: str) -> None:
        if len(self.errors) < MAX_ERROR_SAMPLES:
            self.errors.append(text[:500])


async def stream_once(
    session: aiohttp.ClientSession,
    job: dict[str, Any],
    stats: Stats,
    on_first: Callable[[], None] | None = None,
) -> None:
    """One request: read its SSE stream to the end, timestamping every event."""
    terminal = TERMINAL[job["protocol"]]
    error_marks = ERROR_MARKS[job["protocol"]]
    delta_mark = DELTA_MARKS[job["protocol"]]
    empty_mark = EMPTY_DELTA[job["protocol"]]
    overlap = len(delta_mark) - 1
    bodies: list[bytes] = job["bodies"]
    body = bodies[stats.started % len(bodies)]  # a list: a session's turns, in order
    clock = time.perf_counter
    t0 = clock()
    stats.started += 1
    try:
        async with session.post(job["url"], data=body, headers=job["headers"]) as resp:
            key = str(resp.status)
            stats.statuses[key] = stats.statuses.get(key, 0) + 1
            if resp.status != 200:
                text = (await resp.content.read(2000)).decode("utf-8", "replace")
                stats.failed += 1
                stats.error(f"HTTP {resp.status}: {text}")
                return
            first = True
            last_t = 0.0
            last_delta_t = 0.0
            stream_events = 0
            prev_nl = False
            tail = b""
            saw_error = False
            async for chunk in resp.content.iter_any():
                t = clock()
                n = chunk.count(b"\n\n") + (1 if prev_nl and chunk[:1] == b"\n" else 0)
                prev_nl = chunk[-1:] == b"\n"
                joined = tail[-overlap:] + chunk
                d = joined.count(delta_mark) - joined.count(empty_mark)
                tail = (tail + chunk)[-512:] if len(chunk) < 512 else chunk[-512:]
                if not saw_error and any(m in chunk for m in error_marks):
                    saw_error = True
                in_window = stats.window_start <= t < stats.window_end
                if first:
                    first = False
                    if in_window:
                        stats.ttfb.append(t - t0)
                        stats.zero_gaps += max(0, n - 1)
                    if on_first is not None:
                        on_first()
                elif n and in_window:
                    if len(stats.gaps) < MAX_GAP_SAMPLES:
                        stats.gaps.append(t - last_t)
                    else:
                        stats.gaps_truncated = True
                    stats.zero_gaps += n - 1
                if n:
                    last_t = t
                    stream_events += n
                if d > 0:
                    if in_window:
                        if last_delta_t == 0.0:
                            stats.ttft.append(t - t0)
                        elif len(stats.delta_gaps) < MAX_GAP_SAMPLES:
                            stats.delta_gaps.append(t - last_delta_t)
                        stats.zero_delta_gaps += d - 1
                    last_delta_t = t
                if in_window:
                    stats.events += n
                    stats.deltas += max(0, d)
                    stats.body_bytes += len(chunk)
            complete = not saw_error and any(m in tail for m in terminal)
            if complete:
                stats.completed_total += 1
                stats.complete_stream_events += stream_events
                if stats.window_start <= clock() < stats.window_end:
                    stats.completed += 1
            else:
                stats.incomplete += 1
                stats.error(f"incomplete stream, last bytes: {tail[-300:]!r}")
    except asyncio.CancelledError:
        stats.cut += 1
        raise
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
        stats.failed += 1
        stats.error(f"{type(exc).__name__}: {exc}")


def _prepare(job: dict[str, Any]) -> None:
    """The job's request bodies: `body_paths` (sent in turn), `body_path` or `body`."""
    if job.get("body_paths"):
        job["bodies"] = [Path(raw).read_bytes() for raw in job["body_paths"]]
    elif job.get("body_path"):
        job["bodies"] = [Path(job["body_path"]).read_bytes()]
    else:
        job["bodies"] = [orjson.dumps(job["body"])]
    job["body_bytes"] = job["bodies"][0]


def _timeout(job: dict[str, Any]) -> aiohttp.ClientTimeout:
    return aiohttp.ClientTimeout(total=job.get("request_timeout_s", 120.0), connect=10.0)


async def _cancel_all(tasks: list[asyncio.Task[None]], seconds: float) -> None:
    pending = [t for t in tasks if not t.done()]
    if pending and seconds > 0:
        await asyncio.wait(pending, timeout=seconds)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def throughput(job: dict[str, Any]) -> dict[str, Any]:
    _prepare(job)
    concurrency: int = job["concurrency"]
    max_requests: int = job["max_requests"]
    stats = Stats()
    start = time.perf_counter()
    stats.window_start = start + job["warmup_s"]
    stats.window_end = stats.window_start + job["window_s"]
    roots: list[int] = job.get("pids") or []
    pids: list[int] = []
    cpu_before: dict[int, float] = {}
    upstream_roots: list[int] = job.get("upstream_pids") or []
    upstream_pids: list[int] = []
    upstream_before: dict[int, float] = {}

    async def worker() -> None:
        while time.perf_counter() < stats.window_end and stats.started < max_requests:
            await stream_once(session, job, stats)

    async def edges() -> tuple[float, float, float, float]:
        nonlocal pids, cpu_before, upstream_pids, upstream_before
        await asyncio.sleep(max(0.0, stats.window_start - time.perf_counter()))
        pids = proc.trees(roots)
        upstream_pids = proc.trees(upstream_roots)
        cpu_before = proc.cpu_seconds(pids)
        upstream_before = proc.cpu_seconds(upstream_pids)
        client_before = resource.getrusage(resource.RUSAGE_SELF)
        await asyncio.sleep(max(0.0, stats.window_end - time.perf_counter()))
        cpu = proc.cpu_delta(cpu_before, proc.cpu_seconds(pids))
        upstream = proc.cpu_delta(upstream_before, proc.cpu_seconds(upstream_pids))
        client_after = resource.getrusage(resource.RUSAGE_SELF)
        client = (client_after.ru_utime + client_after.ru_stime) - (
            client_before.ru_utime + client_before.ru_stime
        )
        return cpu, upstream, client, proc.rss_bytes(pids)

    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=concurrency)
    async with aiohttp.ClientSession(
        connector=connector, timeout=_timeout(job), auto_decompress=False
    ) as session:
        edge_task = asyncio.ensure_future(edges())
        tasks = [asyncio.ensure_future(worker()) for _ in range(concurrency)]
        await asyncio.wait(tasks, timeout=job["warmup_s"] + job["window_s"] + 1.0)
        cpu, upstream_cpu, client_cpu, rss = await edge_task
        await _cancel_all(tasks, job["drain_s"])
    window = job["window_s"]
    return {
        "kind": "throughput",
        "concurrency": concurrency,
        "window_s": window,
        "started": stats.started,
        "completed": stats.completed,
        "completed_total": stats.completed_total,
        "events_per_stream": stats.complete_stream_events / stats.completed_total
        if stats.completed_total
        else None,
        "incomplete": stats.incomplete,
        "failed": stats.failed,
        "cut": stats.cut,
        "statuses": stats.statuses,
        "requests_per_s": stats.completed / window,
        "events": stats.events,
        "events_per_s": stats.events / window,
        "body_bytes": stats.body_bytes,
        "ttfb_s": summarize(stats.ttfb),
        "ttft_s": summarize(stats.ttft),
        "gap_s": summarize(stats.gaps, stats.zero_gaps),
        "delta_gap_s": summarize(stats.delta_gaps, stats.zero_delta_gaps),
        "gaps_truncated": stats.gaps_truncated,
        "server_cpu_s": cpu,
        "server_pids": pids,
        "server_rss_bytes": rss,
        "cpu_us_per_1k_events": cpu * 1e6 / stats.events * 1000 if stats.events else None,
        "upstream_cpu_s": upstream_cpu,
        "deltas": stats.deltas,
        "cpu_us_per_delta": cpu * 1e6 / stats.deltas if stats.deltas else None,
        "upstream_cpu_us_per_delta": upstream_cpu * 1e6 / stats.deltas if stats.deltas else None,
        "request_bytes": len(job["body_bytes"]),
        "client_cpu_s": client_cpu,
        "client_cpu_share": client_cpu / window,
        "errors": stats.errors,
    }


async def hold(job: dict[str, Any]) -> dict[str, Any]:
    """Open ``streams`` streams, hold them, sample the server tree's memory."""
    _prepare(job)
    n: int = job["streams"]
    stats = Stats()
    stats.window_start = float("inf")  # nothing is timed here
    roots: list[int] = job.get("pids") or []
    pids = proc.trees(roots)
    samples: list[tuple[float, int]] = []
    baseline_rss = proc.rss_bytes(pids)
    baseline_pss = proc.pss_bytes(pids)
    opened = 0
    all_open = asyncio.Event()
    gate = asyncio.Semaphore(job.get("open_parallel", 128))

    async def one() -> None:
        got_first = False

        def on_first() -> None:
            nonlocal opened, got_first
            got_first = True
            opened += 1
            gate.release()
            if opened >= n:
                all_open.set()

        await gate.acquire()
        try:
            await stream_once(session, job, stats, on_first)
        finally:
            if not got_first:  # never got its first event: give the slot back
                gate.release()

    start = time.perf_counter()
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=None, connect=30.0, sock_read=None)
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, auto_decompress=False
    ) as session:
        tasks = [asyncio.ensure_future(one()) for _ in range(n)]

        async def sample_until(deadline: float, stop: asyncio.Event | None) -> None:
            while time.perf_counter() < deadline and not (stop is not None and stop.is_set()):
                samples.append((time.perf_counter() - start, proc.rss_bytes(pids)))
                await asyncio.sleep(0.2)

        await sample_until(start + job["open_timeout_s"], all_open)
        open_s = time.perf_counter() - start
        pids = proc.trees(roots)  # workers that appeared meanwhile
        await sample_until(time.perf_counter() + job["hold_s"], None)
        peak_pss = proc.pss_bytes(pids)
        fds = proc.open_fds(pids)
        alive = sum(1 for t in tasks if not t.done())
        held = min(opened, alive)
        await _cancel_all(tasks, 0)
        closed_at = time.perf_counter()
        await sample_until(closed_at + job.get("after_s", 2.0), None)
    peak_rss = max((rss for _, rss in samples), default=baseline_rss)
    return {
        "kind": "hold",
        "streams": n,
        "opened": opened,
        "held": held,
        "open_s": open_s,
        "failed": stats.failed,
        "incomplete": stats.incomplete,
        "statuses": stats.statuses,
        "server_pids": pids,
        "baseline_rss_bytes": baseline_rss,
        "peak_rss_bytes": peak_rss,
        "after_close_rss_bytes": samples[-1][1] if samples else None,
        "baseline_pss_bytes": baseline_pss,
        "held_pss_bytes": peak_pss,
        "rss_per_stream_bytes": (peak_rss - baseline_rss) / held if held else None,
        "pss_per_stream_bytes": (peak_pss - baseline_pss) / held if held else None,
        "server_open_fds": fds,
        "rss_samples": samples[:: max(1, len(samples) // 200)],
        "errors": stats.errors,
    }


async def settle(roots: list[int], limit_s: float, idle_share: float = 0.05) -> float:
    """Wait (at most ``limit_s``) until the processes are idle, so that work a server still
    does for the previous job (cut streams, a backlog) does not land in the next one."""
    start = time.perf_counter()
    pids = proc.trees(roots)
    if not pids:
        return 0.0
    before = proc.cpu_seconds(pids)
    while time.perf_counter() - start < limit_s:
        await asyncio.sleep(0.25)
        after = proc.cpu_seconds(pids)
        if proc.cpu_delta(before, after) / 0.25 < idle_share:
            break
        before = after
    return time.perf_counter() - start


async def run_jobs(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    for job in jobs:
        kinds: dict[str, Callable[[dict[str, Any]], Coroutine[Any, Any, dict[str, Any]]]] = {
            "throughput": throughput,
            "hold": hold,
        }
        try:
            result = await kinds[job["kind"]](job)
        except Exception as exc:  # one broken job must not lose the others' results
            result = {"kind": job["kind"], "crashed": f"{type(exc).__name__}: {exc}"}
        result["label"] = job.get("label")
        if job.get("settle_s") and job.get("pids"):
            result["settle_s"] = await settle(job["pids"], job["settle_s"])
        results.append(result)
        print(f"  done {job.get('label')}", file=sys.stderr, flush=True)
        await asyncio.sleep(job.get("pause_s", 0.2))
    return results


def main() -> int:
    jobs = orjson.loads(sys.stdin.buffer.read())
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a bench dependency
        loop_name = "asyncio"
        results = asyncio.run(run_jobs(jobs))
    else:
        loop_name = f"uvloop {importlib.metadata.version('uvloop')}"
        results = uvloop.run(run_jobs(jobs))
    for result in results:
        result["client_loop"] = loop_name
    sys.stdout.buffer.write(orjson.dumps(results))
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
