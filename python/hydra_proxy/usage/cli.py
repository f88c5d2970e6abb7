"""``hydra-proxy usage``: the usage report from the ledger, as a table or JSON."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import orjson

from .backends import DEFAULT_SQLITE_PATH, open_ledger
from .ledger import LedgerError
from .report import GROUPINGS, aggregate, parse_since, render_table, total

__all__ = ["LEDGER_ENV", "main", "parser", "run"]

LEDGER_ENV = "HYDRA_USAGE_LEDGER"


DESCRIPTION = "What the proxy's requests used and cost, from the usage ledger."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ledger",
        default=None,
        help=f"sqlite:PATH or postgresql://... (default: ${LEDGER_ENV} or sqlite:{DEFAULT_SQLITE_PATH})",
    )
    p.add_argument("--since", help="30m, 24h, 7d, 2w or a date (UTC) like 2026-11-01")
    p.add_argument("--by", choices=GROUPINGS, default="model", help="group rows by (default model)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hydra-proxy usage", description=DESCRIPTION)
    add_arguments(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    return run(parser().parse_args(argv))


def run(args: argparse.Namespace) -> int:
    try:
        since = parse_since(args.since, time.time()) if args.since else None
    except ValueError as exc:
        print(f"hydra-proxy usage: {exc}", file=sys.stderr)
        return 2
    # Resolved here, not as the argparse default: --help must not print a database password.
    url = args.ledger or os.environ.get(LEDGER_ENV) or f"sqlite:{DEFAULT_SQLITE_PATH}"
    try:
        ledger = open_ledger(url, start=False)  # a reader: creates nothing
    except LedgerError as exc:
        print(f"hydra-proxy usage: {exc}", file=sys.stderr)
        return 1
    try:
        records = ledger.query(since=since)
    except LedgerError as exc:
        print(f"hydra-proxy usage: {exc}", file=sys.stderr)
        return 1
    rows = aggregate(records, args.by)
    totals = total(records)
    doc = {
        "by": args.by,
        "since": since,
        "rows": [r.as_json() for r in rows],
        "total": totals.as_json(),
    }
    if records:
        text = render_table(rows, args.by, totals)
    else:
        text = "no usage recorded" + (" in that period" if since is not None else "") + "\n"
    return write_result(doc, text, as_json=args.json)


def write_result(doc: Any, text: str, *, as_json: bool) -> int:
    """A command's result on stdout: `doc` as indented JSON, or `text` for a person."""
    sys.stdout.write(
        orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n" if as_json else text
    )
    return 0
