"""End-to-end load benchmark: hydra-proxy vs the proxies users run today, one command.

    .venv/bin/python benches/load.py            # the whole comparison (about 30 minutes)
    .venv/bin/python benches/load.py --rounds 3 # every cell 3 times, medians (about an hour)
                                                # (the servers' order reversed every other round)
    .venv/bin/python benches/load.py --quick    # hydra-proxy only, small counts (< 1 minute)

Starts the embedded mock upstream (instant: the whole reply written at once; paced: 64
deltas 20 ms apart, as published gateway benchmarks), hydra-proxy with one worker (native
transducers, and the pure-Python ones as a separate row) and each installed peer (LiteLLM's
proxy, claude-code-router: installed by benches/peers/*/install.sh, pinned), all pointed at
the same mock. A client process (aiohttp on uvloop, benches/loadlib_client.py) drives N
concurrent streams at each concurrency, through each server and straight at the mock in
the same window, in three modes: Anthropic in / OpenAI out, OpenAI in / Anthropic out,
and same-protocol passthrough (the ceiling). Then it holds 2,000 long streams open
through each server and reads its memory from /proc.

Two more phases measure the per-chunk and per-request cost. paced-cpu: 200 streams at once
(Anthropic in, OpenAI out), the mock writing one SSE event per chunk 10 ms apart; the CPU
time of the proxy's process tree and of the mock over the window, per upstream event
relayed (the client counts content deltas: one per upstream event). ttfb-large: c=1 with
the real ~50 KB Claude Code request (tests/fixtures/claude-code), straight at the mock and
through each proxy: the added time to first byte.

    .venv/bin/python benches/load.py --phases paced-cpu,ttfb-large \
        --alt-python ../main/python --servers hydra-native,hydra-native-alt

measures this checkout against another one side by side, in the same run (and a third with
--alt2-python DIR, as hydra-native-alt2: a base, the tree before a change, and the change).

Writes benches/results/load.json (raw), load.md (tables and legend) and load.png (plot).
Benchmarks report; nothing here asserts a time. All traffic stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

import loadlib_report as report
from loadlib_servers import (
    BENCHES,
    MODES,
    REPO,
    ClaudeCodeRouter,
    Hydra,
    LiteLLM,
    Mock,
    Server,
    ServerError,
    ccr_version,
    install_peer,
    litellm_version,
    node_version,
    request_body,
    request_headers,
)

CLIENT = BENCHES / "loadlib_client.py"
HYDRA_SERVERS = ("hydra-native", "hydra-python")
PEER_SERVERS = ("claude-code-router", "litellm")
# Another checkout's python/ directory, side by side with this one (--alt-python DIR, and
# a third with --alt2-python DIR): the same servers, named with an "-alt" ("-alt2") suffix,
# only when asked for with --servers.
# hydra-native-nousage: this checkout with the usage ledger and metrics off (their cost).
# hydra-native-w2: two granian workers instead of one (what a second core buys).
VARIANT_SERVERS = (
    "hydra-native-alt",
    "hydra-python-alt",
    "hydra-native-alt2",
    "hydra-python-alt2",
    "hydra-native-nousage",
    "hydra-native-w2",
)
ALT_PYTHON: Path | None = None
ALT2_PYTHON: Path | None = None
PEER_INSTALL = {"claude-code-router": "ccr", "litellm": "litellm"}


@dataclass
class Plan:
    """Every count and duration of one run (each loop is bounded by these)."""

    quick: bool = False
    servers: list[str] = field(default_factory=lambda: [*HYDRA_SERVERS, *PEER_SERVERS])
    modes: list[str] = field(default_factory=lambda: list(MODES))
    phases: list[str] = field(
        default_factory=lambda: ["instant", "paced", "paced-cpu", "ttfb-large", "hold"]
    )
    concurrency: list[int] = field(default_factory=lambda: [1, 64, 512])
    rounds: int = 1
    instant_chunks: int = 250
    paced_chunks: int = 64
    paced_delay_ms: float = 20.0
    instant_warmup_s: float = 1.0
    instant_window_s: float = 5.0
    paced_warmup_s: float = 2.0
    paced_window_s: float = 8.0
    # paced-cpu: many long streams at once, one SSE event per upstream chunk, CPU per event.
    cpu_streams: int = 200
    cpu_chunks: int = 1500
    cpu_delay_ms: float = 10.0
    cpu_warmup_s: float = 3.0
    cpu_window_s: float = 8.0
    # ttfb-large: c=1 with a real Claude Code request (tests/fixtures/claude-code).
    large_request: str = "tests/fixtures/claude-code/request-after-tool-result.json"
    large_warmup_s: float = 1.0
    large_window_s: float = 5.0
    drain_s: float = 3.0
    settle_s: float = 30.0
    max_requests: int = 1_000_000
    hold_streams: int = 2000
    hold_chunks: int = 100_000
    hold_delay_ms: float = 5000.0
    hold_s: float = 5.0
    hold_open_timeout_s: float = 180.0
    hold_after_s: float = 2.0
    hold_fresh: bool = True  # a freshly started server for every (server, mode)
    warm_s: float = 1.0  # per server and mode, before the measured cells
    pause_s: float = 0.2  # between two client jobs

    @staticmethod
    def quick_plan() -> Plan:
        return Plan(
            quick=True,
            servers=list(HYDRA_SERVERS),
            concurrency=[4],
            instant_chunks=64,
            paced_chunks=8,
            paced_delay_ms=20.0,
            instant_warmup_s=0.1,
            instant_window_s=0.4,
            paced_warmup_s=0.1,
            paced_window_s=0.4,
            drain_s=1.0,
            settle_s=2.0,
            warm_s=0.1,
            pause_s=0.05,
            max_requests=5000,
            cpu_streams=8,
            cpu_chunks=40,
            cpu_warmup_s=0.1,
            cpu_window_s=0.3,
            large_warmup_s=0.1,
            large_window_s=0.3,
            hold_streams=40,
            hold_chunks=1000,
            hold_delay_ms=200.0,
            hold_s=0.3,
            hold_open_timeout_s=10.0,
            hold_after_s=0.2,
            hold_fresh=False,
        )


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


# -- environment ---------------------------------------------------------------------------


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git(*args: str) -> str:
    try:
        out = subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip()


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "memory_bytes": mem,
        "kernel": platform.release(),
        "loadavg_start": Path("/proc/loadavg").read_text().split()[:3],
    }


def versions() -> dict[str, Any]:
    import hydra_proxy

    rev = _git("rev-parse", "--short", "HEAD")
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    return {
        "python": platform.python_version(),
        "hydra-proxy": f"{hydra_proxy.__version__} ({rev}{', uncommitted changes' if dirty else ''})",
        "granian": _version("granian"),
        "aiohttp": _version("aiohttp"),
        "uvloop": _version("uvloop"),
        "orjson": _version("orjson"),
        "node": node_version(),
        "litellm": litellm_version(),
        "claude-code-router": ccr_version(),
    }


def raise_fd_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 65536) if hard != resource.RLIM_INFINITY else 65536
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


# -- servers -------------------------------------------------------------------------------


def make_server(name: str, mock_url: str) -> Server:
    if name == "hydra-native":
        return Hydra(mock_url, "native")
    if name == "hydra-python":
        return Hydra(mock_url, "python")
    if name == "hydra-native-nousage":  # the usage ledger and metrics off: what they cost
        return Hydra(mock_url, "native", name=name, usage=False)
    if name == "hydra-native-w2":
        return Hydra(mock_url, "native", name=name, workers=2)
    if name in VARIANT_SERVERS:
        alt = ALT2_PYTHON if name.endswith("-alt2") else ALT_PYTHON
        if alt is None:
            raise ValueError(f"{name} needs --{name.split('-')[-1]}-python DIR")
        return Hydra(mock_url, name.split("-")[1], alt, name)
    if name == "claude-code-router":
        return ClaudeCodeRouter(mock_url)
    if name == "litellm":
        return LiteLLM(mock_url)
    raise ValueError(f"unknown server {name!r}")


def start_servers(
    names: list[str], mock_url: str, status: dict[str, dict[str, Any]]
) -> list[Server]:
    """Start every server that is installed; a failure is recorded, not fatal."""
    started: list[Server] = []
    for name in names:
        if status.get(name, {}).get("status") == "not installed":
            continue
        server = make_server(name, mock_url)
        t0 = time.monotonic()
        try:
            server.start()
        except (ServerError, OSError) as exc:
            log(f"{name}: failed to start: {exc}")
            status[name] = {"status": "failed to start", "detail": str(exc)[-2000:]}
            server.stop()
            continue
        status.setdefault(name, {"status": "ok"})
        status[name].setdefault("startup_s", round(time.monotonic() - t0, 1))
        log(f"{name}: listening on {server.url} (pid {server.pid})")
        started.append(server)
    return started


def stop_all(servers: list[Server]) -> None:
    for server in servers:
        server.stop()


# -- jobs ----------------------------------------------------------------------------------


def run_client(jobs: list[dict[str, Any]], budget_s: float) -> list[dict[str, Any]]:
    """Run jobs in a fresh client process; bounded by ``budget_s``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(BENCHES), str(REPO / "python"), env.get("PYTHONPATH")])
    )
    try:
        out = subprocess.run(
            [sys.executable, str(CLIENT)],
            input=orjson.dumps(jobs),
            capture_output=True,
            env=env,
            timeout=budget_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        log(f"client: exceeded its {budget_s:.0f}s budget")
        return [{"label": j["label"], "crashed": "client timed out"} for j in jobs]
    if out.returncode != 0:
        log(f"client exited {out.returncode}: {out.stderr.decode(errors='replace')[-2000:]}")
        return [{"label": j["label"], "crashed": f"client exit {out.returncode}"} for j in jobs]
    results: list[dict[str, Any]] = orjson.loads(out.stdout)
    return results


def job_budget(job: dict[str, Any]) -> float:
    if job["kind"] == "hold":
        return float(job["open_timeout_s"] + job["hold_s"] + job.get("after_s", 2.0) + 30.0)
    return float(job["warmup_s"] + job["window_s"] + 1.0 + job["drain_s"] + job["settle_s"] + 5.0)


def throughput_job(
    plan: Plan,
    phase: str,
    label: str,
    url: str,
    protocol: str,
    model: str,
    concurrency: int,
    pids: list[int],
    upstream_pids: list[int] | None = None,
) -> dict[str, Any]:
    warmup, window = {
        "paced": (plan.paced_warmup_s, plan.paced_window_s),
        "paced-cpu": (plan.cpu_warmup_s, plan.cpu_window_s),
        "ttfb-large": (plan.large_warmup_s, plan.large_window_s),
    }.get(phase, (plan.instant_warmup_s, plan.instant_window_s))
    job: dict[str, Any] = {
        "kind": "throughput",
        "label": label,
        "url": url,
        "protocol": protocol,
        "body": request_body(protocol, model),
        "headers": request_headers(protocol),
        "concurrency": concurrency,
        "warmup_s": warmup,
        "window_s": window,
        "drain_s": plan.drain_s,
        "settle_s": plan.settle_s,
        "max_requests": plan.max_requests,
        "pause_s": plan.pause_s,
        "request_timeout_s": 120.0,
        "pids": pids,
        "upstream_pids": upstream_pids or [],
    }
    if phase == "ttfb-large":
        # The same real request body straight at the mock and through each proxy.
        job["body"] = None
        job["body_path"] = str(large_request(plan, model))
    return job


def large_request(plan: Plan, model: str) -> Path:
    """The real Claude Code request, routed to `model` and streamed (else byte for byte)."""
    out = Path(tempfile.gettempdir()) / f"hydra-load-large-{os.getpid()}-{model}.json"
    if not out.exists():
        request = orjson.loads((REPO / plan.large_request).read_bytes())["body"]
        request["model"] = model
        request["stream"] = True
        out.write_bytes(orjson.dumps(request))
    return out


def throughput_phase(
    plan: Plan, phase: str, status: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    concurrency = plan.concurrency
    modes = plan.modes
    names = plan.servers
    if phase in ("instant", "ttfb-large"):
        flags = ["--mode", "instant", "--chunks", str(plan.instant_chunks)]
    elif phase == "paced":
        flags = [
            "--mode", "paced", "--chunks", str(plan.paced_chunks),
            "--delay-ms", str(plan.paced_delay_ms),
        ]  # fmt: skip
    else:  # paced-cpu
        flags = [
            "--mode", "paced", "--chunks", str(plan.cpu_chunks),
            "--delay-ms", str(plan.cpu_delay_ms),
        ]  # fmt: skip
    if phase == "paced-cpu":
        concurrency = [plan.cpu_streams]
        modes = [m for m in modes if m == "anthropic-in"]
        names = [n for n in names if n not in ("litellm",)]
    elif phase == "ttfb-large":
        concurrency = [1]
        modes = [m for m in modes if m == "anthropic-in"]
        names = [n for n in names if n in HYDRA_SERVERS or n in VARIANT_SERVERS]
    if not modes or not names:
        return []
    mock = Mock(*flags)
    mock.start()
    log(f"{phase}: mock {' '.join(flags)} on {mock.url}")
    servers = start_servers(names, mock.url, status)
    rows: list[dict[str, Any]] = []
    try:
        jobs: list[dict[str, Any]] = []
        meta: list[dict[str, Any]] = []
        # Warm every server on every mode first (imports, connection pools); not reported.
        for server in servers:
            for mode_name in server.modes:
                if mode_name not in modes:
                    continue
                mode = MODES[mode_name]
                warm = throughput_job(
                    plan, "instant", f"warm {server.name} {mode_name}",
                    server.url + mode.path, mode.protocol, mode.model, 2, [],
                )  # fmt: skip
                warm.update(warmup_s=0.0, window_s=plan.warm_s, pids=[server.pid])
                jobs.append(warm)
                meta.append({})
        for rnd in range(plan.rounds):
            for mode_name in modes:
                mode = MODES[mode_name]
                for c in concurrency:
                    targets: list[tuple[str, str, str, list[int]]] = [
                        ("mock (direct)", mock.url + mode.upstream_path, mode.upstream_protocol,
                         [mock.pid])
                    ]  # fmt: skip
                    targets += [
                        (s.name, s.url + mode.path, mode.protocol, [s.pid])
                        for s in servers
                        if mode_name in s.modes
                    ]
                    if rnd % 2:
                        # Every other round the other way round: a server run right after
                        # another measured 5-12% apart from the same server run first.
                        targets.reverse()
                    for order, (target, url, protocol, pids) in enumerate(targets):
                        label = f"{phase} {mode_name} c={c} round={rnd} {target}"
                        upstream = [] if pids == [mock.pid] else [mock.pid]
                        jobs.append(
                            throughput_job(
                                plan, phase, label, url, protocol, mode.model, c, pids, upstream
                            )
                        )
                        meta.append(
                            {
                                "phase": phase,
                                "mode": mode_name,
                                "concurrency": c,
                                "round": rnd,
                                "order": order,
                                "server": target,
                            }
                        )
        budget = sum(job_budget(j) for j in jobs) + 60.0
        log(f"{phase}: {len(jobs)} client jobs, at most {budget:.0f}s")
        results = run_client(jobs, budget)
        for info, result in zip(meta, results, strict=False):
            if info:
                rows.append({**info, **result})
    finally:
        stop_all(servers)
        mock.stop()
    return rows


def hold_jobs(plan: Plan, server: Server, mode_name: str) -> list[dict[str, Any]]:
    mode = MODES[mode_name]
    base = {
        "kind": "hold",
        "url": server.url + mode.path,
        "protocol": mode.protocol,
        "body": request_body(mode.protocol, mode.model),
        "headers": request_headers(mode.protocol),
        "pids": [server.pid],
        "open_parallel": 128,
        "pause_s": plan.pause_s,
    }
    warm = {
        **base,
        "label": f"warm hold {server.name} {mode_name}",
        "streams": 8,
        "hold_s": 0.1,
        "open_timeout_s": 30.0,
        "after_s": 0.1,
    }
    job = {
        **base,
        "label": f"hold {server.name} {mode_name}",
        "streams": plan.hold_streams,
        "hold_s": plan.hold_s,
        "open_timeout_s": plan.hold_open_timeout_s,
        "after_s": plan.hold_after_s,
    }
    return [warm, job]


def hold_phase(plan: Plan, status: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Peak memory per open stream: N long streams held through the server at once (a
    freshly started server for every mode unless the plan says otherwise: a process that
    already held streams reuses the memory it freed, which would hide the cost)."""
    flags = ["--mode", "paced", "--chunks", str(plan.hold_chunks)]
    flags += ["--delay-ms", str(plan.hold_delay_ms)]
    mock = Mock(*flags)
    mock.start()
    log(f"hold: mock {' '.join(flags)} on {mock.url}")
    rows: list[dict[str, Any]] = []

    def run(server: Server, modes: list[str]) -> None:
        jobs = [job for mode_name in modes for job in hold_jobs(plan, server, mode_name)]
        results = run_client(jobs, sum(job_budget(j) for j in jobs) + 30.0)
        for mode_name, result in zip(modes, results[1::2], strict=False):
            rows.append({"server": server.name, "mode": mode_name, **result})
            per = result.get("rss_per_stream_bytes")
            log(
                f"hold {server.name} {mode_name}: held {result.get('held')}/{plan.hold_streams}, "
                f"{'-' if per is None else f'{per / 1024:.1f} KiB'} RSS per stream"
            )

    try:
        for name in plan.servers:
            if status.get(name, {}).get("status") not in (None, "ok"):
                continue
            modes = [m for m in make_server(name, mock.url).modes if m in plan.modes]
            for group in [[m] for m in modes] if plan.hold_fresh else [modes]:
                servers = start_servers([name], mock.url, status)
                if not servers:
                    break
                try:
                    run(servers[0], group)
                finally:
                    servers[0].stop()
    finally:
        mock.stop()
    return rows


# -- summary -------------------------------------------------------------------------------


def _median(values: list[float]) -> float | None:
    clean = [v for v in values if v is not None and v == v]
    return statistics.median(clean) if clean else None


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line per (phase, mode, concurrency, server): medians over rounds, and the added
    latency against the direct run of the same round (paired, then the median)."""
    direct: dict[tuple[str, str, int, int], dict[str, Any]] = {
        (r["phase"], r["mode"], r["concurrency"], r["round"]): r
        for r in rows
        if r["server"] == "mock (direct)" and "crashed" not in r
    }
    groups: dict[tuple[str, str, int, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["phase"], r["mode"], r["concurrency"], r["server"]), []).append(r)
    out: list[dict[str, Any]] = []
    for (phase, mode, c, server), runs in groups.items():
        ok = [r for r in runs if "crashed" not in r]
        line: dict[str, Any] = {
            "phase": phase,
            "mode": mode,
            "concurrency": c,
            "server": server,
            "rounds": len(runs),
            "crashed": [r["crashed"] for r in runs if "crashed" in r],
        }
        if not ok:
            out.append(line)
            continue

        pairs = [(r, direct.get((phase, mode, c, r["round"]))) for r in ok]

        def med(key: str, sub: str | None = None, runs: list[dict[str, Any]] = ok) -> float | None:
            return _median([(r[key][sub] if sub else r[key]) for r in runs])

        def added(
            key: str, sub: str, pairs: list[tuple[dict[str, Any], Any]] = pairs
        ) -> float | None:
            return _median(
                [
                    r[key][sub] - d[key][sub]
                    for r, d in pairs
                    if d is not None and r[key]["n"] and d[key]["n"]
                ]
            )

        line.update(
            requests_per_s=med("requests_per_s"),
            events_per_s=med("events_per_s"),
            ttfb_p50_s=med("ttfb_s", "p50"),
            ttfb_p99_s=med("ttfb_s", "p99"),
            ttft_p50_s=med("ttft_s", "p50"),
            gap_p50_s=med("delta_gap_s", "p50"),
            gap_p99_s=med("delta_gap_s", "p99"),
            event_gap_p50_s=med("gap_s", "p50"),
            event_gap_p99_s=med("gap_s", "p99"),
        )
        proxied = server != "mock (direct)"
        line.update(
            added_ttfb_p50_s=added("ttfb_s", "p50") if proxied else None,
            added_ttfb_p99_s=added("ttfb_s", "p99") if proxied else None,
            added_ttft_p50_s=added("ttft_s", "p50") if proxied else None,
            added_gap_p50_s=added("delta_gap_s", "p50") if proxied else None,
            added_gap_p99_s=added("delta_gap_s", "p99") if proxied else None,
            cpu_us_per_1k_events=med("cpu_us_per_1k_events"),
            cpu_us_per_delta=med("cpu_us_per_delta"),
            mock_cpu_us_per_delta=med("upstream_cpu_us_per_delta") if proxied else None,
            deltas=sum(r.get("deltas", 0) for r in ok),
            request_bytes=ok[0].get("request_bytes"),
            server_cpu_share=_median([r["server_cpu_s"] / r["window_s"] for r in ok]),
            client_cpu_share=med("client_cpu_share"),
            mock_cpu_share=_median([r["upstream_cpu_s"] / r["window_s"] for r in ok])
            if proxied
            else None,
            completed=sum(r["completed_total"] for r in ok),
            incomplete=sum(r["incomplete"] for r in ok),
            failed=sum(r["failed"] for r in ok),
            cut=sum(r["cut"] for r in ok),
            errors=[e for r in ok for e in r["errors"]][:3],
        )
        line["vs_direct_requests"] = _median(
            [
                r["requests_per_s"] / x["requests_per_s"]
                for r, x in pairs
                if x is not None and x["requests_per_s"]
            ]
        )
        out.append(line)
    return out


def _events_per_stream(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str], float]:
    """Events in one complete stream, per (phase, mode, server), over every cell."""
    values: dict[tuple[str, str, str], list[float]] = {}
    for r in rows:
        if "crashed" in r:
            continue
        per = r.get("events_per_stream")
        if per is None and r.get("requests_per_s"):  # older results: from a steady cell
            per = r["events_per_s"] / r["requests_per_s"]
        if per:
            values.setdefault((r["phase"], r["mode"], r["server"]), []).append(per)
    return {k: statistics.median(v) for k, v in values.items()}


def add_stream_equivalents(summary: list[dict[str, Any]], rows: list[dict[str, Any]]) -> None:
    """Throughput in streams/s from the events delivered: events/s / events per stream.

    A closed loop only reaches a steady state when the window holds several request
    latencies; a server slower than that (LiteLLM at c=64: a 250-delta stream takes longer
    than the window) completes few or no streams in it while still delivering events. Its
    events/s, divided by the events of one complete stream, says how many streams per
    second it sustains; for a server in steady state the two agree.
    """
    per_stream = _events_per_stream(rows)
    for line in summary:
        if "events_per_s" not in line:
            continue
        per = per_stream.get((line["phase"], line["mode"], line["server"]))
        line["events_per_stream"] = per
        line["stream_equiv_per_s"] = line["events_per_s"] / per if per else None
        # Fewer completions than clients: the window was shorter than one request.
        line["steady"] = line["completed"] >= 2 * line["concurrency"]
        line["throughput_per_s"] = (
            line["requests_per_s"] if line["steady"] else line["stream_equiv_per_s"]
        )


def _find(summary: list[dict[str, Any]], **keys: Any) -> dict[str, Any] | None:
    for line in summary:
        if all(line.get(k) == v for k, v in keys.items()):
            return line
    return None


def targets(summary: list[dict[str, Any]], hold: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue's targets, computed from this run (reported, never asserted)."""
    out: list[dict[str, Any]] = []

    def ratio(a: dict[str, Any] | None, b: dict[str, Any] | None, key: str) -> float | None:
        if not a or not b or not a.get(key) or not b.get(key):
            return None
        return float(a[key]) / float(b[key])

    # Throughput ratios are for the instant upstream: a paced upstream bounds every
    # server's requests/s at c / (stream duration), so there they say nothing.
    for c in (64, 512):
        ours = _find(
            summary, phase="instant", mode="anthropic-in", concurrency=c, server="hydra-native"
        )
        for peer, goal in (("claude-code-router", 10.0), ("litellm", 100.0)):
            theirs = _find(
                summary, phase="instant", mode="anthropic-in", concurrency=c, server=peer
            )
            r = ratio(ours, theirs, "throughput_per_s")
            out.append(
                {
                    "target": f"hydra-native >= {goal:g}x {peer} streams/s at c={c} (anthropic-in, instant)"
                    + ("" if c == 64 else " [beyond the issue: c=512]"),
                    "value": r,
                    "unit": "x",
                    "met": None if r is None else r >= goal,
                }
            )
    for phase in ("instant", "paced"):
        ours = _find(
            summary, phase=phase, mode="anthropic-in", concurrency=64, server="hydra-native"
        )
        for peer in ("claude-code-router", "litellm"):
            theirs = _find(summary, phase=phase, mode="anthropic-in", concurrency=64, server=peer)
            r = ratio(theirs, ours, "cpu_us_per_1k_events")
            out.append(
                {
                    "target": f"(no target) {peer} CPU per event / hydra-native's, c=64 (anthropic-in, {phase})",
                    "value": r,
                    "unit": "x",
                    "met": None,
                }
            )
    for mode in MODES:
        line = _find(summary, phase="instant", mode=mode, concurrency=1, server="hydra-native")
        v = line.get("added_ttfb_p50_s") if line else None
        out.append(
            {
                "target": f"hydra-native added TTFB p50 <= 1 ms at c=1 ({mode}, instant)",
                "value": None if v is None else v * 1e3,
                "unit": "ms",
                "met": None if v is None else v <= 1e-3,
            }
        )
    for phase in ("instant",):
        for c in (1, 64, 512):
            passthrough = _find(
                summary, phase=phase, mode="passthrough", concurrency=c, server="hydra-native"
            )
            for mode in ("anthropic-in", "openai-in"):
                line = _find(summary, phase=phase, mode=mode, concurrency=c, server="hydra-native")
                r = ratio(line, passthrough, "throughput_per_s")
                if r is None:
                    continue
                goal = 0.85 if c == 64 else 0.8
                out.append(
                    {
                        "target": f"hydra-native {mode} >= {goal:.0%} of passthrough streams/s (c={c}, {phase})",
                        "value": r * 100,
                        "unit": "%",
                        "met": r >= goal,
                    }
                )  # fmt: skip
    out += paced_cpu_targets(summary)
    large = _find(summary, phase="ttfb-large", mode="anthropic-in", server="hydra-native")
    v = large.get("added_ttfb_p50_s") if large else None
    out.append(
        {
            "target": "hydra-native added TTFB p50 <= 0.5 ms at c=1 with the real Claude Code "
            f"request ({large.get('request_bytes') if large else '?'} bytes)",
            "value": None if v is None else v * 1e3,
            "unit": "ms",
            "met": None if v is None else v <= 0.5e-3,
        }
    )
    for row in hold:
        if row.get("server") == "hydra-native" and row.get("rss_per_stream_bytes") is not None:
            v = row["rss_per_stream_bytes"] / 1024
            out.append(
                {
                    "target": f"hydra-native <= 64 KiB RSS per held stream ({row['mode']})",
                    "value": v,
                    "unit": "KiB",
                    "met": v <= 64,
                }
            )
    return out


def paced_cpu_targets(summary: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Proxy CPU per relayed upstream event on the paced upstream (200 streams at once)."""
    lines = {
        x["server"]: x for x in summary if x["phase"] == "paced-cpu" and x["mode"] == "anthropic-in"
    }
    native = lines.get("hydra-native", {}).get("cpu_us_per_delta")
    out: list[dict[str, Any]] = []

    def add(target: str, value: float | None, goal: float, unit: str = "x") -> None:
        out.append(
            {
                "target": target,
                "value": value,
                "unit": unit,
                "met": None if value is None else value <= goal,
            }
        )

    mock = lines.get("hydra-native", {}).get("mock_cpu_us_per_delta")
    add(
        "paced: hydra-native proxy CPU per event <= the mock's own CPU per event written "
        "(ratio proxy / mock)",
        native / mock if native and mock else None,
        1.0,
    )
    python = lines.get("hydra-python", {}).get("cpu_us_per_delta")
    add(
        "paced: hydra-native >= 2x cheaper than hydra-python per event (ratio native / python)",
        native / python if native and python else None,
        0.5,
    )
    ccr = lines.get("claude-code-router", {}).get("cpu_us_per_delta")
    add(
        "paced: hydra-native >= 4x less CPU per event than claude-code-router (ratio native / ccr)",
        native / ccr if native and ccr else None,
        0.25,
    )
    return out


# -- main ----------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--quick", action="store_true", help="small counts, hydra-proxy only (smoke test)"
    )
    p.add_argument(
        "--out", type=Path, default=BENCHES / "results", help="where load.json/md/png go"
    )
    p.add_argument(
        "--servers", help="comma-separated subset of: " + ", ".join((*HYDRA_SERVERS, *PEER_SERVERS))
    )
    p.add_argument("--modes", help="comma-separated subset of: " + ", ".join(MODES))
    p.add_argument("--phases", help="comma-separated subset of: instant, paced, hold")
    p.add_argument("--concurrency", help="comma-separated concurrencies (default 1,64,512)")
    p.add_argument("--rounds", type=int, help="repeat every cell N times (medians are reported)")
    p.add_argument(
        "--hold-streams", type=int, help="streams held open for the memory phase (default 2000)"
    )
    p.add_argument(
        "--no-install", action="store_true", help="do not run the peers' install scripts"
    )
    p.add_argument(
        "--alt-python",
        type=Path,
        metavar="DIR",
        help="another checkout's python/ directory, measured as hydra-*-alt (see --servers)",
    )
    p.add_argument("--alt-label", help="what the --alt-python checkout is, for the report")
    p.add_argument(
        "--alt2-python",
        type=Path,
        metavar="DIR",
        help="a third checkout's python/ directory, measured as hydra-*-alt2",
    )
    p.add_argument("--alt2-label", help="what the --alt2-python checkout is, for the report")
    p.add_argument(
        "--report-only",
        type=Path,
        metavar="JSON",
        help="only recompute the summary of a load.json and rewrite its .md and .png",
    )
    return p.parse_args(argv)


def rewrite_report(path: Path) -> int:
    data = orjson.loads(path.read_bytes())
    data["summary"] = summarize(data["throughput"])
    add_stream_equivalents(data["summary"], data["throughput"])
    data["targets"] = targets(data["summary"], data["hold"])
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    path.with_suffix(".md").write_text(report.markdown(data))
    report.plot(data, path.with_suffix(".png"))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    global ALT_PYTHON, ALT2_PYTHON
    ALT_PYTHON = args.alt_python
    ALT2_PYTHON = args.alt2_python
    if args.report_only:
        return rewrite_report(args.report_only)
    plan = Plan.quick_plan() if args.quick else Plan()
    if args.servers:
        plan.servers = [s.strip() for s in args.servers.split(",") if s.strip()]
    if args.modes:
        plan.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if args.phases:
        plan.phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    if args.concurrency:
        plan.concurrency = [int(c) for c in args.concurrency.split(",")]
    if args.rounds:
        plan.rounds = max(1, min(args.rounds, 20))
    if args.hold_streams:
        plan.hold_streams = max(1, min(args.hold_streams, 10_000))
    unknown = set(plan.servers) - {*HYDRA_SERVERS, *PEER_SERVERS, *VARIANT_SERVERS}
    if unknown or set(plan.modes) - set(MODES):
        print(f"unknown server or mode: {sorted(unknown | (set(plan.modes) - set(MODES)))}")
        return 2
    raise_fd_limit()
    started = time.monotonic()
    status: dict[str, dict[str, Any]] = {}
    peers: dict[str, dict[str, Any]] = {}
    for name in plan.servers:
        if name not in PEER_SERVERS:
            continue
        if args.no_install:
            installed = (litellm_version() if name == "litellm" else ccr_version()) is not None
            peers[name] = {"installed": installed, "detail": "install skipped (--no-install)"}
        else:
            log(f"{name}: running benches/peers/{PEER_INSTALL[name]}/install.sh")
            peers[name] = install_peer(PEER_INSTALL[name])
        if not peers[name]["installed"]:
            log(f"{name}: NOT INSTALLED ({peers[name]['detail']}); reported as such")
            status[name] = {"status": "not installed", "detail": peers[name]["detail"]}
    meta: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": "python benches/load.py" + (" " + " ".join(sys.argv[1:]) if argv is None and sys.argv[1:] else ""),
        "machine": machine(),
        "versions": versions(),
        "plan": asdict(plan),
        "modes": {name: m.description for name, m in MODES.items() if name in plan.modes},
        "alt_python": str(ALT_PYTHON) if ALT_PYTHON else None,
        "alt_label": args.alt_label,
        "alt2_python": str(ALT2_PYTHON) if ALT2_PYTHON else None,
        "alt2_label": args.alt2_label,
    }  # fmt: skip
    log(f"plan: servers {plan.servers}, phases {plan.phases}, concurrency {plan.concurrency}")
    rows: list[dict[str, Any]] = []
    for phase in ("instant", "paced", "paced-cpu", "ttfb-large"):
        if phase in plan.phases:
            rows += throughput_phase(plan, phase, status)
    hold = hold_phase(plan, status) if "hold" in plan.phases else []
    for name in plan.servers:
        status.setdefault(name, {"status": "not run"})
    summary = summarize(rows)
    add_stream_equivalents(summary, rows)
    meta["machine"]["loadavg_end"] = Path("/proc/loadavg").read_text().split()[:3]
    meta["seconds"] = round(time.monotonic() - started, 1)
    data = {
        "meta": meta,
        "peers": peers,
        "servers": status,
        "summary": summary,
        "targets": targets(summary, hold),
        "hold": hold,
        "throughput": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "load.json").write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    (args.out / "load.md").write_text(report.markdown(data))
    png = report.plot(data, args.out / "load.png")
    log(
        f"wrote {args.out / 'load.json'}, load.md{', load.png' if png else ' (no matplotlib: no plot)'}"
    )
    log(f"done in {meta['seconds']:.0f}s")
    print(report.markdown(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
