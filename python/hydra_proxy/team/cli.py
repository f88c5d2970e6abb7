"""``hydra-proxy keys``: create, list, revoke, rotate and change named keys (and set a
team's limits) in the key store beside the usage ledger. A secret is printed once, by
``create`` and ``rotate``; nothing else ever prints one."""

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
from ..usage.pricing import usd
from . import alerts, manage
from .period import PERIODS
from .store import KeyStore, KeyStoreError, open_key_store

DESCRIPTION = "Named client keys: one per member, with budgets, rate limits and model rights."


def _limits(p: argparse.ArgumentParser, *, team: bool = True) -> None:
    if team:
        p.add_argument("--team", help="the member's team (its limits hold for all its keys)")
    p.add_argument("--budget", help="USD per period (none: no budget)")
    p.add_argument("--period", choices=PERIODS, help="budget period, UTC (default month)")
    p.add_argument("--rpm", help="requests per minute (none: unbounded)")
    p.add_argument("--tpm", help="tokens per minute, settled from real usage")
    if team:
        p.add_argument("--streams", help="concurrent streams")
        p.add_argument("--models", help="comma-separated globs the key may use, e.g. 'claude-*'")
        p.add_argument("--expires", help="a date (UTC), e.g. 2027-01-31; 'never' clears it")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ledger",
        help=f"the ledger's database: sqlite:PATH or postgresql://... (default: ${LEDGER_ENV} "
        f"or sqlite:{DEFAULT_SQLITE_PATH})",
    )
    actions = p.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="a new key; prints its secret once")
    create.add_argument("name")
    _limits(create)
    listing = actions.add_parser("list", help="every key: limits, spend this period, last use")
    revoke = actions.add_parser("revoke", help="refuse the key from its next request on")
    revoke.add_argument("name")
    rotate = actions.add_parser("rotate", help="a new secret; the old one works a while longer")
    rotate.add_argument("name")
    rotate.add_argument(
        "--grace", type=float, default=manage.DEFAULT_GRACE / 3600,
        help="hours the old secret keeps working (default 24)",
    )  # fmt: skip
    change = actions.add_parser("set", help="change a key's limits ('none' clears one)")
    change.add_argument("name")
    _limits(change)
    team = actions.add_parser("team", help="set a team's limits")
    team.add_argument("name")
    _limits(team, team=False)
    alert = actions.add_parser(
        "alert", help="a webhook posted when a key's (or --team's) spend reaches a share of "
        "its budget, once per threshold and period",
    )  # fmt: skip
    alert.add_argument("name", help="the key's name (with --team: the team's)")
    alert.add_argument("--team", action="store_true", help="NAME is a team")
    alert.add_argument("--at", help="percentages of the budget, e.g. 50,80,100")
    alert.add_argument("--webhook", help="the URL the alert is POSTed to (JSON)")
    alert.add_argument(
        "--format", choices=alerts.FORMATS, default="json",
        help="the body: hydra-proxy's JSON, or Slack's {\"text\": ...}",
    )  # fmt: skip
    alert.add_argument("--off", action="store_true", help="remove the alert")
    for sub in (create, listing, revoke, rotate, change, team, alert):
        sub.add_argument("--json", action="store_true", help="print JSON")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hydra-proxy keys", description=DESCRIPTION)
    add_arguments(p)
    return p


def _options(args: argparse.Namespace, names: Sequence[str]) -> dict[str, Any]:
    return {n: getattr(args, n, None) for n in names}


def _money(value: float | None) -> str:
    return "-" if value is None else usd(value)


def _table(doc: dict[str, Any]) -> str:
    head = ("name", "team", "state", "budget", "spent", "period", "rpm", "tpm", "streams",
            "models", "expires", "last used")  # fmt: skip
    rows = [head]
    for k in doc["keys"]:
        spent = _money(k["spent_usd"]) + (
            f" +{k['unpriced_requests']} unpriced" if k["unpriced_requests"] else ""
        )
        if k.get("refused_requests"):  # refusals are no spend: counted apart
            spent += f" ({k['refused_requests']} refused)"
        rows.append((
            k["name"], k["team"] or "-", k["state"], _money(k["budget_usd"]), spent, k["period"],
            str(k["rpm"] or "-"), str(k["tpm"] or "-"), str(k["streams"] or "-"),
            ",".join(k["models"]) or "*", k["expires"] or "-", k["last_used"] or "never",
        ))  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for t in doc["teams"]:
        lines.append(
            f"team {t['name']}: budget {_money(t['budget_usd'])} per {t['period']}, spent "
            f"{_money(t['spent_usd'])}, rpm {t['rpm'] or '-'}, tpm {t['tpm'] or '-'}"
        )
    return "\n".join(lines) + "\n"


def _alert(store: KeyStore, args: argparse.Namespace) -> dict[str, Any]:
    kind = "team" if args.team else "key"
    if args.off:
        return manage.set_alert(store, kind, args.name)
    if not args.at or not args.webhook:
        raise alerts.AlertError("an alert needs --at (e.g. 50,80,100) and --webhook URL, or --off")
    return manage.set_alert(store, kind, args.name, args.at, args.webhook, args.format)


def _alert_text(out: dict[str, Any]) -> str:
    who = f"{out['kind']} {out['name']!r}"
    alert = out["alert"]
    if alert is None:
        return f"{who}: no spend alert\n"
    at = ", ".join(f"{t}%" for t in alert["thresholds"])
    return f"{who}: alert at {at} of its budget, to {alert['webhook']} ({alert['format']})\n"


def run(args: argparse.Namespace) -> int:
    url = args.ledger or os.environ.get(LEDGER_ENV) or f"sqlite:{DEFAULT_SQLITE_PATH}"
    store = open_key_store(url)
    now = time.time()
    out: dict[str, Any]
    try:
        if args.action == "create":
            key, secret = manage.create(store, args.name, now, **_options(args, manage.CHANGES))
            out = {**manage.listing(store, now, key.name)["keys"][0], "secret": secret}
            text = (
                f"created key {key.name!r}. Its secret, shown this once only:\n\n  {secret}\n\n"
                "Give it to the member (x-api-key, or Authorization: Bearer).\n"
            )
        elif args.action == "list":
            out = manage.listing(store, now)
            text = _table(out) if out["keys"] or out["teams"] else "no keys\n"
        elif args.action == "revoke":
            out = manage.revoke(store, args.name, now).public()
            text = f"revoked key {args.name!r}: refused from its next request on\n"
        elif args.action == "rotate":
            key, secret = manage.rotate(store, args.name, now, args.grace * 3600)
            out = {**key.public(), "secret": secret}
            text = (
                f"rotated key {key.name!r}. The new secret, shown this once only:\n\n  {secret}"
                f"\n\nThe old one works until {out['old_secret_until'] or 'now (no grace)'}.\n"
            )
        elif args.action == "alert":
            out = _alert(store, args)
            text = _alert_text(out)
        elif args.action == "set":
            manage.update(store, args.name, **_options(args, manage.CHANGES))
            out = manage.listing(store, now, args.name)["keys"][0]
            text = _table({"keys": [out], "teams": []})
        else:
            limits = _options(args, ("budget", "period", "rpm", "tpm"))
            out = manage.set_team(store, args.name, **limits).public()
            text = f"team {args.name!r}: {orjson.dumps(out).decode()}\n"
    except (manage.KeyChangeError, alerts.AlertError) as exc:
        print(f"hydra-proxy keys: {exc}", file=sys.stderr)
        return 2
    except KeyStoreError as exc:
        print(f"hydra-proxy keys: {exc}", file=sys.stderr)
        return 1
    finally:
        store.close()
    return write_result(out, text, as_json=args.json)


def main(argv: Sequence[str] | None = None) -> int:
    return run(parser().parse_args(argv))
