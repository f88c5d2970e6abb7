"""Turn a pytest-benchmark JSON file into the Markdown table of docs/BENCHMARKS.md.

python -m pytest benches --benchmark-only --benchmark-json=benches/results/micro.json
python benches/report.py benches/results/micro.json > benches/results/micro.md
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from typing import Any


def _rate(n: float, seconds: float) -> str:
    value = n / seconds
    if value >= 1e6:
        return f"{value / 1e6:.2f} M"
    return f"{value / 1e3:.0f} k"


def table(data: dict[str, Any]) -> str:
    runs: dict[tuple[str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    baselines: dict[str, dict[str, float]] = defaultdict(dict)
    for bench in data["benchmarks"]:
        info = bench["extra_info"]
        median = bench["stats"]["median"]
        if info["chunking"] == "-":
            baselines[info["stream"]][info["impl"]] = median
        else:
            runs[(info["stream"], info["chunking"])][info["impl"]] = {"median": median, **info}
    # With a previous build in the same run (HYDRA_BENCH_PREVIOUS), two more columns.
    previous = any("native-previous" in impls for impls in runs.values())
    extra_head = " previous native events/s | native / previous |" if previous else ""
    rows = [
        "| stream | chunking | native events/s | Python events/s | native / Python | native MB/s | orjson.loads only, events/s |"
        + extra_head,
        "|---|---|---:|---:|---:|---:|---:|" + ("---:|---:|" if previous else ""),
    ]
    for (stream, chunking), impls in runs.items():
        native, python = impls.get("native"), impls.get("python")
        if not native or not python:
            continue
        events = native["upstream_events"]
        loads = baselines[stream].get("orjson.loads")
        extra = ""
        if previous and "native-previous" in impls:
            before = impls["native-previous"]["median"]
            extra = f" {_rate(events, before)} | {before / native['median']:.3f} |"
        rows.append(
            f"| {stream} | {chunking} | {_rate(events, native['median'])} | {_rate(events, python['median'])} "
            f"| {python['median'] / native['median']:.1f}x | {native['upstream_bytes'] / native['median'] / 1e6:.0f} "
            f"| {_rate(events, loads) if loads else '-'} |" + extra
        )
    machine = data.get("machine_info", {})
    rows.append("")
    rows.append(
        f"Measured {data.get('datetime', '')[:10]} on {machine.get('cpu', {}).get('brand_raw', 'unknown CPU')}, "
        f"Python {machine.get('python_version', '?')}; medians of pytest-benchmark rounds."
    )
    return "\n".join(rows)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        results = json.load(f)
    # Keep the committed results small: the per-round timings are not needed for the table.
    for bench in results["benchmarks"]:
        bench["stats"].pop("data", None)
    with open(sys.argv[1], "w") as f:
        json.dump(results, f, indent=1)
    print(table(results))
