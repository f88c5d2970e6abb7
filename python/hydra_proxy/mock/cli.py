"""``hydra-proxy mock``: its flags and entry point (cli.py lists it among the subcommands)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..config.check import is_loopback
from .options import BENCH_MODES, DEFAULT_HOST, DEFAULT_PORT, MAX_BODY_BYTES, MockOptions
from .replay import ReplayCache, ReplayError
from .server import serve

DESCRIPTION = "An LLM API server for demos, tests and benchmarks."

_EPILOG = """\
Per-request overrides (headers): x-mock-chunks, x-mock-chunk-size, x-mock-delay-ms,
x-mock-jitter-ms, x-mock-ttfb-ms, x-mock-split-bytes, x-mock-error-rate,
x-mock-turn (one scripted turn as JSON), x-mock-replay (a fixture name).
Control API: GET|DELETE /_mock/requests, GET|POST|DELETE /_mock/script.
Bench modes: --mode instant (whole stream written at once) and
--mode paced (= --chunks 64 --delay-ms 20); explicit flags win.
"""


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return value


def _millis(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 600_000:
        raise argparse.ArgumentTypeError("must be between 0 and 600000 ms")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError("must be between 0 and 1")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``hydra-proxy mock`` flags to ``parser``."""
    if parser.epilog is None:
        parser.epilog = _EPILOG
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
    net = parser.add_argument_group("listening")
    net.add_argument("--host", default=DEFAULT_HOST, help="address to bind (default: %(default)s)")
    net.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default: %(default)s)")
    net.add_argument(
        "--workers",
        type=_positive_int,
        default=1,
        help="granian worker processes; each has its own recordings and script "
        "(default: %(default)s)",
    )
    net.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="granian log level (default: %(default)s)",
    )

    reply = parser.add_argument_group("replies")
    reply.add_argument(
        "--mode",
        choices=sorted(BENCH_MODES),
        default=None,
        help="benchmark preset: instant (chunks 16, no delay) or paced (chunks 64, delay 20 ms)",
    )
    reply.add_argument(
        "--chunks",
        type=_non_negative_int,
        default=None,
        help="content deltas in the canned reply (default: 16)",
    )
    reply.add_argument(
        "--chunk-size",
        type=_positive_int,
        default=8,
        help="characters per text/reasoning/arguments delta (default: %(default)s)",
    )
    reply.add_argument(
        "--replay",
        type=Path,
        default=None,
        metavar="FILE",
        help="default reply: replay this recorded fixture (.sse byte-for-byte, "
        ".jsonl re-framed, .json status+body); a name is looked up in --fixtures",
    )
    reply.add_argument(
        "--prefix-cache",
        action="store_true",
        help="report cached input as a prompt cache by prefix would (per prompt_cache_key)",
    )
    reply.add_argument(
        "--fixtures",
        type=Path,
        default=None,
        metavar="DIR",
        help='directory that scripted {"replay": name} turns resolve in',
    )

    pace = parser.add_argument_group("latency and faults")
    pace.add_argument(
        "--delay-ms",
        type=_millis,
        default=None,
        help="pause between streamed events (default: 0, all at once)",
    )
    pace.add_argument(
        "--jitter-ms",
        type=_millis,
        default=0.0,
        help="random extra pause in [0, N) per event (default: 0)",
    )
    pace.add_argument(
        "--ttfb-ms",
        type=_millis,
        default=0.0,
        help="pause before the response headers (default: 0)",
    )
    pace.add_argument(
        "--split-bytes",
        type=_non_negative_int,
        default=0,
        help="re-cut every body into pieces of N bytes (default: 0, off)",
    )
    pace.add_argument(
        "--error-rate",
        type=_fraction,
        default=0.0,
        help="fraction of model requests answered 529 overloaded (Anthropic) "
        "or 503 (OpenAI) (default: 0)",
    )

    limits = parser.add_argument_group("limits")
    limits.add_argument(
        "--refuse-param",
        action="append",
        default=[],
        metavar="FIELD",
        help="refuse Chat requests carrying this top-level field with OpenAI's 400 for an "
        "unsupported parameter (repeatable), as a model that does not take it does",
    )
    limits.add_argument(
        "--max-output",
        type=_positive_int,
        default=None,
        help="refuse Chat requests asking more output tokens than this with a 400, as a "
        "model with that output limit does",
    )
    limits.add_argument(
        "--max-body-bytes",
        type=_positive_int,
        default=MAX_BODY_BYTES,
        help="larger request bodies get 413 (default: %(default)s)",
    )
    limits.add_argument(
        "--max-recorded",
        type=_non_negative_int,
        default=1000,
        help="requests kept for GET /_mock/requests; 0 disables recording (default: %(default)s)",
    )


def options_from_args(args: argparse.Namespace) -> MockOptions:
    """The :class:`MockOptions` the parsed flags describe (raises ValueError when invalid)."""
    chunks, delay = BENCH_MODES[args.mode] if args.mode else BENCH_MODES["instant"]
    fixtures: Path | None = args.fixtures
    if fixtures is not None and not fixtures.is_dir():
        raise ValueError(f"--fixtures {fixtures}: not a directory")
    replay: Path | None = args.replay
    if replay is not None and not replay.is_file():
        try:
            replay = ReplayCache(fixtures).resolve(str(replay))
        except ReplayError as exc:
            raise ValueError(f"--replay {args.replay}: no such file ({exc})") from None
    return MockOptions(
        chunks=chunks if args.chunks is None else args.chunks,
        chunk_size=args.chunk_size,
        delay_ms=delay if args.delay_ms is None else args.delay_ms,
        jitter_ms=args.jitter_ms,
        ttfb_ms=args.ttfb_ms,
        split_bytes=args.split_bytes,
        error_rate=args.error_rate,
        replay=replay.resolve() if replay is not None else None,
        fixtures=fixtures.resolve() if fixtures is not None else None,
        max_recorded=args.max_recorded,
        max_body_bytes=args.max_body_bytes,
        prefix_cache=args.prefix_cache,
        refuse_params=tuple(args.refuse_param),
        max_output=args.max_output,
    )


def run(args: argparse.Namespace) -> int:
    """Run ``hydra-proxy mock`` with parsed flags; blocks until interrupted."""
    try:
        options = options_from_args(args)
    except ValueError as exc:
        print(f"hydra-proxy mock: {exc}", file=sys.stderr)
        return 2
    if not is_loopback(args.host):
        print(
            f"hydra-proxy mock: warning: listening on {args.host}; the mock has no "
            "authentication and its control API (/_mock/*) is open to anyone who can reach it",
            file=sys.stderr,
        )
    serve(options, host=args.host, port=args.port, workers=args.workers, log_level=args.log_level)
    return 0
