"""Long sessions: what a request's size costs before its first byte.

    .venv/bin/python benches/long_session.py            # 51 KB, 605 KB, 2.5 MB
    .venv/bin/python benches/long_session.py --profile  # and py-spy on the largest
    .venv/bin/python benches/long_session.py --quick    # small counts (the test's smoke)

A Claude Code session resends the whole conversation on every turn, so late in a long
session each request is megabytes of tool turns. The recorded Claude Code request
(tests/fixtures/claude-code/request-after-tool-result.json, 51 KB: system prompt, 12 tools,
one Bash turn) is grown with tool turns that look like a session reading and editing this
repository: the assistant says what it does and calls Read (or Edit), and the tool_result
carries the file as Claude Code's Read tool returns it (numbered lines), the repository's
own sources in a fixed order; the cache breakpoint moves to the last turn, as Claude Code
places it. Anthropic client, OpenAI Chat upstream (the embedded mock, instant), c=1.

Two measurements, in one run:

- End to end: the added time to first byte (through ``hydra-proxy serve`` minus straight
  at the mock, the same bytes both ways, the mock reading the Chat translation behind the
  proxy), per size, and its slope per MB between the smallest and largest.
- Where it goes: each step of the request path timed in this process on the same bodies
  (the fastest of many runs): the JSON parse (orjson) and the depth check, the route decision, the
  translation to Chat and its serialisation, and the input-token estimate, cold (a new
  session: nothing cached) and warm (the cache of a session that sent the same turns
  before, what the end-to-end loop sees). The rest of the added TTFB is I/O: reading the
  body from the client, writing it upstream, the second hop, the event loop.

``--profile`` also samples the proxy's worker with py-spy while it serves the largest body
in a loop and sums the samples by step. Writes benches/results/long_session.json and .md.
Reports only; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

BENCHES = Path(__file__).resolve().parent
REPO = BENCHES.parent
sys.path[:0] = [str(REPO / "python"), str(BENCHES)]

import loadlib_proc as proc  # noqa: E402
import profilelib  # noqa: E402
from loadlib_servers import MODES, Hydra, Mock, request_headers  # noqa: E402

BASE_REQUEST = REPO / "tests" / "fixtures" / "claude-code" / "request-after-tool-result.json"
MODE = MODES["anthropic-in"]
SIZES = (51_000, 605_000, 2_500_000)
TURNS = 12  # the turns of a session each size's client sends in turn (then from the first)
# The files a session would read, in a fixed order (the repository's own sources).
CORPUS_GLOBS = ("python/hydra_proxy/**/*.py", "rust/src/**/*.rs", "docs/*.md")


# -- the grown request -----------------------------------------------------------------------


def corpus() -> list[tuple[str, str]]:
    files: list[tuple[str, str]] = []
    for pattern in CORPUS_GLOBS:
        for path in sorted(REPO.glob(pattern)):
            text = path.read_text(encoding="utf-8")
            if text.strip():
                files.append((str(path.relative_to(REPO)), text))
    return files


def read_result(text: str) -> str:
    """A file as Claude Code's Read tool returns it: numbered lines."""
    return "\n".join(f"{i:>6}\t{line}" for i, line in enumerate(text.split("\n"), 1))


def tool_turns(index: int, path: str, text: str) -> list[dict[str, Any]]:
    """One assistant tool call and its result: Read, every fourth an Edit after it."""
    call_id = f"toolu_01{index:022d}"
    where = f"/home/dev/hydra-proxy/{path}"
    if index % 4 == 3:
        lines = text.split("\n")
        old = "\n".join(lines[: min(6, len(lines))])
        call = {"type": "tool_use", "id": call_id, "name": "Edit",
                "input": {"file_path": where, "old_string": old,
                          "new_string": old.replace("def ", "def  ", 1)}}  # fmt: skip
        result = f"The file {where} has been updated. Here's the result of running `cat -n`:\n"
        result += read_result("\n".join(lines[:12]))
        say = f"I'll tidy the top of {path}."
    else:
        call = {"type": "tool_use", "id": call_id, "name": "Read", "input": {"file_path": where}}
        result = read_result(text)
        say = f"Let me read {path} to see how it works."
    return [
        {"role": "assistant", "content": [{"type": "text", "text": say}, call]},
        {
            "role": "user",
            "content": [
                {
                    "tool_use_id": call_id,
                    "type": "tool_result",
                    "content": result,
                    "is_error": False,
                }
            ],
        },
    ]


def grown_request(size: int, files: list[tuple[str, str]]) -> dict[str, Any]:
    """The recorded request with tool turns appended until its body reaches `size` bytes
    (the recorded one alone when it is already that large)."""
    request: dict[str, Any] = orjson.loads(BASE_REQUEST.read_bytes())["body"]
    request["model"] = MODE.model
    request["stream"] = True
    messages: list[dict[str, Any]] = request["messages"]
    current = len(orjson.dumps(request))
    index = 0
    while current < size:
        path, text = files[index % len(files)]
        turns = tool_turns(index, path, text)
        added = sum(len(orjson.dumps(t)) + 1 for t in turns)
        if current + added > size:  # the last file cut to fit, as a partial Read would be
            room = max(200, size - current - 400)
            turns = tool_turns(index, path, text[: room * 7 // 8])
            added = sum(len(orjson.dumps(t)) + 1 for t in turns)
        messages += turns
        current += added
        index += 1
    for message in messages:  # one cache breakpoint, on the last turn (as Claude Code does)
        for block in message["content"] if isinstance(message["content"], list) else ():
            block.pop("cache_control", None)
    messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return request


def next_turns(request: dict[str, Any], files: list[tuple[str, str]], count: int) -> list[bytes]:
    """The bodies of `count` successive requests of the session from `request` on: each one
    tool turn longer, its breakpoint moved to the last turn (as Claude Code sends them)."""
    request = orjson.loads(orjson.dumps(request))
    messages: list[dict[str, Any]] = request["messages"]
    bodies = []
    for index in range(count):
        if index:
            messages[-1]["content"][-1].pop("cache_control", None)
            path, text = files[(index * 7) % len(files)]
            messages += tool_turns(10_000 + index, path, text[:12_000])
            messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        bodies.append(orjson.dumps(request))
    return bodies


# -- in-process steps -----------------------------------------------------------------------


def fastest_s(fn: Callable[[], object], reps: int, budget_s: float) -> float:
    """The fastest of `reps` runs: a step's own cost, the least disturbed by other load
    on a shared machine (the end-to-end numbers are medians)."""
    times: list[float] = []
    deadline = time.perf_counter() + budget_s
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if time.perf_counter() > deadline and len(times) >= 3:
            break
    return min(times)


def bench_context() -> tuple[Any, dict[str, Any]]:
    """The worker and request scope of a `serve` with the bench's config."""
    from hydra_proxy.config import load
    from hydra_proxy.server.transport.worker import Worker

    workdir = Path(tempfile.mkdtemp(prefix="long-session-"))
    try:
        config = workdir / "hydra.toml"
        config.write_text(
            '[providers.mock_openai]\nkind = "chat"\nbase_url = "http://127.0.0.1:9/v1"\n'
            f'api_key_optional = true\n[[routes]]\nmatch = "{MODE.model}"\n'
            'provider = "mock_openai"\n'
        )
        settings = load({"config": str(config), "implementation": "native"}, {})
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    worker = Worker.create(settings)
    headers = [(k.lower().encode(), v.encode()) for k, v in request_headers("anthropic").items()]
    scope = {"type": "http", "method": "POST", "path": MODE.path, "headers": headers,
             "query_string": b""}  # fmt: skip
    return worker, scope


def read_request(worker: Any, scope: dict[str, Any], body: bytes) -> tuple[Any, Any]:
    """The Messages ingress on `body` as the server runs it: parsed (reusing the session's
    previous turns when `scope` names a session), checked, read and routed. Returns the
    exchange and the ClientRequest."""
    from hydra_proxy.server.checks.limits import parse_request, require_model
    from hydra_proxy.server.ingress import anthropic
    from hydra_proxy.server.pipeline.exchange import Exchange
    from hydra_proxy.server.pipeline.routing import decide_route

    async def never(*_: Any) -> Any:
        raise AssertionError("the in-process steps do no I/O")

    exchange = Exchange(worker, scope, never, never)
    exchange.account("anthropic")
    parsed, kept = parse_request(body, 128, worker.turns, exchange.session)
    exchange.keep(kept)
    request = anthropic.read(exchange, require_model(parsed), body)
    exchange.route.decided(decide_route(worker, request.traits))
    return exchange, request


def steps(session: list[bytes], reps: int, budget_s: float) -> dict[str, float]:
    """Seconds per step of the request path on the session's first body, in this process
    (the server's own functions, on the settings a `serve` with the bench config has), and
    the whole ingress on its next turns, as its session's (reusing the turn before)."""
    body = session[0]
    from hydra_proxy import tokens
    from hydra_proxy.json_depth import nested_deeper_than
    from hydra_proxy.server.pipeline.upstream_kinds import WRITERS, BodyFor

    worker, scope = bench_context()
    request = orjson.loads(body)
    exchange, routed = read_request(worker, scope, body)
    attempt = exchange.route.decision.attempts[0]
    chat_body = WRITERS["chat"](request, BodyFor(attempt, worker.signing_key, True, None, None))[1]

    def plan(decision: Any, link: Any) -> Any:
        return routed.plan(decision, link)

    def whole(raw: bytes, scope: dict[str, Any] = scope) -> None:
        fresh_exchange, fresh = read_request(worker, scope, raw)
        decision = fresh_exchange.route.decision
        built = fresh.plan(decision, decision.attempts[0])
        assert built.transducer is not None
        built.transducer()

    def cold_estimate() -> None:
        tokens._cache.clear()
        tokens.estimate_input_tokens(orjson.loads(body))

    def warm_estimate() -> None:
        tokens.estimate_input_tokens(orjson.loads(body))

    def loads() -> None:
        orjson.loads(body)

    parse_cost = fastest_s(loads, reps, budget_s)
    tokens.estimate_input_tokens(request)  # the warm cache holds this session's texts
    out = {
        "parse (orjson.loads)": parse_cost,
        "depth check": fastest_s(lambda: nested_deeper_than(request, 128), reps, budget_s),
        "parse + route (ingress plan)": fastest_s(lambda: read_request(worker, scope, body), reps, budget_s),
        "translate to Chat (writer)": fastest_s(lambda: WRITERS["chat"](request, BodyFor(attempt, worker.signing_key, True, None, None)), reps, budget_s),
        "serialise (orjson.dumps)": fastest_s(lambda: orjson.dumps(chat_body), reps, budget_s),
        "plan the attempt (translate + serialise)": fastest_s(lambda: plan(exchange.route.decision, attempt), reps, budget_s),
        # The estimate runs on a fresh parse each request: its own time is minus the parse.
        "token estimate, warm": fastest_s(warm_estimate, reps, budget_s) - parse_cost,
        "token estimate, cold": fastest_s(cold_estimate, max(3, reps // 4), budget_s) - parse_cost,
        # What a request costs in all before its upstream request is sent, and the
        # transducer (with the estimate) after: the whole ingress on a fresh parse.
        "whole ingress (parse .. transducer), warm": fastest_s(lambda: whole(body), reps, budget_s),
    }  # fmt: skip
    named = {**scope, "headers": [*scope["headers"], (b"x-claude-code-session-id", b"steps")]}
    turns = itertools.cycle(session)
    out["whole ingress, the session's next turn"] = fastest_s(
        lambda: whole(next(turns), named), reps, budget_s
    )
    return out


# -- end to end ------------------------------------------------------------------------------


SESSION_HEADER = {"x-claude-code-session-id": "long-session-bench"}


def ttfb_jobs(
    bodies: dict[int, list[Path]], proxy: Hydra, mock: Mock, warmup_s: float, window_s: float
) -> tuple[list[dict[str, Any]], list[tuple[int, str]]]:
    """Per size: the session's turns in order, straight at the mock (their Chat twins),
    through the proxy as requests of no session (each parsed whole), and as the turns of
    one session (each reusing the turn before)."""
    jobs: list[dict[str, Any]] = []
    meta: list[tuple[int, str]] = []
    for size, paths in bodies.items():
        for target, url, protocol, pids in (
            ("direct", mock.url + MODE.upstream_path, "chat", [mock.pid]),
            ("proxy", proxy.url + MODE.path, "anthropic", [proxy.pid]),
            ("proxy, session", proxy.url + MODE.path, "anthropic", [proxy.pid]),
        ):
            body_paths = (
                paths if target != "direct" else [p.with_suffix(".chat.json") for p in paths]
            )
            headers = request_headers(protocol)
            if target == "proxy, session":
                headers = {**headers, **SESSION_HEADER}
            jobs.append({
                "kind": "throughput", "label": f"{size} {target}", "url": url,
                "protocol": protocol, "body": None, "body_paths": [str(p) for p in body_paths],
                "headers": headers, "concurrency": 1,
                "warmup_s": warmup_s, "window_s": window_s, "drain_s": 2.0, "settle_s": 10.0,
                "max_requests": 1_000_000, "pause_s": 0.2, "request_timeout_s": 60.0,
                "pids": pids, "upstream_pids": [] if target == "direct" else [mock.pid],
            })  # fmt: skip
            meta.append((size, target))
    return jobs, meta


def run_client(jobs: list[dict[str, Any]], budget_s: float) -> list[dict[str, Any]]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(BENCHES), str(REPO / "python"), env.get("PYTHONPATH")])
    )
    out = subprocess.run([sys.executable, str(BENCHES / "loadlib_client.py")],
                         input=orjson.dumps(jobs), capture_output=True, env=env,
                         timeout=budget_s, check=False)  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(out.stderr.decode(errors="replace")[-3000:])
    results: list[dict[str, Any]] = orjson.loads(out.stdout)
    return results


def chat_twin(body: bytes) -> bytes:
    """The Chat body the proxy sends upstream for `body` (what the direct run posts, so the
    mock reads the same bytes both ways)."""
    worker, scope = bench_context()
    exchange, routed = read_request(worker, scope, body)
    upstream: bytes = routed.plan(exchange.route.decision, exchange.route.decision.attempts[0]).body
    return upstream


def profile(proxy: Hydra, body_paths: list[Path], seconds: float) -> dict[str, Any]:
    """py-spy on the proxy's worker while a client sends a session's turns in a loop (as
    that session's: each reuses the turn before); samples summed by step."""
    if profilelib.py_spy() is None:
        return {"skipped": "py-spy is not installed (the bench extra)"}
    workers = [p for p in proc.tree(proxy.pid) if p != proxy.pid] or [proxy.pid]
    raw = Path(tempfile.mkdtemp(prefix="long-session-spy-")) / "pyspy.txt"
    job = {"kind": "throughput", "label": "profile", "url": proxy.url + MODE.path,
           "protocol": "anthropic", "body": None, "body_paths": [str(p) for p in body_paths],
           "headers": {**request_headers("anthropic"), **SESSION_HEADER}, "concurrency": 1,
           "warmup_s": 0.5,
           "window_s": seconds + 1.5, "drain_s": 2.0, "settle_s": 0.0, "max_requests": 100_000,
           "pause_s": 0.0, "request_timeout_s": 60.0, "pids": [], "upstream_pids": []}  # fmt: skip
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BENCHES), str(REPO / "python")]))
    client = subprocess.Popen([sys.executable, str(BENCHES / "loadlib_client.py")],
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env)  # fmt: skip
    assert client.stdin is not None
    client.stdin.write(orjson.dumps([job]))
    client.stdin.close()
    time.sleep(1.0)
    spied = profilelib.record(workers[0], seconds, raw)
    client.wait(timeout=seconds + 60)
    if "skipped" in spied:
        return spied
    summary = profilelib.collapse(raw.read_text(), STEP_FRAMES, OTHER)
    shutil.rmtree(raw.parent, ignore_errors=True)
    return summary


# Steps by a function on the sample's stack (the first row that matches wins).
STEP_FRAMES: profilelib.Steps = (
    ("token estimate", ("estimate_input_tokens", "count_tokens", "text_tokens")),
    ("translate to Chat", ("write_request", "chat_request_from_messages")),
    (
        "parse and route (ingress plan)",
        (
            "parse_object",
            "parse_request",
            "previous_turn.py",
            "request_traits",
            "ingress/anthropic.py",
        ),
    ),
    ("read the client's body", ("read_json_body", "read_body")),
    ("send upstream, read its reply", ("http1.py", "upstream.py")),
    ("relay the stream", ("relay.py",)),
)
OTHER = "other (event loop, granian, ASGI, accounting)"


# -- the run ---------------------------------------------------------------------------------


def run(sizes: tuple[int, ...], quick: bool, with_profile: bool, out: Path) -> dict[str, Any]:
    files = corpus()
    tmp = Path(tempfile.mkdtemp(prefix="long-session-bodies-"))
    bodies: dict[int, list[Path]] = {}
    in_process: dict[int, dict[str, float]] = {}
    try:
        for size in sizes:
            session = next_turns(grown_request(size, files), files, TURNS)
            bodies[size] = []
            for turn, body in enumerate(session):
                path = tmp / f"request-{size}-{turn}.json"
                path.write_bytes(body)
                path.with_suffix(".chat.json").write_bytes(chat_twin(body))
                bodies[size].append(path)
            in_process[size] = steps(session, 5 if quick else 30, 2.0 if quick else 5.0)
        mock = Mock("--mode", "instant", "--chunks", "16")
        mock.start()
        proxy = Hydra(mock.url, "native")
        try:
            proxy.start()
            warm = 0.2 if quick else 1.0
            window = 0.5 if quick else 6.0
            jobs, meta = ttfb_jobs(bodies, proxy, mock, warm, window)
            results = run_client(jobs, sum(j["warmup_s"] + j["window_s"] + 20 for j in jobs) + 60)
            spied = (
                profile(proxy, bodies[max(sizes)], 3.0 if quick else 10.0) if with_profile else None
            )
        finally:
            proxy.stop()
            mock.stop()
        rows = []
        for size in sizes:
            cells = {t: r for (s, t), r in zip(meta, results, strict=True) if s == size}
            direct, proxied, named = cells["direct"], cells["proxy"], cells["proxy, session"]

            def cpu_ms(cell: dict[str, Any]) -> float | None:
                done = cell["completed"]
                return cell["server_cpu_s"] * 1e3 / done if done else None

            rows.append({
                "size_target": size, "request_bytes": proxied.get("request_bytes"),
                "upstream_bytes": direct.get("request_bytes"),
                "direct_ttfb_p50_ms": direct["ttfb_s"]["p50"] * 1e3,
                "proxy_ttfb_p50_ms": proxied["ttfb_s"]["p50"] * 1e3,
                "added_ttfb_p50_ms": (proxied["ttfb_s"]["p50"] - direct["ttfb_s"]["p50"]) * 1e3,
                "session_ttfb_p50_ms": named["ttfb_s"]["p50"] * 1e3,
                "session_added_ttfb_p50_ms": (named["ttfb_s"]["p50"] - direct["ttfb_s"]["p50"]) * 1e3,
                "requests": proxied["completed"], "session_requests": named["completed"],
                "direct_requests": direct["completed"],
                "failed": proxied["failed"] + direct["failed"] + named["failed"],
                "incomplete": proxied["incomplete"] + direct["incomplete"] + named["incomplete"],
                "proxy_cpu_ms_per_request": cpu_ms(proxied),
                "session_cpu_ms_per_request": cpu_ms(named),
                "steps_ms": {k: v * 1e3 for k, v in in_process[size].items()},
            })  # fmt: skip
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    small, large = rows[0], rows[-1]
    mb = (large["request_bytes"] - small["request_bytes"]) / 1e6
    slope = {
        "added_ttfb_ms_per_mb": (large["added_ttfb_p50_ms"] - small["added_ttfb_p50_ms"]) / mb
        if mb > 0
        else None,
        "session_added_ttfb_ms_per_mb": (
            large["session_added_ttfb_p50_ms"] - small["session_added_ttfb_p50_ms"]
        )
        / mb
        if mb > 0
        else None,
        "steps_ms_per_mb": {
            k: (large["steps_ms"][k] - small["steps_ms"][k]) / mb for k in large["steps_ms"]
        }
        if mb > 0
        else {},
    }
    return {"rows": rows, "per_mb": slope, "profile": spied}


def markdown(data: dict[str, Any]) -> str:
    meta = data["meta"]
    rows = data["rows"]
    lines = [
        "# Long sessions: added TTFB against the request's size",
        "",
        f"{meta['date']}, `{meta['command']}`, {meta['nproc']} cores, load average "
        f"{' '.join(meta['loadavg_start'])} -> {' '.join(meta['loadavg_end'])}. The recorded "
        "Claude Code request grown with Read/Edit tool turns; Anthropic client, OpenAI Chat "
        "upstream (mock, instant), c=1, native transducers, one worker. Each size's client "
        f"sends the {TURNS} turns of a session in order (each one tool turn longer, the "
        "breakpoint on the last), then from the first again: as requests of no session "
        "(each parsed, translated and counted whole), and as the turns of one session "
        "(`x-claude-code-session-id`: each reuses what the turn before it parsed, wrote and "
        "counted).",
        "",
        "| request | upstream body | TTFB direct p50 | no session: added p50 | CPU "
        "| the session's next turn: added p50 | CPU | requests |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f} ms"

    for r in rows:
        lines.append(
            f"| {r['request_bytes'] / 1e3:,.0f} KB | {r['upstream_bytes'] / 1e3:,.0f} KB | "
            f"{r['direct_ttfb_p50_ms']:.2f} ms | **{r['added_ttfb_p50_ms']:+.2f} ms** | "
            f"{ms(r['proxy_cpu_ms_per_request'])} | **{r['session_added_ttfb_p50_ms']:+.2f} ms** | "
            f"{ms(r['session_cpu_ms_per_request'])} | {r['requests']} / {r['session_requests']} |"
        )
    per_mb = data["per_mb"]
    slope = per_mb.get("added_ttfb_ms_per_mb")
    session_slope = per_mb.get("session_added_ttfb_ms_per_mb")
    lines += [
        "",
        "Added TTFB per MB (largest minus smallest): no session "
        f"**{'-' if slope is None else f'{slope:.2f}'} ms/MB**; the session's next turn "
        f"**{'-' if session_slope is None else f'{session_slope:.2f}'} ms/MB**.",
        "",
        "Each step of the request path in process, ms, the fastest of up to 30 runs (and per MB):",
        "",
        "| step | "
        + " | ".join(f"{r['request_bytes'] / 1e3:,.0f} KB" for r in rows)
        + " | per MB |",
        "|---|" + "---:|" * (len(rows) + 1),
    ]
    for step in rows[0]["steps_ms"]:
        cells = " | ".join(f"{r['steps_ms'][step]:.2f}" for r in rows)
        lines.append(f"| {step} | {cells} | {per_mb['steps_ms_per_mb'].get(step, 0):.2f} |")
    spied = data.get("profile")
    if spied:
        lines += ["", "py-spy on the worker serving the largest size's session in a loop:", ""]
        if "skipped" in spied:
            lines.append(f"(skipped: {spied['skipped']})")
        else:
            lines += ["| step (by the frames on the stack) | share of samples |", "|---|---:|"]
            lines += [f"| {k} | {v:.1%} |" for k, v in spied["by_step"].items()]
            lines += ["", "| leaf function | share of samples |", "|---|---:|"]
            lines += [f"| `{k}` | {v:.1%} |" for k, v in spied["top_leaves"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--quick", action="store_true", help="small counts (smoke test)")
    p.add_argument("--profile", action="store_true", help="py-spy on the largest body")
    p.add_argument(
        "--sizes", help="comma-separated body sizes in bytes (default 51000,605000,2500000)"
    )
    p.add_argument("--out", type=Path, default=BENCHES / "results", help="where the report goes")
    args = p.parse_args(argv)
    sizes = SIZES
    if args.sizes:
        sizes = tuple(sorted(max(1, min(int(s), 30_000_000)) for s in args.sizes.split(",")))
    meta: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": "python benches/long_session.py" + ("" if argv is not None else " " + " ".join(sys.argv[1:])).rstrip(),
        "nproc": os.cpu_count(),
        "loadavg_start": Path("/proc/loadavg").read_text().split()[:3],
    }  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {"meta": meta, **run(sizes, args.quick, args.profile, args.out)}
    meta["loadavg_end"] = Path("/proc/loadavg").read_text().split()[:3]
    (args.out / "long_session.json").write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    (args.out / "long_session.md").write_text(markdown(data))
    print(markdown(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
