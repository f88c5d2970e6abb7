"""``hydra-proxy audit``: the audit log of admin changes, newest first, as a table or JSON.
It reads only: the log has no command that changes or removes an entry."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import orjson

from ..usage.backends import DEFAULT_SQLITE_PATH
from ..usage.cli import LEDGER_ENV, write_result
from ..usage.report import parse_since
from . import audit
from .store import KeyStoreError, open_key_store, store_exists

DESCRIPTION = "Who changed which key, team or setting, and when: the admin changes, newest first."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ledger",
        help=f"the ledger's database: sqlite:PATH or postgresql://... (default: ${LEDGER_ENV} "
        f"or sqlite:{DEFAULT_SQLITE_PATH})",
    )
    p.add_argument("--since", help="30m, 24h, 7d, 2w or a date (UTC) like 2026-11-01")
    p.add_argument("--subject", help="one subject only, e.g. key:alice or team:core")
    p.add_argument(
        "--limit", type=int, default=audit.DEFAULT_LIMIT,
        help=f"at most this many entries (default {audit.DEFAULT_LIMIT}, at most "
        f"{audit.MAX_LIMIT})",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print JSON")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hydra-proxy audit", description=DESCRIPTION)
    add_arguments(p)
    return p


def _change(before: Any, after: Any) -> str:
    """What an entry changed, field by field (the whole value when not two objects)."""
    if isinstance(before, dict) and isinstance(after, dict):
        fields = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        return ", ".join(
            f"{k}: {orjson.dumps(before.get(k)).decode()} -> {orjson.dumps(after.get(k)).decode()}"
            for k in fields
        )
    return orjson.dumps(after if after is not None else before).decode()


def _table(entries: list[dict[str, Any]]) -> str:
    head = ("time", "actor", "action", "subject", "change")
    rows = [head] + [
        (e["time"], e["actor"], e["action"], e["subject"], _change(e["before"], e["after"]))
        for e in entries
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head) - 1)]
    lines = [
        "  ".join([*(c.ljust(w) for c, w in zip(r, widths, strict=False)), r[-1]]).rstrip()
        for r in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in [*widths, len(head[-1])]))
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    url = args.ledger or os.environ.get(LEDGER_ENV) or f"sqlite:{DEFAULT_SQLITE_PATH}"
    try:
        since = parse_since(args.since, time.time()) if args.since else None
    except ValueError as exc:
        print(f"hydra-proxy audit: {exc}", file=sys.stderr)
        return 2
    if not 1 <= args.limit <= audit.MAX_LIMIT:
        print(f"hydra-proxy audit: --limit: from 1 to {audit.MAX_LIMIT}", file=sys.stderr)
        return 2
    found: list[dict[str, Any]] = []
    if store_exists(url):  # reading creates no database
        store = open_key_store(url)
        try:
            found = [e.public() for e in audit.entries(store, since, args.subject, args.limit)]
        except KeyStoreError as exc:
            print(f"hydra-proxy audit: {exc}", file=sys.stderr)
            return 1
        finally:
            store.close()
    text = _table(found) if found else "no audit entries\n"
    return write_result({"entries": found}, text, as_json=args.json)


def main(argv: Sequence[str] | None = None) -> int:
    return run(parser().parse_args(argv))
