"""The fleet benchmark: thousands of concurrent paced streams through one `serve`.

    .venv/bin/python benches/fleet.py                    # 250..2,000 streams, 1 and 2 workers
    .venv/bin/python benches/fleet.py --streams 2000 --workers 1
    .venv/bin/python benches/fleet.py --quick            # a few streams (the test's smoke)

Each stream is an Anthropic Messages client (Claude Code's side) on an OpenAI Chat
upstream (benches/fleetlib_upstream.py) that writes one SSE event per write, every
``interval_ms`` (50: 20 events per second per stream), each delta stamped with the clock at
its write. The client (benches/fleetlib_client.py, its own process) opens the streams
evenly over a ramp, parses and checks every event of every stream, and takes the delivery
delay of each delta: receipt minus stamp, on CLOCK_MONOTONIC (one machine, one clock).

For every load (streams at once) the same client runs straight at the upstream (a Chat
client: the delay without a proxy) and through ``hydra-proxy serve --workers N`` for each
N. The delay the proxy adds is a percentile through the proxy minus the same percentile
direct at the same load. Reported per cell: errors and truncations (must be none), events
per second, proxy CPU per event (its whole process tree), RSS per stream (peak over the
idle tree), and the delay percentiles; then, per worker count, the most events per second
whose added p99 stayed under each threshold (linear between the loads measured).

A few kept streams of every cell are checked again by the test suite's own Anthropic
grammar (tests/support/anthropic_grammar.py) and their text against the upstream's deltas.

Writes benches/results/fleet.json and fleet.md (--out elsewhere). Reports only; nothing
here asserts a time. All traffic stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

BENCHES = Path(__file__).resolve().parent
REPO = BENCHES.parent
sys.path[:0] = [str(BENCHES), str(REPO / "tests")]

import loadlib_proc as proc  # noqa: E402
import profilelib  # noqa: E402
from loadlib_servers import MODES, Hydra, Process, ServerError, _clean_env, request_headers  # noqa: E402
from support import anthropic_grammar  # noqa: E402
from support.chat_chunks import check_chunks  # noqa: E402

CLIENT = BENCHES / "fleetlib_client.py"
UPSTREAM = BENCHES / "fleetlib_upstream.py"
MODE = MODES["anthropic-in"]
THRESHOLDS_MS = (2.0, 5.0, 10.0, 20.0, 50.0)


@dataclass
class Plan:
    loads: list[int] = field(default_factory=lambda: [250, 500, 1000, 2000])
    workers: list[int] = field(default_factory=lambda: [1, 2])
    events: int = 300  # per stream: 15 s at 20 events/s
    interval_ms: int = 50
    opens_per_s: float = 500.0  # the ramp: streams opened per second
    settle_s: float = 1.0  # after the ramp, before the window
    keep: int = 4  # streams per cell checked again by the full grammar
    rest_s: float = 2.0  # between cells, then until the proxies are idle ...
    idle_wait_s: float = 10.0  # ... for at most this long
    profile: bool = False  # py-spy on the one-worker proxy at the largest load

    @staticmethod
    def quick() -> Plan:
        return Plan(loads=[20], workers=[1, 2], events=100, interval_ms=20, opens_per_s=200.0,
                    settle_s=0.2, keep=4, rest_s=0.2, idle_wait_s=1.0)  # fmt: skip

    def ramp_s(self, streams: int) -> float:
        return max(0.2, streams / self.opens_per_s)


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


class Upstream(Process):
    name = "fleet-upstream"

    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan

    def command(self, workdir: Path) -> tuple[list[str], dict[str, str]]:
        env = _clean_env(str(workdir))
        env["PYTHONPATH"] = str(REPO / "python")
        return [
            sys.executable, str(UPSTREAM), "--port", str(self.port),
            "--events", str(self.plan.events), "--interval-ms", str(self.plan.interval_ms),
        ], env  # fmt: skip


def request_body(events: int) -> dict[str, Any]:
    return {
        "model": MODE.model,
        "max_tokens": 4096,
        "stream": True,
        "messages": [{"role": "user", "content": f"Stream {events} paced deltas."}],
    }


def job(plan: Plan, target: str, port: int, streams: int, pids: list[int], upstream_pid: int,
        keep_dir: Path) -> dict[str, Any]:  # fmt: skip
    direct = target == "direct"
    body = request_body(plan.events)
    if direct:  # the same request as the proxy would send it, as a Chat client
        body = {"model": MODE.model, "stream": True, "messages": body["messages"],
                "stream_options": {"include_usage": True}}  # fmt: skip
    return {
        "host": "127.0.0.1",
        "port": port,
        "path": MODE.upstream_path if direct else MODE.path,
        "protocol": "chat" if direct else "anthropic",
        "headers": request_headers("chat" if direct else "anthropic"),
        "body": body,
        "streams": streams,
        "events": plan.events,
        "interval_ms": plan.interval_ms,
        "ramp_s": plan.ramp_s(streams),
        "settle_s": plan.settle_s,
        "stream_timeout_s": plan.events * plan.interval_ms / 1000 + 120.0,
        "pids": pids,
        "upstream_pids": [upstream_pid],
        "keep": plan.keep,
        "keep_dir": str(keep_dir),
    }


def run_client(spec: dict[str, Any]) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BENCHES), env.get("PYTHONPATH")]))
    budget = spec["ramp_s"] + spec["stream_timeout_s"] + 60.0
    try:
        out = subprocess.run([sys.executable, str(CLIENT)], input=orjson.dumps(spec),
                             capture_output=True, env=env, timeout=budget, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"crashed": f"client exceeded its {budget:.0f}s budget"}
    if out.returncode != 0:
        return {"crashed": f"client exit {out.returncode}: {out.stderr.decode()[-2000:]}"}
    result: dict[str, Any] = orjson.loads(out.stdout)
    return result


def check_kept(keep_dir: Path, protocol: str, events: int) -> dict[str, Any]:
    """The kept bodies by the test suite's own grammars (Anthropic, or Chat for the direct
    runs), their text against the upstream's deltas."""
    checked, problems = 0, []
    for path in sorted(keep_dir.glob("stream-*.body")):
        body = path.read_bytes()
        path.unlink()
        try:
            if protocol == "anthropic":
                rebuilt = anthropic_grammar.check(body)
                assert rebuilt.complete, "no message_stop"
                assert [b["type"] for b in rebuilt.content] == ["text"], rebuilt.content
                text = rebuilt.content[0]["text"]
            else:
                chat = check_chunks(body)
                assert chat["finish"] == "stop" and chat["tools"] == [], chat["finish"]
                text = chat["text"]
            stamps = text.split("~")[1::3]
            assert [s.split(".")[1] for s in stamps] == [str(i) for i in range(events)], stamps[:5]
            assert len({s.split(".")[0] for s in stamps}) == 1, "deltas of one upstream stream"
        except (AssertionError, KeyError, ValueError) as exc:
            problems.append(f"{path.name}: {exc}"[:300])
        checked += 1
    return {"grammar_checked": checked, "grammar_problems": problems}


def settle(pids: list[int], rest_s: float, limit_s: float = 10.0) -> None:
    """Rest, then wait (at most `limit_s`) until the processes are idle."""
    time.sleep(rest_s)
    tree = proc.trees(pids)
    before = proc.cpu_seconds(tree)
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        time.sleep(0.25)
        after = proc.cpu_seconds(tree)
        if proc.cpu_delta(before, after) / 0.25 < 0.05:
            return
        before = after


def warm(plan: Plan, proxies: dict[str, Hydra], upstream: Upstream, keep_dir: Path) -> None:
    """A short fleet through every proxy first (imports, pools); not reported."""
    small = Plan(loads=[8], events=plan.events, interval_ms=plan.interval_ms, keep=0,
                 opens_per_s=plan.opens_per_s)  # fmt: skip
    for proxy in proxies.values():
        spec = job(small, proxy.name, proxy.port, 8, [proxy.pid], upstream.pid, keep_dir)
        spec["events"] = plan.events
        run_client(spec)


# Where a relayed event's time goes, by the innermost frame on a sample's stack that names
# a step. Without --native, time in Rust shows as the Python frame that called it: the
# native feed in relay.py, granian's send in the accounting wrapper around it.
STEP_FRAMES: profilelib.Steps = (
    ("write to the client (ASGI send into granian)", ("Account.watch",)),
    ("relay: the native feed and its bookkeeping", ("relay.py",)),
    ("read upstream (http1 framing, httptools)", ("http1.py",)),
    ("usage accounting and metrics", ("accounting.py", "hydra_proxy/usage/")),
    ("a request's own work (ingress, token estimate)", ("ingress/", "tokens.py", "attempts.py")),
    ("granian's runtime (Rust: sockets, HTTP)", ("granian/",)),
)


def start_profile(
    plan: Plan, streams: int, proxy: Hydra, out: Path
) -> tuple[threading.Thread, dict[str, Any]]:
    """py-spy on the proxy's worker over the steady window of the cell about to start."""
    holder: dict[str, Any] = {}
    delay = plan.ramp_s(streams) + plan.settle_s
    seconds = plan.events * plan.interval_ms / 1000 - 0.5 - delay

    def spy() -> None:
        time.sleep(delay)
        workers = [p for p in proc.tree(proxy.pid) if p != proxy.pid] or [proxy.pid]
        got = profilelib.record(workers[0], seconds, out)
        if "skipped" not in got:
            got = profilelib.collapse(
                out.read_text(), STEP_FRAMES, "other (event loop, granian send, ASGI)"
            )
            out.unlink()
        holder.update(got)

    thread = threading.Thread(target=spy, daemon=True)
    thread.start()
    return thread, holder


def added(cell: dict[str, Any], direct: dict[str, Any] | None, key: str) -> float | None:
    if direct is None or "crashed" in cell or "crashed" in direct:
        return None
    a, b = cell["delay"].get(key), direct["delay"].get(key)
    return None if a is None or b is None else a - b


def capacity(rows: list[dict[str, Any]], target: str, threshold_ms: float) -> float | None:
    """The most events/s `target` delivered with an added p99 under `threshold_ms`, linear
    between the loads measured (None: no load met it)."""
    points = sorted(
        (r["offered_events_per_s"], r["events_per_s"], r["added_p99_ms"])
        for r in rows
        if r["target"] == target and r.get("added_p99_ms") is not None
    )
    best: float | None = None
    for i, (_, rate, p99) in enumerate(points):
        if p99 <= threshold_ms:
            best = rate
            continue
        if i > 0 and points[i - 1][2] <= threshold_ms:
            _, prev_rate, prev_p99 = points[i - 1]
            best = prev_rate + (rate - prev_rate) * (threshold_ms - prev_p99) / (p99 - prev_p99)
        break
    return best


def run(plan: Plan) -> dict[str, Any]:
    upstream = Upstream(plan)
    upstream.start()
    proxies: dict[str, Hydra] = {}
    rows: list[dict[str, Any]] = []
    keep_dir = Path(tempfile.mkdtemp(prefix="fleet-kept-"))
    try:
        for n in plan.workers:
            proxy = Hydra(upstream.url, "native", name=f"w{n}", workers=n)
            proxy.start()
            proxies[proxy.name] = proxy
            log(f"hydra-proxy --workers {n} on {proxy.url} (pid {proxy.pid})")
        # Every worker up before the first measurement (granian starts them one by one).
        time.sleep(2.0)
        warm(plan, proxies, upstream, keep_dir)
        for level, streams in enumerate(plan.loads):
            order = ["direct", *proxies]
            if level % 2:  # the position in a round biases a cell: alternate the proxies
                order = ["direct", *reversed(proxies)]
            for target in order:
                settle([upstream.pid, *(p.pid for p in proxies.values())], plan.rest_s,
                       plan.idle_wait_s)  # fmt: skip
                proxy = proxies.get(target)
                port = proxy.port if proxy else upstream.port
                pids = [proxy.pid] if proxy else []
                spec = job(plan, target, port, streams, pids, upstream.pid, keep_dir)
                log(f"{target}: {streams} streams ({plan.ramp_s(streams):.1f} s ramp)")
                spy = None
                profiled = plan.profile and proxy is not None and proxy.workers == 1
                if profiled and proxy is not None and streams == max(plan.loads):
                    spy = start_profile(plan, streams, proxy, keep_dir / "fleet.pyspy.txt")
                result = run_client(spec)
                if spy is not None:
                    spy[0].join()
                    result["profile"] = spy[1]
                result.update(target=target, workers=proxy.workers if proxy else 0)
                if "crashed" not in result:
                    result.update(check_kept(keep_dir, spec["protocol"], plan.events))
                rows.append(result)
                log(summary_line(result))
    finally:
        for proxy in proxies.values():
            proxy.stop()
        upstream.stop()
    for row in rows:
        if "crashed" in row or row["target"] == "direct":
            continue
        direct = next(
            (r for r in rows if r["target"] == "direct" and r.get("streams") == row["streams"]),
            None,
        )
        for key in ("p50_ms", "p99_ms", "p999_ms"):
            row[f"added_{key}"] = added(row, direct, key)
    caps = {
        target: {f"{t:g}": capacity(rows, target, t) for t in THRESHOLDS_MS} for target in proxies
    }
    return {"rows": rows, "capacity": caps}


def summary_line(r: dict[str, Any]) -> str:
    if "crashed" in r:
        return f"  crashed: {r['crashed'][-500:]}"
    d = r["delay"]
    return (
        f"  {r['complete']}/{r['streams']} complete {r['outcomes']}, {r['events_per_s']:,.0f} "
        f"events/s, delay p50 {d['p50_ms']} p99 {d['p99_ms']} ms, proxy CPU "
        f"{r['proxy_cpu_share']:.2f} ({r['proxy_cpu_us_per_event'] or 0:.1f} µs/event), "
        f"upstream {r['upstream_cpu_share']:.2f}, client {r['client_cpu_share']:.2f}, waiting "
        f"for a CPU {r['proxy_runqueue_wait_share']:.2f} / {r['upstream_runqueue_wait_share']:.2f}"
        f" / {r['client_runqueue_wait_share']:.2f}"
        + (f", {r['errors'][:2]}" if r["errors"] else "")
    )


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def markdown(data: dict[str, Any]) -> str:
    meta = data["meta"]
    lines = [
        "# Fleet benchmark",
        "",
        f"{meta['date']}, `{meta['command']}`, {meta['nproc']} cores, load average "
        f"{' '.join(meta['loadavg_start'])} at the start, {' '.join(meta['loadavg_end'])} at "
        f"the end. Anthropic clients on a paced OpenAI Chat upstream, one event per write every "
        f"{meta['plan']['interval_ms']} ms, {meta['plan']['events']} per stream; "
        "hydra-proxy native, `--workers N`. Delay: upstream write to client receipt "
        "(CLOCK_MONOTONIC); added: through the proxy minus direct at the same load, per "
        "percentile.",
        "",
        "| target | streams | complete | errors | events/s | delay p50 / p99 / p99.9 ms "
        "| added p50 / p99 / p99.9 ms | proxy CPU-µs per event | proxy / upstream / client "
        "CPU (cores) | waiting for a CPU (proxy / upstream / client) | RSS per stream |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in data["rows"]:
        if "crashed" in r:
            lines.append(
                f"| {r['target']} | | crashed: {r['crashed'][-300:].replace(chr(10), ' ')} | | | | | | | |"
            )
            continue
        d = r["delay"]
        bad = {k: v for k, v in r["outcomes"].items() if k != "complete"}
        problems = r.get("grammar_problems") or []
        name = "direct (no proxy)" if r["target"] == "direct" else f"{r['workers']} worker(s)"
        rss = r.get("rss_per_stream_bytes")
        cpu = r["proxy_cpu_us_per_event"]
        lines.append(
            f"| {name} | {r['streams']:,} | {r['complete']:,} | "
            f"{bad or 'none'}"
            + (
                f" ({r['grammar_checked']} re-checked{': ' + str(problems) if problems else ''})"
                if r.get("grammar_checked")
                else ""
            )
            + " | "
            f"{r['events_per_s']:,.0f} | {_ms(d['p50_ms'])} / {_ms(d['p99_ms'])} / "
            f"{_ms(d['p999_ms'])} | {_ms(r.get('added_p50_ms'))} / {_ms(r.get('added_p99_ms'))}"
            f" / {_ms(r.get('added_p999_ms'))} | "
            f"{'-' if r['target'] == 'direct' or cpu is None else f'{cpu:.1f}'} | "
            f"{r['proxy_cpu_share']:.2f} / {r['upstream_cpu_share']:.2f} / "
            f"{r['client_cpu_share']:.2f} | "
            f"{r.get('proxy_runqueue_wait_share', 0):.2f} / "
            f"{r.get('upstream_runqueue_wait_share', 0):.2f} / "
            f"{r.get('client_runqueue_wait_share', 0):.2f} | "
            f"{'-' if rss is None else f'{rss / 1024:.1f} KiB'} |"
        )
    lines += [
        "",
        "Most events/s with the added p99 under a threshold (linear between the loads "
        "measured; - : no load measured met it):",
        "",
        "| workers | " + " | ".join(f"p99 +{t:g} ms" for t in THRESHOLDS_MS) + " |",
        "|---|" + "---:|" * len(THRESHOLDS_MS),
    ]
    for target, caps in data["capacity"].items():
        cells = [caps.get(f"{t:g}") for t in THRESHOLDS_MS]
        lines.append(
            f"| {target[1:]} | "
            + " | ".join("-" if c is None else f"{c:,.0f}" for c in cells)
            + " |"
        )
    for r in data["rows"]:
        spied = r.get("profile")
        if not spied:
            continue
        lines += ["", f"py-spy on the worker of `--workers 1` at {r['streams']:,} streams "
                  "(steady window):", ""]  # fmt: skip
        if "skipped" in spied:
            lines.append(f"(skipped: {spied['skipped']})")
            continue
        lines += ["| step (by the frames on the stack) | share of samples |", "|---|---:|"]
        lines += [f"| {k} | {v:.1%} |" for k, v in spied["by_step"].items()]
        lines += ["", "| leaf function | share of samples |", "|---|---:|"]
        lines += [f"| `{k}` | {v:.1%} |" for k, v in spied["top_leaves"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--quick", action="store_true", help="a few streams (smoke test)")
    p.add_argument("--streams", help="comma-separated loads (default 250,500,1000,2000)")
    p.add_argument("--workers", help="comma-separated worker counts (default 1,2)")
    p.add_argument("--events", type=int, help="deltas per stream (default 300)")
    p.add_argument("--profile", action="store_true", help="py-spy on 1 worker at the largest load")
    p.add_argument("--out", type=Path, default=BENCHES / "results", help="where fleet.json/md go")
    args = p.parse_args(argv)
    plan = Plan.quick() if args.quick else Plan()
    if args.streams:
        plan.loads = [max(1, min(int(s), 10_000)) for s in args.streams.split(",")]
    if args.workers:
        plan.workers = [max(1, min(int(w), 16)) for w in args.workers.split(",")]
    plan.profile = args.profile
    if args.events:
        plan.events = max(10, min(args.events, 100_000))
    started = time.monotonic()
    meta: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": "python benches/fleet.py" + ("" if argv is not None else " " + " ".join(sys.argv[1:])).rstrip(),
        "nproc": os.cpu_count(),
        "loadavg_start": Path("/proc/loadavg").read_text().split()[:3],
        "plan": asdict(plan),
    }  # fmt: skip
    try:
        data: dict[str, Any] = {"meta": meta, **run(plan)}
    except ServerError as exc:
        log(f"a server did not start: {exc}")
        return 1
    meta["loadavg_end"] = Path("/proc/loadavg").read_text().split()[:3]
    meta["seconds"] = round(time.monotonic() - started, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "fleet.json").write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    (args.out / "fleet.md").write_text(markdown(data))
    print(markdown(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
