"""CPU per streamed request of the proxy's ASGI app in one process, against another checkout.

    .venv/bin/python benches/request_cpu.py                        # this tree only
    .venv/bin/python benches/request_cpu.py --alt-python ../base/python --rounds 10
    .venv/bin/python benches/request_cpu.py --profile out.pstats   # cProfile of this tree
    .venv/bin/python benches/request_cpu.py --alt-python ../base/python --instructions

The embedded mock upstream runs in its own process (instant: a 250-delta Chat stream, or
paced); each measured copy of the app runs in a fresh child process of its own (this
tree's python/ or the --alt-python one first on its path) and answers the load benchmark's
small streamed Anthropic request (benches/loadlib_servers.py), routed to the mock's Chat
API, `--concurrency` at a time, usage accounting on as by default. The app is called as
granian calls it (a send that acts at once and returns an already-complete awaitable, so
the relay sends from the upstream parser's callback); the client side costs nothing here,
so the process CPU time per request (all threads: the usage ledger's writer too) is the
proxy's own. Rounds alternate the order of the two copies; the ratio is the median of the
per-round ratios. Reports, never asserts.

CPU time on a shared machine moves 10-20% between runs; `--instructions` counts instead:
each copy runs under valgrind's cachegrind twice, answering 40 and then 40 + `--requests`
requests after the same start-up and warm-up, and the difference over `--requests` is the
instructions per request (all threads; the mock is not counted). Under valgrind a request
takes ten times as long, so work done on a timer (the worker's look at the key store, once
a second) weighs about ten times more per request than it does at full speed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

BENCHES = Path(__file__).resolve().parent
REPO = BENCHES.parent
sys.path.insert(0, str(BENCHES))

from loadlib_servers import MODES, Mock, request_body, request_headers  # noqa: E402


class PyEmptyAwaitable:
    """What granian's send returns when it took the message at once (relay.py tests the
    type's name to send from the upstream parser's callback)."""

    __slots__ = ()

    def __await__(self) -> Any:
        return iter(())


_TAKEN = PyEmptyAwaitable()


async def _one(app: Any, scope: dict[str, Any], body: bytes) -> int:
    """One request through `app`; returns the bytes of its response body."""
    done = asyncio.Event()
    sent_body = False
    size = 0

    async def receive() -> dict[str, Any]:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    def send(message: dict[str, Any]) -> PyEmptyAwaitable:
        nonlocal size
        size += len(message.get("body", b""))
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            done.set()
        return _TAKEN

    await app(scope, receive, send)
    done.set()
    return size


async def _serve(mock_url: str, requests: int, concurrency: int, profile: str | None) -> None:
    home = tempfile.mkdtemp(prefix="hydra-request-cpu-")
    config = Path(home) / "hydra.toml"
    mode = MODES["anthropic-in"]
    config.write_text(
        "[providers.mock_openai]\n"
        # "openai": the former spelling of "chat", which a checkout of either age reads.
        'kind = "openai"\n'
        f'base_url = "{mock_url}/v1"\n'
        "api_key_optional = true\n"
        "[[routes]]\n"
        f'match = "{mode.model}"\n'
        'provider = "mock_openai"\n'
    )
    os.environ["HOME"] = home
    os.environ["HYDRA_SIGNING_KEY_FILE"] = str(Path(home) / "signing-key")
    from hydra_proxy.config.loading import environment, load
    from hydra_proxy.server.app import App

    app = App(load({"config": str(config)}, environment()))
    lifespan: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    await lifespan.put({"type": "lifespan.startup"})
    started = asyncio.Event()

    async def lifespan_send(message: dict[str, Any]) -> None:
        if message["type"] == "lifespan.startup.complete":
            started.set()

    running = asyncio.ensure_future(
        app({"type": "lifespan", "asgi": {"version": "3.0"}}, lifespan.get, lifespan_send)
    )
    await started.wait()
    body = orjson.dumps(request_body(mode.protocol, mode.model))
    headers = [(k.encode(), v.encode()) for k, v in request_headers(mode.protocol).items()]
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": mode.path,
        "raw_path": mode.path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 3456),
    }

    async def loop(n: int) -> int:
        return sum([await _one(app, scope, body) for _ in range(n)])

    await asyncio.gather(*(loop(20) for _ in range(concurrency)))  # warm
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    cpu, wall = time.process_time(), time.monotonic()
    sizes = await asyncio.gather(*(loop(requests // concurrency) for _ in range(concurrency)))
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    if profiler is not None and profile:
        profiler.disable()
        profiler.dump_stats(profile)
    done = requests // concurrency * concurrency
    await lifespan.put({"type": "lifespan.shutdown"})
    await running
    print(
        orjson.dumps({"requests": done, "cpu_s": cpu, "wall_s": wall, "bytes": sum(sizes)}).decode()
    )


def _child(
    python_dir: Path,
    mock_url: str,
    args: argparse.Namespace,
    profile: str | None,
    requests: int | None = None,
    under: Sequence[str] = (),
) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(python_dir), str(BENCHES)])
    count = args.requests if requests is None else requests
    argv = [*under, sys.executable, __file__, "--child", mock_url, "--requests", str(count),
            "--concurrency", str(args.concurrency)]  # fmt: skip
    if profile:
        argv += ["--profile", profile]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    result: dict[str, Any] = orjson.loads(done.stdout.strip().splitlines()[-1])
    if under:
        refs = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
        if refs is None:
            raise RuntimeError(done.stderr[-3000:])
        result["instructions"] = int(refs.group(1).replace(",", ""))
    return result


def instructions(python_dir: Path, mock_url: str, args: argparse.Namespace) -> float:
    """Instructions per request of one copy: cachegrind at 40 and 40 + --requests."""
    cachegrind = ["valgrind", "--tool=cachegrind", "--cache-sim=no",
                  "--cachegrind-out-file=/dev/null"]  # fmt: skip
    base = _child(python_dir, mock_url, args, None, 40, cachegrind)
    more = _child(python_dir, mock_url, args, None, 40 + args.requests, cachegrind)
    added = more["instructions"] - base["instructions"]
    return float(added / (more["requests"] - base["requests"]))


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--alt-python", type=Path, help="another checkout's python/ directory")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--paced", action="store_true", help="the mock's paced stream (64 x 20 ms)")
    p.add_argument("--profile", help="cProfile this tree's copy into this .pstats file")
    p.add_argument(
        "--instructions",
        action="store_true",
        help="count instructions per request under valgrind (--requests 800 is plenty)",
    )
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        asyncio.run(_serve(args.child, args.requests, args.concurrency, args.profile))
        return 0
    flags = ["--mode", "paced", "--chunks", "64", "--delay-ms", "20"] if args.paced else [
        "--mode", "instant", "--chunks", "250"]  # fmt: skip
    mock = Mock(*flags)
    mock.start()
    copies = {"this": REPO / "python"}
    if args.alt_python:
        copies["alt"] = args.alt_python.resolve()
    per: dict[str, list[float]] = {name: [] for name in copies}
    ratios: list[float] = []
    try:
        if args.profile:
            got = _child(copies["this"], mock.url, args, args.profile)
            print(f"this: {got['cpu_s'] / got['requests'] * 1e6:.1f} µs CPU per request (profiled)")
            return 0
        if args.instructions:
            counted = {name: instructions(path, mock.url, args) for name, path in copies.items()}
            print(", ".join(f"{n} {v:,.0f} instructions per request" for n, v in counted.items()))
            if "alt" in counted:
                print(f"this / alt: {counted['this'] / counted['alt']:.4f}")
            return 0
        for rnd in range(args.rounds):
            order = list(copies) if rnd % 2 == 0 else list(reversed(copies))
            got = {name: _child(copies[name], mock.url, args, None) for name in order}
            for name, r in got.items():
                per[name].append(r["cpu_s"] / r["requests"] * 1e6)
            line = ", ".join(f"{n} {per[n][-1]:.1f} µs" for n in copies)
            if "alt" in got:
                ratios.append(per["this"][-1] / per["alt"][-1])
                line += f", this / alt {ratios[-1]:.3f}"
            print(f"round {rnd}: {line}", flush=True)
    finally:
        mock.stop()
    summary = {name: statistics.median(v) for name, v in per.items()}
    print("median CPU µs per request: " + ", ".join(f"{n} {v:.1f}" for n, v in summary.items()))
    if ratios:
        print(f"this / alt, median of the rounds: {statistics.median(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
