"""granian's ASGI vs RSGI interface, alone: the CPU one streamed chunk costs the server.

    .venv/bin/python benches/load_interface.py

Two apps that only stream (no proxying): `tight` sends N chunks in a loop in one request
(the server's own CPU per send, measured inside the app), `paced` holds 200 streams that
each send one SSE event every 10 ms (the server process's CPU per event received by the
client, from /proc). Prints one JSON object. It is how server/ chose its interface: see
benches/results/load.decisions.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from loadlib_proc import cpu_delta, cpu_seconds, trees
from loadlib_servers import free_port

EVENT = (
    b"event: content_block_delta\n"
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hello wo"}}\n\n'
)
APPS = textwrap.dedent(
    """
    import asyncio, sys, time
    EVENT = {event!r}
    TIGHT = 50_000

    async def asgi(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({{"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]}})
        if scope["path"] == "/tight":
            c0 = time.process_time()
            for _ in range(TIGHT):
                await send({{"type": "http.response.body", "body": EVENT, "more_body": True}})
            print("cpu_us_per_send", (time.process_time() - c0) / TIGHT * 1e6, file=sys.stderr, flush=True)
        else:
            for _ in range(100_000):
                await asyncio.sleep(0.01)
                await send({{"type": "http.response.body", "body": EVENT, "more_body": True}})
        await send({{"type": "http.response.body", "body": b"", "more_body": False}})

    class RSGI:
        async def __rsgi__(self, scope, proto):
            stream = proto.response_stream(200, [("content-type", "text/event-stream")])
            if scope.path == "/tight":
                c0 = time.process_time()
                for _ in range(TIGHT):
                    await stream.send_bytes(EVENT)
                print("cpu_us_per_send", (time.process_time() - c0) / TIGHT * 1e6, file=sys.stderr, flush=True)
            else:
                for _ in range(100_000):
                    await asyncio.sleep(0.01)
                    await stream.send_bytes(EVENT)

    rsgi = RSGI()
    """
)


async def paced(
    url: str, pid: int, streams: int = 200, warmup: float = 2.0, window: float = 5.0
) -> dict[str, float]:
    received = [0]

    async def one(session: aiohttp.ClientSession) -> None:
        async with session.get(url) as response:
            async for chunk in response.content.iter_any():
                received[0] += chunk.count(b"\n\n")

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=streams + 10)) as s:
        tasks = [asyncio.ensure_future(one(s)) for _ in range(streams)]
        await asyncio.sleep(warmup)
        pids = trees([pid])
        before, events = cpu_seconds(pids), received[0]
        await asyncio.sleep(window)
        after, events = cpu_seconds(pids), received[0] - events
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    cpu = cpu_delta(before, after)
    return {"cpu_us_per_event": cpu / events * 1e6, "events_per_s": events / window}


def measure(interface: str, folder: Path) -> dict[str, Any]:
    port = free_port()
    log = folder / f"{interface}.log"
    target = "apps:asgi" if interface == "asgi" else "apps:rsgi"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "granian", "--interface", interface, "--loop", "uvloop",
             "--port", str(port), "--workers", "1", "--no-ws", target],
            cwd=folder, env={**os.environ, "PYTHONPATH": str(folder)}, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        time.sleep(2.5)
        result = asyncio.run(paced(f"http://127.0.0.1:{port}/paced", proc.pid))
        for _ in range(3):
            subprocess.run(
                ["curl", "-s", "-o", "/dev/null", f"http://127.0.0.1:{port}/tight"], check=False
            )
        time.sleep(0.3)
        sends = [
            float(line.split()[1])
            for line in log.read_text().splitlines()
            if line.startswith("cpu_us_per_send")
        ]
        result["tight_cpu_us_per_send"] = sorted(sends)[len(sends) // 2] if sends else float("nan")
        return result
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="load-interface-") as tmp:
        folder = Path(tmp)
        (folder / "apps.py").write_text(APPS.format(event=EVENT))
        results = {interface: measure(interface, folder) for interface in ("asgi", "rsgi")}
    results["loadavg"] = Path("/proc/loadavg").read_text().split()[:3]  # type: ignore[assignment]
    sys.stdout.write(orjson.dumps(results, option=orjson.OPT_INDENT_2).decode() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
