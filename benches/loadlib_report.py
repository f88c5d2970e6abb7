"""load.json -> load.md (tables and legend) and load.png (matplotlib), for benches/load.py.

Also runnable on its own: python benches/loadlib_report.py benches/results/load.json
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import orjson

SERVER_ORDER = ("mock (direct)", "hydra-native", "hydra-python", "claude-code-router", "litellm")

LEGEND = """\
**What each number means.** Every row is one server in one mode at one concurrency,
measured by one client process (aiohttp on uvloop) in the same window as the mock alone
(`mock (direct)`: the client speaks the upstream protocol straight to the mock; it is the
floor every proxy row is compared with). Each cell runs a closed loop: `c` clients each
send a streaming request, read it to the end, send the next; the first seconds are warm-up
and only the measurement window counts.

- **req/s**: complete streams finished in the window / window length. A stream is complete
  when it ends with `message_stop` (Anthropic) or `data: [DONE]` (OpenAI) and carried no
  error event. **≈N †**: the server completed fewer than 2 x c streams in the window (one
  of its streams takes longer than the window: it never reached a steady state), so the
  number is its events/s divided by the events of one complete stream, i.e. the streams
  per second its event rate sustains (for a server in steady state the two agree). **x direct**: req/s divided by the mock's own req/s in the same mode and
  concurrency, measured just before.
- **events/s**: SSE events the client received in the window, per second (the client's
  protocol: an Anthropic stream has a few more framing events than an OpenAI one).
- **TTFB p50**: request sent -> first bytes of the stream body (the first SSE event), median.
  **+TTFB p50 / p99**: that proxy's TTFB percentile minus the direct mock's, i.e. the time
  the proxy adds before the first event.
- **+gap p50 / p99**: the same for the time between two consecutive content deltas of one
  stream (text deltas: Anthropic `content_block_delta`, OpenAI `delta.content`; deltas that
  arrive in one read count as a 0 gap). Every upstream delta becomes exactly one client
  delta in every mode, so this compares across protocols, where framing events do not. In
  instant mode the upstream writes the whole reply at once (gaps ~0); in paced mode it
  spaces deltas 20 ms apart, so the gap says how much delay and jitter the proxy adds to a
  live stream. (Gaps over all events, framing included, are in the JSON.)
- **CPU-µs/1k ev**: CPU time (user + system, from `/proc/<pid>/stat`) of the server's whole
  process tree (granian main + worker, node, uvicorn) during the window, per 1,000 events
  delivered to clients. For the direct row it is the mock's own CPU. Lower is better; it is
  the cost that matters on a busy shared host, where req/s is bounded by the cores.
- **cores srv/mock/client**: CPU used in the window, in cores, by the server's process tree,
  by the mock behind it, and by the client process. The 2 cores of this machine are shared
  by all three (and by whatever else runs on it): a single-worker server near 1.0 is
  CPU-bound; a client near 1.0 means the client, not the server, was the limit (typical of
  the direct rows in instant mode).
- **ok / bad**: complete streams, and streams that failed (HTTP error, transport error) or
  ended incomplete. Streams still open when a cell's time ran out are cut, not counted.
- **RSS / held stream**: 2,000 long paced streams held open at once through a freshly
  started server (each has received its first event); (peak RSS of the server's process
  tree while held - RSS before opening, after a warm-up) / streams held. RSS is the sum
  of VmRSS over the tree (`/proc/<pid>/statm`); PSS (from `smaps_rollup`) is in the JSON.
"""


def _fmt_rate(v: float | None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if v >= 1e6:
        return f"{v / 1e6:.2f} M"
    if v >= 1e4:
        return f"{v / 1e3:.0f} k"
    if v >= 1e3:
        return f"{v / 1e3:.1f} k"
    if v >= 10:
        return f"{v:.0f}"
    return f"{v:.2f}"


def _fmt_ms(v: float | None, signed: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    ms = v * 1e3
    sign = "+" if signed and ms >= 0 else ""
    if abs(ms) >= 100:
        return f"{sign}{ms:.0f}"
    if abs(ms) >= 10:
        return f"{sign}{ms:.1f}"
    return f"{sign}{ms:.2f}"


def _fmt_num(v: float | None, digits: int = 0, suffix: str = "") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:,.{digits}f}{suffix}"


def _throughput(line: dict[str, Any]) -> str:
    if line.get("steady", True) or not line.get("stream_equiv_per_s"):
        return _fmt_rate(line["requests_per_s"])
    return f"≈{_fmt_rate(line['stream_equiv_per_s'])} †"


def _cores(line: dict[str, Any]) -> str:
    server = _fmt_num(line.get("server_cpu_share"), 2)
    client = _fmt_num(line.get("client_cpu_share"), 2)
    if line["server"] == "mock (direct)":
        return f"{server} / - / {client}"
    return f"{server} / {_fmt_num(line.get('mock_cpu_share'), 2)} / {client}"


def _order(line: dict[str, Any]) -> tuple[int, int, int]:
    modes = ("anthropic-in", "openai-in", "passthrough")
    mode = modes.index(line["mode"]) if line["mode"] in modes else 9
    server = SERVER_ORDER.index(line["server"]) if line["server"] in SERVER_ORDER else 9
    return (mode, line["concurrency"], server)


def throughput_table(summary: list[dict[str, Any]], phase: str) -> list[str]:
    lines = [
        "| mode | c | server | req/s | x direct | events/s | TTFB p50 ms | +TTFB p50 ms "
        "| +TTFB p99 ms | +gap p50 ms | +gap p99 ms | CPU-µs/1k ev | cores srv/mock/client | ok / bad |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for line in sorted((x for x in summary if x["phase"] == phase), key=_order):
        if "requests_per_s" not in line:
            lines.append(
                f"| {line['mode']} | {line['concurrency']} | {line['server']} "
                f"| crashed: {'; '.join(line['crashed'])[:80]} |||||||||||"
            )
            continue
        direct = line["server"] == "mock (direct)"
        bad = line["failed"] + line["incomplete"]
        lines.append(
            f"| {line['mode']} | {line['concurrency']} | {line['server']} "
            f"| {_throughput(line)} "
            f"| {'1' if direct else _fmt_num(line['vs_direct_requests'], 2)} "
            f"| {_fmt_rate(line['events_per_s'])} | {_fmt_ms(line['ttfb_p50_s'])} "
            f"| {'' if direct else _fmt_ms(line['added_ttfb_p50_s'], True)} "
            f"| {'' if direct else _fmt_ms(line['added_ttfb_p99_s'], True)} "
            f"| {'' if direct else _fmt_ms(line['added_gap_p50_s'], True)} "
            f"| {'' if direct else _fmt_ms(line['added_gap_p99_s'], True)} "
            f"| {_fmt_num(line['cpu_us_per_1k_events'])} "
            f"| {_cores(line)} "
            f"| {line['completed']} / {bad} |"
        )
    return lines


def paced_cpu_table(summary: list[dict[str, Any]]) -> list[str]:
    """CPU per relayed upstream event: the proxy's and the mock's, in the same window."""
    lines = [
        "| server | upstream events relayed | proxy CPU µs / event | mock CPU µs / event "
        "| proxy / mock | cores srv/mock/client | +gap p50 ms | +gap p99 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for line in sorted((x for x in summary if x["phase"] == "paced-cpu"), key=_order):
        if "requests_per_s" not in line:
            lines.append(f"| {line['server']} | crashed: {'; '.join(line['crashed'])[:80]} ||||||")
            continue
        proxy = line.get("cpu_us_per_delta")
        mock = line.get("mock_cpu_us_per_delta")
        direct = line["server"] == "mock (direct)"
        lines.append(
            f"| {line['server']} | {line.get('deltas', 0):,} "
            f"| {'' if direct else _fmt_num(proxy, 1)} "
            f"| {_fmt_num(mock if not direct else proxy, 1)} "
            f"| {'' if direct or not proxy or not mock else _fmt_num(proxy / mock, 2)} "
            f"| {_cores(line)} "
            f"| {'' if direct else _fmt_ms(line['added_gap_p50_s'], True)} "
            f"| {'' if direct else _fmt_ms(line['added_gap_p99_s'], True)} |"
        )
    return lines


def hold_table(hold: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| server | mode | held / asked | open time s | RSS before MiB | RSS peak MiB "
        "| RSS / held stream KiB | PSS / held stream KiB | RSS after close MiB |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    mib = 1024 * 1024

    def m(v: float | None) -> str:
        return "-" if v is None else f"{v / mib:.1f}"

    def k(v: float | None) -> str:
        return "-" if v is None else f"{v / 1024:.1f}"

    for row in hold:
        if "crashed" in row:
            lines.append(f"| {row['server']} | {row['mode']} | crashed: {row['crashed']} ||||||")
            continue
        lines.append(
            f"| {row['server']} | {row['mode']} | {row['held']} / {row['streams']} "
            f"| {row['open_s']:.1f} | {m(row['baseline_rss_bytes'])} | {m(row['peak_rss_bytes'])} "
            f"| {k(row['rss_per_stream_bytes'])} | {k(row['pss_per_stream_bytes'])} "
            f"| {m(row['after_close_rss_bytes'])} |"
        )
    return lines


def markdown(data: dict[str, Any]) -> str:
    meta = data["meta"]
    plan = meta["plan"]
    mach = meta["machine"]
    ver = meta["versions"]
    out = [
        "# Load benchmark: hydra-proxy and the proxies users run today",
        "",
        f"`{meta['command']}`, {meta['date']}, {meta['seconds']:.0f} s."
        + (" **Quick run** (smoke-test counts: not a measurement)." if plan["quick"] else ""),
        "",
        f"Machine: {mach['nproc']} cores, {mach['cpu']}, "
        f"{mach['memory_bytes'] / 2**30:.0f} GiB, Linux {mach['kernel']}; load average "
        f"{' '.join(mach['loadavg_start'])} at the start, "
        f"{' '.join(mach.get('loadavg_end', ['?']))} at the end (a shared, noisy machine: "
        "compare rows measured side by side, not absolute numbers across runs).",
        "",
        "Versions: "
        + ", ".join(f"{k} {v}" for k, v in ver.items() if v)
        + ". Client: "
        + (next((r.get("client_loop") for r in data["throughput"] if r.get("client_loop")), "?"))
        + ".",
        "",
        "Servers:",
        "",
    ]
    for name, st in data["servers"].items():
        extra = ""
        if name in data["peers"]:
            p = data["peers"][name]
            extra = f"; install: {'ok' if p['installed'] else 'FAILED'} ({p['detail']})"
        detail = "" if st["status"] == "ok" else f": {str(st.get('detail', ''))[:300]}"
        out.append(f"- **{name}**: {st['status']}{detail}{extra}")
    out += [
        "",
        "Modes: "
        + "; ".join(f"**{k}** = {v}" for k, v in meta["modes"].items())
        + ". claude-code-router only serves Anthropic clients (anthropic-in).",
        "",
        "Every proxy runs one worker process (hydra-proxy: granian, 1 worker; LiteLLM: "
        "uvicorn, `--num_workers 1`, access log off; claude-code-router: one node process).",
        "",
    ]
    if meta.get("alt_python"):
        out += [
            f"**hydra-native-alt / hydra-python-alt**: {meta.get('alt_label') or 'another checkout'}"
            f" (`{meta['alt_python']}`), measured side by side with this checkout in the same "
            "run, against the same mock.",
            "",
        ]
    if meta.get("alt2_python"):
        out += [
            f"**hydra-native-alt2 / hydra-python-alt2**: {meta.get('alt2_label') or 'a third checkout'}"
            f" (`{meta['alt2_python']}`), in the same run too.",
            "",
        ]
    phases = {
        "instant": f"## Instant upstream ({plan['instant_chunks']} text deltas written at once; "
        f"warm-up {plan['instant_warmup_s']:g} s, window {plan['instant_window_s']:g} s)",
        "paced": f"## Paced upstream ({plan['paced_chunks']} deltas {plan['paced_delay_ms']:g} ms "
        f"apart; warm-up {plan['paced_warmup_s']:g} s, window {plan['paced_window_s']:g} s)",
    }
    phases["ttfb-large"] = (
        f"## Large request, c=1 (`{plan.get('large_request', '?')}`, its body re-encoded "
        "compactly with the route's model; instant upstream)"
    )
    for phase, title in phases.items():
        if any(x["phase"] == phase for x in data["summary"]):
            out += [title, "", *throughput_table(data["summary"], phase), ""]
    if any(x["phase"] == "paced-cpu" for x in data["summary"]):
        out += [
            f"## CPU per event, paced ({plan['cpu_streams']} streams at once, one SSE event "
            f"per upstream chunk {plan['cpu_delay_ms']:g} ms apart, {plan['cpu_chunks']} "
            f"chunks per stream; warm-up {plan['cpu_warmup_s']:g} s, window "
            f"{plan['cpu_window_s']:g} s; anthropic-in)",
            "",
            "CPU time (utime+stime from /proc/<pid>/stat) of the proxy's process tree and of "
            "the mock over the window, divided by the content deltas the client received in it "
            "(one per upstream event relayed).",
            "",
            *paced_cpu_table(data["summary"]),
            "",
        ]
    if data["hold"]:
        out += [
            f"## Memory: {plan['hold_streams']} held streams (upstream: {plan['hold_chunks']} "
            f"deltas {plan['hold_delay_ms']:g} ms apart, held {plan['hold_s']:g} s)",
            "",
            *hold_table(data["hold"]),
            "",
        ]
        short = [r for r in data["hold"] if "held" in r and r["held"] < r["streams"]]
        if short:
            out += [
                "Held fewer than asked: "
                + ", ".join(f"{r['server']} {r['mode']} ({r['held']})" for r in short)
                + ". LiteLLM's upstream client allows 500 connections per upstream host by "
                "default (`AIOHTTP_CONNECTOR_LIMIT_PER_HOST`, litellm/constants.py): the other "
                "streams wait for a free connection and get no first event; it is run with its "
                "defaults, as users run it.",
                "",
            ]
    if data["targets"]:
        out += ["## Targets (reported, not asserted)", ""]
        out += ["| target | this run | met |", "|---|---:|---|"]
        for t in data["targets"]:
            v = t["value"]
            value = "-" if v is None else f"{v:,.1f} {t['unit']}"
            met = "n/a" if t["met"] is None else ("yes" if t["met"] else "**no**")
            out.append(f"| {t['target']} | {value} | {met} |")
        out.append("")
    out += ["## Legend", "", LEGEND]
    return "\n".join(out)


def plot(data: dict[str, Any], path: Path) -> bool:
    """requests/s per server at each concurrency (log), and added TTFB p50; False when
    matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    summary = data["summary"]
    panels = [
        (
            "instant",
            "anthropic-in",
            "throughput_per_s",
            "streams/s, Anthropic in (instant upstream)",
        ),
        ("instant", "openai-in", "throughput_per_s", "streams/s, OpenAI in (instant upstream)"),
        ("instant", "passthrough", "throughput_per_s", "streams/s, passthrough (instant upstream)"),
        (
            "paced",
            "anthropic-in",
            "cpu_us_per_1k_events",
            "CPU-µs per 1k events, Anthropic in (paced)",
        ),
        (
            "instant",
            "anthropic-in",
            "added_ttfb_p50_s",
            "added TTFB p50 ms, Anthropic in (instant)",
        ),
        ("paced", "anthropic-in", "added_ttfb_p50_s", "added TTFB p50 ms, Anthropic in (paced)"),
    ]
    panels = [p for p in panels if any(x["phase"] == p[0] and x["mode"] == p[1] for x in summary)]
    if not panels:
        return False
    cols = 2
    rows = (len(panels) + 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(12, 3.6 * rows), squeeze=False)
    colors = {
        "mock (direct)": "#999999",
        "hydra-native": "#1f77b4",
        "hydra-python": "#aec7e8",
        "claude-code-router": "#ff7f0e",
        "litellm": "#d62728",
    }
    for ax, (phase, mode, key, title) in zip(axes.flat, panels, strict=False):
        lines = [x for x in summary if x["phase"] == phase and x["mode"] == mode]
        conc = sorted({x["concurrency"] for x in lines})
        servers = [s for s in SERVER_ORDER if any(x["server"] == s for x in lines)]
        if key.startswith("added"):
            servers = [s for s in servers if s != "mock (direct)"]
        width = 0.8 / max(1, len(servers))
        positive: list[float] = []
        for i, server in enumerate(servers):
            values = []
            for c in conc:
                line = next(
                    (x for x in lines if x["server"] == server and x["concurrency"] == c), None
                )
                v = line.get(key, line.get("requests_per_s")) if line else None
                if v is not None and key.startswith("added"):
                    v = max(v * 1e3, 0.01)  # ms; a log axis needs > 0
                values.append(v if v else 0.0)
            xs = [j + (i - (len(servers) - 1) / 2) * width for j in range(len(conc))]
            ax.bar(xs, values, width, label=server, color=colors.get(server))
            positive += [v for v in values if v > 0]
            for x, v in zip(xs, values, strict=True):
                if v:
                    ax.text(x, v, _fmt_rate(v), ha="center", va="bottom", fontsize=6, rotation=90)
        ax.set_yscale("log")
        if positive:
            bottom = min(positive) / 3
            ax.set_ylim(bottom, max(positive) * 8)
            for i, server in enumerate(servers):  # mark bars too small to draw (0 req/s)
                for j, c in enumerate(conc):
                    line = next(
                        (x for x in lines if x["server"] == server and x["concurrency"] == c),
                        None,
                    )
                    if line is not None and not line.get(key):
                        # No bar: 0 streams/s, or no number at all (no event got through).
                        mark = "0" if key == "throughput_per_s" and line.get(key) == 0 else "n/a"
                        x = j + (i - (len(servers) - 1) / 2) * width
                        ax.text(x, bottom, mark, ha="center", va="bottom", fontsize=6)
        ax.set_xticks(range(len(conc)), [f"c={c}" for c in conc])
        ax.set_title(title, fontsize=10)
        ax.grid(axis="y", which="both", alpha=0.2)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    handles, labels = [], []
    for ax in axes.flat:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    meta = data["meta"]
    fig.suptitle(
        f"hydra-proxy load benchmark, {meta['date'][:10]}, {meta['machine']['nproc']} cores "
        f"{meta['machine']['cpu']}; log scales",
        fontsize=10,
        y=0.995,
    )
    fig.legend(
        handles,
        labels,
        loc="upper center",
        ncol=len(labels),
        fontsize=9,
        bbox_to_anchor=(0.5, 0.975),
    )
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


if __name__ == "__main__":
    source = Path(sys.argv[1])
    loaded = orjson.loads(source.read_bytes())
    print(markdown(loaded))
    plot(loaded, source.with_suffix(".png"))
